//! Placeholder: this family's operators are not compiled yet.

use super::super::{Compiler, Node};
use crate::error::Result;
use bson::Bson;

pub(super) fn compile(_name: &str, _arg: &Bson, _c: &mut Compiler<'_>) -> Option<Result<Node>> {
    None
}
