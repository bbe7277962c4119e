//! The expression language: one evaluator for `$project`, `$addFields`/`$set`, `$group`'s keys
//! and accumulators, `$match`/`find` with `$expr`, pipeline-style updates, `$lookup`'s `let`,
//! and the `let` option of every command that has one.
//!
//! An expression is compiled once ([`Expression::compile`]) into a tree of [`Node`]s, with every
//! variable resolved at compile time: the command's `let` variables and `$$NOW` become
//! constants, `$$ROOT`/`$$CURRENT` the document, and variables bound by `$let`, `$map`,
//! `$filter`, `$reduce` (and the operators that bind like them) a numbered slot. Evaluation
//! ([`Expression::eval`]) then needs only the document; it returns `Ok(None)` for a missing
//! value (`$$REMOVE`, an absent field) and an [`Error`](crate::error::Error) with mongod's code
//! when an operator refuses its input.
//!
//! Owns: compiling and evaluating expressions, variable scoping, field paths. Does not own:
//! stages (`$project`'s inclusion rules live with the stages), accumulators' state across
//! documents, or collation (comparisons go through [`Compiler`]'s comparison hook).
//!
//! Depth: compiling recurses once per nesting level of the expression, which the BSON decoder
//! already bounds (200 levels); [`compile::MAX_EXPRESSION_DEPTH`] bounds it again for
//! expressions built in memory. Evaluation recurses along the compiled tree only. Values
//! built by iteration (`$reduce`) are checked against the BSON nesting limit as they grow.
//!
//! Cost: every operator's evaluation is a unit of work for the operation's interrupt
//! ([`guard::tick`]), and so is every iteration of an operator's loop; every value an operator
//! computes is refused past mongod's sizes (a string of 16 MiB: 16493; an array or document
//! past [`guard::MAX_VALUE_BYTES`]: 10334), and operators whose output
//! can grow far past their inputs (`$concat`, `$concatArrays`, `$map`, `$split`,
//! `$replaceAll`, the regex functions, literal arrays and documents) check the size as they
//! build, so no value is ever built much past the limit.

mod compile;
mod field;
mod ops;
#[cfg(test)]
mod tests;
pub mod value;

pub use compile::{validate_field_name, validate_user_write, Compiler, Variables};
pub use field::{field_path, plain_field_path};
pub(crate) use ops::{format_g, format_g_digits};

use crate::error::Result;
use crate::query::guard;
pub use crate::query::size::SizeTally;
use bson::{Bson, Document};
use std::fmt::Debug;
use std::sync::Arc;

/// A value or its absence ("missing" in mongod's terms, distinct from `null`).
pub type Value = Option<Bson>;

/// `Err` when `value`, computed by an operator, is past the size any value may reach: a
/// string of 16 MiB (16493), an array or document past [`guard::MAX_VALUE_BYTES`] (10334).
/// Strings are measured at once; arrays and documents by a walk, which costs no more than
/// building them did.
pub fn check_value_size(value: &Bson) -> Result<()> {
    value_bytes_checked(value).map(|_| ())
}

/// [`check_value_size`], returning the size it measured (0 for a fixed-size value).
fn value_bytes_checked(value: &Bson) -> Result<usize> {
    match value {
        Bson::String(s) => guard::check_string_bytes(s.len()).map(|()| s.len()),
        Bson::Array(_) | Bson::Document(_) | Bson::Binary(_) | Bson::JavaScriptCodeWithScope(_) => {
            let bytes = crate::query::size::value_size(value);
            guard::check_value_bytes(bytes).map(|()| bytes)
        }
        _ => Ok(0),
    }
}

/// A compiled expression.
#[derive(Debug, Clone)]
pub struct Expression {
    node: Node,
    /// How many variable slots evaluation needs.
    slots: usize,
}

/// One node of a compiled expression.
#[derive(Debug, Clone)]
pub enum Node {
    /// A constant: a literal, `{$literal: v}`, a `let` variable, `$$NOW`.
    Const(Bson),
    /// `$$REMOVE`.
    Missing,
    /// A field path below a variable (`"$a.b"` is `CURRENT.a.b`); an empty path is the variable.
    Path(Base, Arc<[String]>),
    /// A document built from expressions; fields that evaluate to missing are left out.
    Doc(Vec<(String, Node)>),
    /// An array built from expressions; missing elements become `null`.
    Array(Vec<Node>),
    /// An operator.
    Op(Arc<dyn Operator>),
}

/// What a path starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// `$$ROOT`, and `$$CURRENT` unless rebound.
    Root,
    /// A variable bound while evaluating (by `$let`, `$map`, ...), or a rebound `CURRENT`.
    Slot(usize),
}

/// An operator: evaluates its operands (lazily, if it wants) in `cx`.
pub trait Operator: Debug + Send + Sync {
    fn eval(&self, cx: &mut Context<'_>) -> Result<Value>;
}

/// What evaluation reads: the document and the values of bound variables.
pub struct Context<'a> {
    root: &'a Document,
    slots: Vec<Value>,
}

impl<'a> Context<'a> {
    pub fn new(root: &'a Document, slots: usize) -> Context<'a> {
        Context {
            root,
            slots: vec![None; slots],
        }
    }

    /// The document being evaluated (`$$ROOT`).
    pub fn root(&self) -> &'a Document {
        self.root
    }

    /// Binds slot `slot` (a slot the compiler handed out) to `value`.
    pub fn bind(&mut self, slot: usize, value: Value) {
        if let Some(s) = self.slots.get_mut(slot) {
            *s = value;
        }
    }

    /// The value of slot `slot`.
    pub fn slot(&self, slot: usize) -> Option<&Bson> {
        self.slots.get(slot).and_then(Option::as_ref)
    }
}

impl Node {
    /// Evaluates this node.
    pub fn eval(&self, cx: &mut Context<'_>) -> Result<Value> {
        match self {
            Node::Const(v) => Ok(Some(v.clone())),
            Node::Missing => Ok(None),
            Node::Path(Base::Root, path) => Ok(field::get_in_document(cx.root, path)),
            Node::Path(Base::Slot(slot), path) => Ok(cx
                .slot(*slot)
                .and_then(|value| field::get_in_value(value, path))),
            Node::Doc(fields) => {
                let mut out = Document::new();
                let mut size = SizeTally::document();
                for (k, e) in fields {
                    if let Some(v) = e.eval(cx)? {
                        size.add(k.len(), &v)?;
                        out.insert(k.clone(), v);
                    }
                }
                Ok(Some(Bson::Document(out)))
            }
            Node::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                let mut size = SizeTally::array();
                for e in items {
                    let v = e.eval(cx)?.unwrap_or(Bson::Null);
                    size.add_element(&v)?;
                    out.push(v);
                }
                Ok(Some(Bson::Array(out)))
            }
            Node::Op(op) => {
                let value = op.eval(cx)?;
                // An operator's work grows with what it builds: one unit, and one more per
                // 4 KiB of its result (an operator copying megabytes is checked on at once).
                let bytes = match &value {
                    Some(v) => value_bytes_checked(v)?,
                    None => 0,
                };
                guard::tick_n(guard::units_for_bytes(bytes))?;
                Ok(value)
            }
        }
    }

    /// The constant this node always evaluates to, if it is one.
    pub fn as_const(&self) -> Option<&Bson> {
        match self {
            Node::Const(v) => Some(v),
            _ => None,
        }
    }
}

impl Expression {
    /// Compiles `spec` with the variables in `vars` visible.
    pub fn compile(spec: &Bson, vars: &Variables) -> Result<Expression> {
        let mut compiler = Compiler::new(vars);
        let node = compiler.compile(spec)?;
        Ok(compiler.finish(node))
    }

    /// Compiles `spec` for evaluation at several levels of one document (`$redact`): `$$ROOT`
    /// stays the document, while `$$CURRENT` (and so `"$a"`) is the value given to
    /// [`Expression::eval_at`].
    pub fn compile_with_current(spec: &Bson, vars: &Variables) -> Result<Expression> {
        let mut compiler = Compiler::new(vars);
        let slot = compiler.bind("CURRENT")?;
        debug_assert_eq!(slot, 0);
        let node = compiler.compile(spec)?;
        Ok(compiler.finish(node))
    }

    /// Evaluates an expression from [`Expression::compile_with_current`] with `$$ROOT` =
    /// `root` and `$$CURRENT` = `current`.
    pub fn eval_at(&self, root: &Document, current: &Document) -> Result<Value> {
        let mut cx = Context::new(root, self.slots);
        cx.bind(0, Some(Bson::Document(current.clone())));
        self.node.eval(&mut cx)
    }

    /// Wraps a node built by a [`Compiler`]; `slots` from [`Compiler::slots`].
    pub(crate) fn from_parts(node: Node, slots: usize) -> Expression {
        Expression { node, slots }
    }

    /// Evaluates against `doc` (both `$$ROOT` and `$$CURRENT`).
    pub fn eval(&self, doc: &Document) -> Result<Value> {
        let mut cx = Context::new(doc, self.slots);
        self.node.eval(&mut cx)
    }

    /// Evaluates in a context the caller built (an accumulator evaluating many expressions
    /// against one document shares one).
    pub fn eval_in(&self, cx: &mut Context<'_>) -> Result<Value> {
        self.node.eval(cx)
    }

    /// How many variable slots [`Expression::eval_in`]'s context needs.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The compiled tree.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// The constant the expression always evaluates to, if it is one.
    pub fn as_const(&self) -> Option<&Bson> {
        self.node.as_const()
    }

    /// Whether this is a plain field path of the document (`"$a.b"`), and which.
    pub fn as_field_path(&self) -> Option<&[String]> {
        match &self.node {
            Node::Path(Base::Root, path) if !path.is_empty() => Some(path),
            _ => None,
        }
    }
}
