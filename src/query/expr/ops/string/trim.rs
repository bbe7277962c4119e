//! `$trim`, `$ltrim`, `$rtrim`: `{input, chars}`, trimming whole code points; without
//! `chars`, mongod's whitespace set (NUL, space, tab, LF, VT, FF, CR, NBSP, U+1680 and
//! U+2000–U+200A).

use super::super::super::value::{nullish, render, type_name};
use super::super::super::{Compiler, Context, Node, Operator, Value};
use super::super::op;
use crate::error::{Error, ErrorCode, Result};
use bson::Bson;

const WHITESPACE: &[char] = &[
    '\0', ' ', '\t', '\n', '\u{0B}', '\u{0C}', '\r', '\u{A0}', '\u{1680}', '\u{2000}', '\u{2001}',
    '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}', '\u{2006}', '\u{2007}', '\u{2008}', '\u{2009}',
    '\u{200A}',
];

#[derive(Debug)]
struct Trim {
    name: &'static str,
    left: bool,
    right: bool,
    input: Node,
    chars: Option<Node>,
}

pub(super) fn compile(name: &str, arg: &Bson, c: &mut Compiler<'_>) -> Result<Node> {
    let (name, left, right) = match name {
        "$ltrim" => ("$ltrim", true, false),
        "$rtrim" => ("$rtrim", false, true),
        _ => ("$trim", true, true),
    };
    let Bson::Document(d) = arg else {
        return Err(Error::new(
            ErrorCode::Location50696,
            format!(
                "{name} only supports an object as an argument, found {}",
                crate::query::path::type_name(arg)
            ),
        ));
    };
    let (mut input, mut chars) = (None, None);
    for (k, v) in d {
        match k.as_str() {
            "input" => input = Some(c.compile(v)?),
            "chars" => chars = Some(c.compile(v)?),
            other => {
                return Err(Error::new(
                    ErrorCode::Location50694,
                    format!("{name} found an unknown argument: {other}"),
                ))
            }
        }
    }
    let input = input.ok_or_else(|| {
        Error::new(
            ErrorCode::Location50695,
            format!("{name} requires an 'input' field"),
        )
    })?;
    Ok(op(Trim {
        name,
        left,
        right,
        input,
        chars,
    }))
}

impl Trim {
    fn string(&self, value: Value, what: &str, code: ErrorCode) -> Result<Option<String>> {
        match value {
            v if nullish(&v) => Ok(None),
            Some(Bson::String(s)) => Ok(Some(s)),
            other => Err(Error::new(
                code,
                format!(
                    "{} requires {what} to be a string, got {} (of type {}) instead.",
                    self.name,
                    render(&other),
                    type_name(&other)
                ),
            )),
        }
    }
}

impl Operator for Trim {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        let input = self.input.eval(cx)?;
        let Some(input) = self.string(input, "its input", ErrorCode::Location50699)? else {
            return Ok(Some(Bson::Null));
        };
        let set: Vec<char> = match &self.chars {
            None => WHITESPACE.to_vec(),
            Some(node) => {
                let chars = node.eval(cx)?;
                match self.string(chars, "'chars'", ErrorCode::Location50700)? {
                    Some(s) => s.chars().collect(),
                    None => return Ok(Some(Bson::Null)),
                }
            }
        };
        let mut out = input.as_str();
        if self.left {
            out = out.trim_start_matches(set.as_slice());
        }
        if self.right {
            out = out.trim_end_matches(set.as_slice());
        }
        Ok(Some(Bson::String(out.to_owned())))
    }
}
