//! `$regexMatch`, `$regexFind`, `$regexFindAll`: `{input, regex, options}`, where `regex` is a
//! string or a BSON regular expression (whose own flags conflict with `options`: 51107).
//! A match is `{match, idx, captures}`, `idx` counted in code points, an unset group `null`.
//!
//! `$regexFindAll` reads its input once (each match's `idx` counts on from the previous one),
//! and its matches are units of work for the operation's interrupt and count towards the size
//! of the array they build.
//!
//! A constant `regex`/`options` pair is compiled once, when the expression is compiled (as
//! mongod does when it optimizes the pipeline), so a bad pattern fails before any document.

use super::super::super::{Compiler, Context, Node, Operator, SizeTally, Value};
use super::super::op;
use crate::error::{Error, ErrorCode, Result};
use crate::query::regex::Regex;
use bson::{doc, Bson};

/// mongod's `BufferMaxSize`: what `$regexFindAll`'s matches may add up to.
const MAX_FIND_ALL_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Match,
    Find,
    FindAll,
}

#[derive(Debug)]
struct RegexOp {
    name: &'static str,
    mode: Mode,
    input: Node,
    regex: Node,
    options: Option<Node>,
    /// The compiled pattern when `regex` and `options` are constants.
    constant: Option<Prepared>,
}

/// A compiled pattern, or `None` when `regex` was nullish (the result is then nullish).
#[derive(Debug, Clone)]
struct Prepared(Option<Regex>);

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let (name, mode) = match name {
        "$regexFind" => ("$regexFind", Mode::Find),
        "$regexFindAll" => ("$regexFindAll", Mode::FindAll),
        _ => ("$regexMatch", Mode::Match),
    };
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            ErrorCode::Location51103,
            format!(
                "{name} expects an object of named arguments but found: {}",
                crate::query::path::type_name(arg)
            ),
        ));
    };
    let (mut input, mut regex, mut options) = (None, None, None);
    for (k, v) in d {
        let slot = match k.as_str() {
            "input" => &mut input,
            "regex" => &mut regex,
            "options" => &mut options,
            other => {
                return Err(Error::new(
                    ErrorCode::Location31024,
                    format!("{name} found an unknown argument: {other}"),
                ))
            }
        };
        *slot = Some(c.compile(v)?);
    }
    let input = input.ok_or_else(|| {
        Error::new(
            ErrorCode::Location31022,
            format!("{name} requires 'input' parameter"),
        )
    })?;
    let regex = regex.ok_or_else(|| {
        Error::new(
            ErrorCode::Location31023,
            format!("{name} requires 'regex' parameter"),
        )
    })?;
    let constant = match (regex.as_const(), options.as_ref().map(Node::as_const)) {
        (Some(r), None) => Some(prepare(name, &Some(r.clone()), &None)?),
        (Some(r), Some(Some(o))) => Some(prepare(name, &Some(r.clone()), &Some(o.clone()))?),
        _ => None,
    };
    Ok(op(RegexOp {
        name,
        mode,
        input,
        regex,
        options,
        constant,
    }))
}

/// mongod's `_extractRegexAndOptions` and `_compile`.
fn prepare(name: &str, regex: &Value, options: &Value) -> Result<Prepared> {
    let options = match options {
        None | Some(Bson::Null | Bson::Undefined) => None,
        Some(Bson::String(s)) => Some(s.as_str()),
        Some(_) => {
            return Err(Error::new(
                ErrorCode::Location51106,
                format!("{name} needs 'options' to be of type string"),
            ))
        }
    };
    let (pattern, options) = match regex {
        None | Some(Bson::Null | Bson::Undefined) => (None, options),
        Some(Bson::String(s)) => (Some(s.as_str()), options),
        Some(Bson::RegularExpression(r)) => {
            if options.is_some() && !r.options.is_empty() {
                return Err(Error::new(
                    ErrorCode::Location51107,
                    format!(
                        "{name}: found regex option(s) specified in both 'regex' and 'option' \
                         fields"
                    ),
                ));
            }
            let flags = (!r.options.is_empty()).then_some(r.options.as_str());
            (Some(r.pattern.as_str()), options.or(flags))
        }
        Some(_) => {
            return Err(Error::new(
                ErrorCode::Location51105,
                format!("{name} needs 'regex' to be of type string or regex"),
            ))
        }
    };
    if pattern.is_some_and(|p| p.contains('\0')) {
        return Err(Error::new(
            ErrorCode::Location51109,
            format!("{name}: regular expression cannot contain an embedded null byte"),
        ));
    }
    if options.is_some_and(|o| o.contains('\0')) {
        return Err(Error::new(
            ErrorCode::Location51110,
            format!("{name}: regular expression options cannot contain an embedded null byte"),
        ));
    }
    let Some(pattern) = pattern else {
        return Ok(Prepared(None));
    };
    let options = options.unwrap_or("");
    let op: &'static str = match name {
        "$regexFind" => "$regexFind",
        "$regexFindAll" => "$regexFindAll",
        _ => "$regexMatch",
    };
    // The engine checks the option letters (51108) and the pattern (51111) with the errors
    // naming the operator.
    let regex = Regex::for_operator(op, pattern, options)?;
    Ok(Prepared(Some(regex)))
}

/// A match: byte offsets of the whole match and of each capture group (`None`: unset).
struct Found {
    start: usize,
    end: usize,
    captures: Vec<Option<(usize, usize)>>,
}

/// The first match of `regex` in `text` at or after byte `start`.
fn find_at(regex: &Regex, text: &str, start: usize, _name: &str) -> Result<Option<Found>> {
    Ok(regex.find_at(text, start)?.map(|m| Found {
        start: m.start,
        end: m.end,
        captures: m.captures,
    }))
}

/// Renames the matcher's own errors (which name `$regex`) after this operator.
fn in_operator(name: &str, e: Error) -> Error {
    match e.code {
        ErrorCode::Location51156 => Error::new(e.code, e.message.replacen("$regex", name, 1)),
        _ => e,
    }
}

/// The match document of `found`, whose start is code point `idx` of `text`.
fn match_document(text: &str, found: &Found, idx: usize) -> Bson {
    let slice = |(s, e): (usize, usize)| text.get(s..e).unwrap_or_default().to_owned();
    let captures: Vec<Bson> = found
        .captures
        .iter()
        .map(|c| c.map_or(Bson::Null, |range| Bson::String(slice(range))))
        .collect();
    Bson::Document(doc! {
        "match": slice((found.start, found.end)),
        "idx": i32::try_from(idx).unwrap_or(i32::MAX),
        "captures": captures,
    })
}

impl RegexOp {
    fn find_all(&self, regex: &Regex, text: &str) -> Result<Value> {
        let mut out = Vec::new();
        let mut built = SizeTally::array();
        let mut total = 0usize;
        let mut at = 0usize;
        // Code points before byte `counted`: each match's `idx` counts on from the last one,
        // so the whole call reads the text once.
        let (mut counted, mut idx) = (0usize, 0usize);
        loop {
            let Some(found) = find_at(regex, text, at, self.name)? else {
                break;
            };
            idx += text
                .get(counted..found.start)
                .map_or(0, |between| between.chars().count());
            counted = found.start;
            let size = 64
                + (found.end - found.start)
                + found
                    .captures
                    .iter()
                    .map(|c| c.map_or(0, |(s, e)| e.saturating_sub(s)))
                    .sum::<usize>();
            total = total.saturating_add(size);
            if total > MAX_FIND_ALL_BYTES {
                return Err(Error::new(
                    ErrorCode::Location51151,
                    format!(
                        "{}: the size of buffer to store output exceeded the 64MB limit",
                        self.name
                    ),
                ));
            }
            let document = match_document(text, &found, idx);
            built.add_element(&document)?;
            out.push(document);
            // An empty match moves on one code point; otherwise matches never overlap.
            at = if found.end == found.start {
                found.end
                    + text
                        .get(found.end..)
                        .and_then(|rest| rest.chars().next())
                        .map_or(1, char::len_utf8)
            } else {
                found.end
            };
            if at >= text.len() {
                break;
            }
        }
        Ok(Some(Bson::Array(out)))
    }
}

impl Operator for RegexOp {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let input = self.input.eval(cx)?;
        let text = match &input {
            None | Some(Bson::Null | Bson::Undefined) => None,
            Some(Bson::String(s)) => Some(s.as_str()),
            Some(_) => {
                return Err(Error::new(
                    ErrorCode::Location51104,
                    format!("{} needs 'input' to be of type string", self.name),
                ))
            }
        };
        let prepared = match &self.constant {
            Some(p) => p.clone(),
            None => {
                let regex = self.regex.eval(cx)?;
                let options = match &self.options {
                    Some(node) => node.eval(cx)?,
                    None => None,
                };
                prepare(self.name, &regex, &options)?
            }
        };
        let (Some(regex), Some(text)) = (prepared.0, text) else {
            return Ok(Some(match self.mode {
                Mode::Match => Bson::Boolean(false),
                Mode::Find => Bson::Null,
                Mode::FindAll => Bson::Array(Vec::new()),
            }));
        };
        match self.mode {
            Mode::Match => regex
                .is_match(text)
                .map(|m| Some(Bson::Boolean(m)))
                .map_err(|e| in_operator(self.name, e)),
            Mode::Find => Ok(Some(find_at(&regex, text, 0, self.name)?.map_or(
                Bson::Null,
                |found| {
                    let idx = text.get(..found.start).map_or(0, |b| b.chars().count());
                    match_document(text, &found, idx)
                },
            ))),
            Mode::FindAll => self.find_all(&regex, text),
        }
    }
}
