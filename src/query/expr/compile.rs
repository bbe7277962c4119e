//! Compiling expressions: operands, field paths, variables and their scopes.
//!
//! Variables resolve at compile time. The command's `let` variables and the built-in constants
//! (`$$NOW`, `$$DESCEND`/`$$PRUNE`/`$$KEEP`) become [`Node::Const`]; `$$ROOT` and an unbound
//! `$$CURRENT` become paths from the document; a variable bound by an operator gets a slot
//! number, unique within the expression, so nested and sibling bindings never share one.

use super::field::{field_path, split_variable};
use super::value::Comparator;
use super::{ops, Base, Expression, Node};
use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, DateTime, Document};
use std::sync::Arc;

/// How deep an expression may nest; the BSON decoder already stops input at 200 levels.
pub const MAX_EXPRESSION_DEPTH: usize = 200;

/// The variables visible to an expression before any operator binds one: the command's `let`
/// variables (already values), `$$NOW`, and how values compare.
#[derive(Debug, Clone, Default)]
pub struct Variables {
    user: Vec<(String, Bson)>,
    now: Option<DateTime>,
    comparator: Comparator,
}

impl Variables {
    /// No user variables; `$$NOW` is `now`.
    pub fn new(now: DateTime) -> Variables {
        Variables {
            user: Vec::new(),
            now: Some(now),
            comparator: Comparator::default(),
        }
    }

    /// Adds the command's `let` option: each variable's expression is evaluated once, in order,
    /// against an empty document, and may use the variables defined before it and `$$NOW`.
    pub fn with_let(mut self, spec: Option<&Document>) -> Result<Variables> {
        let empty = Document::new();
        for (name, value) in spec.into_iter().flatten() {
            validate_user_write(name)?;
            if name == "CURRENT" {
                return Err(Error::new(
                    ErrorCode::Location16867,
                    "'CURRENT' starts with an invalid character for a user variable name",
                ));
            }
            let value = Expression::compile(value, &self)?
                .eval(&empty)?
                .unwrap_or(Bson::Null);
            self.user.retain(|(n, _)| n != name);
            self.user.push((name.clone(), value));
        }
        Ok(self)
    }

    /// Makes `name` visible as the constant `value` (`$lookup`'s `let`, per outer document).
    pub fn with_value(mut self, name: &str, value: Bson) -> Variables {
        self.user.retain(|(n, _)| n != name);
        self.user.push((name.to_owned(), value));
        self
    }

    /// Compares through `comparator` (a collation) instead of the binary order.
    pub fn with_comparator(mut self, comparator: Comparator) -> Variables {
        self.comparator = comparator;
        self
    }

    /// How values compare (the operation's collation).
    pub fn comparator(&self) -> &Comparator {
        &self.comparator
    }

    /// The operation's collation (`None`: simple).
    pub fn collation(&self) -> Option<&crate::query::collation::Collation> {
        self.comparator.collation()
    }

    /// The user variables, in definition order.
    pub fn user(&self) -> &[(String, Bson)] {
        &self.user
    }

    pub fn now(&self) -> Option<DateTime> {
        self.now
    }
}

/// Compiles one expression; operators use it to compile their operands and bind variables.
pub struct Compiler<'v> {
    vars: &'v Variables,
    /// Operator-bound names and their slots, innermost last.
    scope: Vec<(String, usize)>,
    slots: usize,
    depth: usize,
}

impl<'v> Compiler<'v> {
    pub fn new(vars: &'v Variables) -> Compiler<'v> {
        Compiler {
            vars,
            scope: Vec::new(),
            slots: 0,
            depth: 0,
        }
    }

    /// The finished expression for `node`.
    pub fn finish(self, node: Node) -> Expression {
        Expression::from_parts(node, self.slots)
    }

    /// How values compare in this expression (the operation's collation).
    pub fn comparator(&self) -> Comparator {
        self.vars.comparator.clone()
    }

    /// `$$NOW`'s value.
    pub fn now(&self) -> Option<DateTime> {
        self.vars.now
    }

    /// Compiles an operand.
    pub fn compile(&mut self, spec: &Bson) -> Result<Node> {
        if self.depth >= MAX_EXPRESSION_DEPTH {
            return Err(Error::new(
                ErrorCode::Overflow,
                format!("expression nesting exceeds the limit of {MAX_EXPRESSION_DEPTH} levels"),
            ));
        }
        self.depth += 1;
        let node = self.compile_value(spec);
        self.depth -= 1;
        node
    }

    fn compile_value(&mut self, spec: &Bson) -> Result<Node> {
        match spec {
            Bson::String(s) if s.starts_with("$$") => self.variable(s),
            Bson::String(s) if s.starts_with('$') => {
                Ok(Node::Path(self.current(), field_path(s)?.into()))
            }
            Bson::Array(items) => Ok(Node::Array(
                items
                    .iter()
                    .map(|v| self.compile(v))
                    .collect::<Result<_>>()?,
            )),
            Bson::Document(d) => self.compile_document(d),
            other => Ok(Node::Const(other.clone())),
        }
    }

    fn compile_document(&mut self, d: &Document) -> Result<Node> {
        if let Some(op) = d.keys().next().filter(|k| k.starts_with('$')) {
            if d.len() != 1 {
                return Err(Error::new(
                    ErrorCode::Location15983,
                    format!(
                        "an expression specification must contain exactly one field, the name of \
                         the expression. Found {} fields in {}",
                        d.len(),
                        crate::query::path::render_document(d)
                    ),
                ));
            }
            let arg = d.get(op).unwrap_or(&Bson::Null);
            return ops::compile(op, arg, self);
        }
        let mut fields = Vec::with_capacity(d.len());
        for (k, v) in d {
            validate_field_name(k)?;
            fields.push((k.clone(), self.compile(v)?));
        }
        Ok(Node::Doc(fields))
    }

    /// What `$$CURRENT` (and so `"$a"`) means here.
    fn current(&self) -> Base {
        self.lookup("CURRENT").map_or(Base::Root, Base::Slot)
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, slot)| *slot)
    }

    fn variable(&mut self, s: &str) -> Result<Node> {
        let (name, rest) = split_variable(s)?;
        validate_user_read(name)?;
        let path: Arc<[String]> = match rest {
            Some(rest) => field_path(rest)?.into(),
            None => Arc::from(Vec::new()),
        };
        let from_const = |value: &Bson| match path.is_empty() {
            true => Node::Const(value.clone()),
            false => super::field::get_in_value(value, &path).map_or(Node::Missing, Node::Const),
        };
        if let Some(slot) = self.lookup(name) {
            return Ok(Node::Path(Base::Slot(slot), path));
        }
        if let Some((_, value)) = self.vars.user.iter().rev().find(|(n, _)| n == name) {
            return Ok(from_const(value));
        }
        match name {
            "ROOT" => Ok(Node::Path(Base::Root, path)),
            "CURRENT" => Ok(Node::Path(self.current(), path)),
            "REMOVE" => Ok(Node::Missing),
            "NOW" => match self.vars.now {
                Some(now) => Ok(from_const(&Bson::DateTime(now))),
                None => Err(Error::internal("$$NOW has no value in this context")),
            },
            "DESCEND" => Ok(Node::Const(Bson::from("descend"))),
            "PRUNE" => Ok(Node::Const(Bson::from("prune"))),
            "KEEP" => Ok(Node::Const(Bson::from("keep"))),
            "CLUSTER_TIME" => Err(Error::new(
                ErrorCode::Location51144,
                "Builtin variable '$$CLUSTER_TIME' is not available",
            )),
            "USER_ROLES" | "SEARCH_META" => Err(Error::new(
                ErrorCode::NotImplemented,
                format!("the variable '$${name}' is not supported by this server"),
            )),
            _ => Err(Error::new(
                ErrorCode::Location17276,
                format!("Use of undefined variable: {name}"),
            )),
        }
    }

    /// Binds `name` (checked as mongod checks a user-written variable) for the operands compiled
    /// until the matching [`Compiler::unbind`]; returns its slot.
    pub fn bind(&mut self, name: &str) -> Result<usize> {
        validate_user_write(name)?;
        let slot = self.slots;
        self.slots += 1;
        self.scope.push((name.to_owned(), slot));
        Ok(slot)
    }

    /// Ends the innermost `count` bindings.
    pub fn unbind(&mut self, count: usize) {
        let keep = self.scope.len().saturating_sub(count);
        self.scope.truncate(keep);
    }

    /// How many slots the expression uses so far.
    pub fn slots(&self) -> usize {
        self.slots
    }
}

/// A field name of an expression object: no `.`, no leading `$`.
pub fn validate_field_name(k: &str) -> Result<()> {
    if k.contains('.') {
        return Err(Error::new(
            ErrorCode::Location16412,
            format!("FieldPath field names may not contain '.'. Consider using $getField or $setField. (field: {k})"),
        ));
    }
    if k.starts_with('$') {
        return Err(Error::new(
            ErrorCode::Location16410,
            format!("FieldPath field names may not start with '$'. Consider using $getField or $setField. (field: {k})"),
        ));
    }
    if k.is_empty() {
        return Err(Error::new(
            ErrorCode::Location16410,
            "FieldPath field names may not be empty strings.",
        ));
    }
    Ok(())
}

fn variable_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii()
}

/// mongod's rule for a name a user defines (`let`, `as`, `vars`): `CURRENT`, or a lowercase
/// ASCII or non-ASCII first character, then letters, digits, `_` or non-ASCII.
pub fn validate_user_write(name: &str) -> Result<()> {
    if name == "CURRENT" {
        return Ok(());
    }
    let Some(first) = name.chars().next() else {
        return Err(Error::new(
            ErrorCode::Location16866,
            "empty variable names are not allowed",
        ));
    };
    if first.is_ascii() && !first.is_ascii_lowercase() {
        return Err(Error::new(
            ErrorCode::Location16867,
            format!("'{name}' starts with an invalid character for a user variable name"),
        ));
    }
    if let Some(bad) = name.chars().find(|c| !variable_char(*c)) {
        return Err(Error::new(
            ErrorCode::Location16868,
            format!("'{name}' contains an invalid character for a variable name: '{bad}'"),
        ));
    }
    Ok(())
}

/// mongod's rule for a name a user reads (`$$name`): as for writing, but an uppercase first
/// letter is allowed (the built-in variables).
fn validate_user_read(name: &str) -> Result<()> {
    let Some(first) = name.chars().next() else {
        return Err(Error::new(
            ErrorCode::Location16869,
            "empty variable names are not allowed",
        ));
    };
    if first.is_ascii() && !first.is_ascii_alphabetic() {
        return Err(Error::new(
            ErrorCode::Location16870,
            format!("'{name}' starts with an invalid character for a variable name"),
        ));
    }
    if let Some(bad) = name.chars().find(|c| !variable_char(*c)) {
        return Err(Error::new(
            ErrorCode::Location16871,
            format!("'{name}' contains an invalid character for a variable name: '{bad}'"),
        ));
    }
    Ok(())
}
