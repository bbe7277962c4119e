//! The errors Cosmos rules answer with: Cosmos's code and text first, unchanged (code that
//! matches on them keeps working), then one line that names the rule and the flag that relaxes
//! it.

use super::Rule;
use crate::error::{Error, ErrorCode};

/// `code` with Cosmos's `text`, and the line naming `rule`.
pub fn refuse(rule: Rule, code: ErrorCode, text: &str) -> Error {
    Error::new(code, format!("{text}\n{}", rule_line(rule)))
}

/// An error the Cosmos service (not its MongoDB front end) raises, in the shape the front end
/// wraps it in: `Error=<code>, Details='Response status code does not indicate success:
/// <status>; Substatus: <n>; ActivityId: <guid>; Reason: (Message: {"Errors":["<text>"]} …)'`.
pub fn refuse_from_service(rule: Rule, code: ErrorCode, failure: ServiceFailure<'_>) -> Error {
    Error::new(
        code,
        format!("{}\n{}", failure.details(code), rule_line(rule)),
    )
}

/// What the service answered: its HTTP status, substatus and message.
#[derive(Debug, Clone, Copy)]
pub struct ServiceFailure<'a> {
    /// `BadRequest (400)`, `TooManyRequests (429)`, …
    pub status: &'a str,
    pub substatus: u32,
    pub message: &'a str,
}

impl ServiceFailure<'_> {
    /// A request the service refused as malformed (400, substatus 0).
    pub fn bad_request(message: &str) -> ServiceFailure<'_> {
        ServiceFailure {
            status: "BadRequest (400)",
            substatus: 0,
            message,
        }
    }

    fn details(&self, code: ErrorCode) -> String {
        let activity = bson::Uuid::new();
        let message = serde_json::json!({ "Errors": [self.message] });
        format!(
            "Error={}, Details='Response status code does not indicate success: {}; Substatus: {}; ActivityId: {activity}; Reason: (Message: {message}\nActivityId: {activity});'",
            code.code(),
            self.status,
            self.substatus,
        )
    }
}

/// The line every refusal ends with.
pub fn rule_line(rule: Rule) -> String {
    format!("[mayfly --compat cosmos: rule {rule}; --cosmos-allow {rule} turns it off]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_keeps_cosmos_text_first() {
        let err = refuse(
            Rule::UniqueIndexOnPopulated,
            ErrorCode::CannotCreateIndex,
            "Cannot create unique index when collection contains documents",
        );
        assert_eq!(err.code.code(), 67);
        assert_eq!(
            err.message,
            "Cannot create unique index when collection contains documents\n[mayfly --compat cosmos: rule unique-index-on-populated; --cosmos-allow unique-index-on-populated turns it off]"
        );
    }

    #[test]
    fn a_service_refusal_has_the_wrapped_shape() {
        let err = refuse_from_service(
            Rule::SortWithoutIndex,
            ErrorCode::BadValue,
            ServiceFailure::bad_request(
                "The index path corresponding to the specified order-by item is excluded.",
            ),
        );
        let (details, line) = err.message.rsplit_once('\n').unwrap();
        assert!(details.starts_with(
            "Error=2, Details='Response status code does not indicate success: BadRequest (400); Substatus: 0; ActivityId: "
        ));
        assert!(details.contains(
            r#"Reason: (Message: {"Errors":["The index path corresponding to the specified order-by item is excluded."]}"#
        ));
        assert!(details.ends_with(");'"), "{details}");
        assert_eq!(line, rule_line(Rule::SortWithoutIndex));
    }
}
