//! `$listLocalSessions`: which of the server's logical sessions to list — the caller's own
//! (`{}`), everybody's (`{allUsers: true}`) or named users' (`{users: [{user, db}]}`). Parsed
//! here; the command layer, which knows the sessions, produces the documents.

use crate::error::{Error, ErrorCode, Result};
use crate::query::path::type_name;
use bson::Bson;

const STAGE: &str = "$listLocalSessions";

/// Whose sessions to list.
#[derive(Debug, Clone, PartialEq)]
pub enum ListLocalSessions {
    /// The sessions of the user running the pipeline.
    Own,
    AllUsers,
    /// `(user, db)` pairs.
    Users(Vec<(String, String)>),
}

impl ListLocalSessions {
    pub fn parse(arg: &Bson) -> Result<ListLocalSessions> {
        let Bson::Document(spec) = arg else {
            return Err(wrong_type("", arg, "object"));
        };
        let mut all_users = false;
        let mut users = None;
        for (field, value) in spec {
            match (field.as_str(), value) {
                ("allUsers", Bson::Boolean(b)) => all_users = *b,
                ("allUsers", other) => return Err(wrong_type(".allUsers", other, "bool")),
                ("users", Bson::Array(items)) => users = Some(parse_users(items)?),
                ("users", other) => return Err(wrong_type(".users", other, "array")),
                (other, _) => {
                    return Err(Error::new(
                        ErrorCode::IDLUnknownField,
                        format!("BSON field '{STAGE}.{other}' is an unknown field."),
                    ))
                }
            }
        }
        match (all_users, users) {
            (true, Some(users)) if !users.is_empty() => Err(Error::new(
                ErrorCode::UnsupportedFormat,
                format!("{STAGE} may not specify {{allUsers:true}} and {{users:[...]}} at the same time"),
            )),
            (true, _) => Ok(ListLocalSessions::AllUsers),
            (false, Some(users)) => Ok(ListLocalSessions::Users(users)),
            (false, None) => Ok(ListLocalSessions::Own),
        }
    }
}

fn wrong_type(path: &str, value: &Bson, expected: &str) -> Error {
    Error::type_mismatch(format!(
        "BSON field '{STAGE}{path}' is the wrong type '{}', expected type '{expected}'",
        type_name(value)
    ))
}

/// `[{user, db}, ...]` (mongod's `ListSessionsUser`).
fn parse_users(items: &[Bson]) -> Result<Vec<(String, String)>> {
    items
        .iter()
        .map(|item| {
            let Bson::Document(d) = item else {
                return Err(wrong_type(".users", item, "object"));
            };
            let field = |name: &str| match d.get(name) {
                Some(Bson::String(s)) => Ok(s.clone()),
                Some(other) => Err(wrong_type(&format!(".users.{name}"), other, "string")),
                None => Err(Error::new(
                    ErrorCode::Location40414,
                    format!("BSON field 'ListSessionsUser.{name}' is missing but a required field"),
                )),
            };
            if let Some(other) = d.keys().find(|k| *k != "user" && *k != "db") {
                return Err(Error::new(
                    ErrorCode::IDLUnknownField,
                    format!("BSON field 'ListSessionsUser.{other}' is an unknown field."),
                ));
            }
            Ok((field("user")?, field("db")?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn options_select_whose_sessions_are_listed() {
        let parse = |spec: Bson| ListLocalSessions::parse(&spec);
        assert_eq!(parse(doc! {}.into()).unwrap(), ListLocalSessions::Own);
        assert_eq!(
            parse(doc! {"allUsers": true}.into()).unwrap(),
            ListLocalSessions::AllUsers
        );
        assert_eq!(
            parse(doc! {"users": [{"user": "a", "db": "admin"}]}.into()).unwrap(),
            ListLocalSessions::Users(vec![("a".into(), "admin".into())])
        );
        for (spec, code) in [
            (Bson::Int32(1), ErrorCode::TypeMismatch),
            (doc! {"allUsers": 1}.into(), ErrorCode::TypeMismatch),
            (doc! {"x": 1}.into(), ErrorCode::IDLUnknownField),
            (
                doc! {"users": [{"user": "a"}]}.into(),
                ErrorCode::Location40414,
            ),
            (
                doc! {"allUsers": true, "users": [{"user": "a", "db": "b"}]}.into(),
                ErrorCode::UnsupportedFormat,
            ),
        ] {
            assert_eq!(parse(spec.clone()).unwrap_err().code, code, "{spec}");
        }
    }
}
