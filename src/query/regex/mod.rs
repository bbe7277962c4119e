//! A small backtracking regular-expression matcher for `$regex`, covering the PCRE subset
//! queries use: literals, `.`, classes (`[a-z]`, `[^...]`, `\d\w\s` and negations), anchors
//! (`^ $ \A \z \Z \b \B`), groups (capturing and `(?:...)`), lookahead `(?=...)`/`(?!...)`,
//! alternation and quantifiers (`* + ? {n} {n,} {n,m}`, lazy `?` suffix), with options
//! `i m s x`.
//!
//! Owns: compiling and running patterns. Does not own: backreferences, lookbehind, named groups,
//! Unicode properties (compile errors). Groups nest at most 250 deep (PCRE2's default
//! `PARENS_NEST_LIMIT`), so parsing is bounded; a step budget and a frame budget bound matching:
//! past either, the match is an error (mongod's 51156), never a silent "no match".

use crate::error::{Error, ErrorCode, Result};
use std::cell::Cell;

mod parse;
#[cfg(test)]
mod tests;

use parse::Parser;

/// Upper bound on matcher steps per `is_match` call.
const STEP_BUDGET: usize = 1_000_000;
/// Upper bound on nested matcher frames: each costs a few stack frames, and matching runs on
/// threads with 2 MiB stacks.
const DEPTH_BUDGET: usize = 2_000;
/// How deep groups may nest in a pattern (PCRE2's `PARENS_NEST_LIMIT`).
pub(super) const MAX_GROUP_NESTING: usize = 250;

/// A compiled pattern.
#[derive(Debug, Clone)]
pub struct Regex {
    root: Node,
    ignore_case: bool,
    multiline: bool,
    dot_all: bool,
}

#[derive(Debug, Clone)]
pub(super) enum Node {
    Char(char),
    Any,
    Class(Class),
    LineStart,
    LineEnd,
    TextStart,
    TextEnd,
    TextEndOrFinalNewline,
    WordBoundary(bool),
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: usize,
        max: usize,
        greedy: bool,
    },
    Look {
        node: Box<Node>,
        negate: bool,
    },
}

#[derive(Debug, Clone)]
pub(super) struct Class {
    pub(super) negate: bool,
    pub(super) items: Vec<ClassItem>,
}

#[derive(Debug, Clone)]
pub(super) enum ClassItem {
    Range(char, char),
    Digit(bool),
    Word(bool),
    Space(bool),
}

pub(super) fn invalid(pattern: &str, why: &str) -> Error {
    Error::new(
        ErrorCode::Location51091,
        format!("Regular expression is invalid: {why} (pattern: {pattern})"),
    )
}

impl Regex {
    /// Compiles `pattern` with mongod option letters (`i m s x`; `u` is accepted and ignored).
    pub fn new(pattern: &str, options: &str) -> Result<Regex> {
        let mut extended = false;
        let mut regex = Regex {
            root: Node::Concat(vec![]),
            ignore_case: false,
            multiline: false,
            dot_all: false,
        };
        for option in options.chars() {
            match option {
                'i' => regex.ignore_case = true,
                'm' => regex.multiline = true,
                's' => regex.dot_all = true,
                'x' => extended = true,
                'u' => {}
                other => {
                    return Err(Error::bad_value(format!(
                        "invalid flag in regex options: {other}"
                    )))
                }
            }
        }
        let chars: Vec<char> = pattern.chars().collect();
        let mut parser = Parser {
            chars: &chars,
            pos: 0,
            extended,
            pattern,
            nesting: 0,
        };
        let root = parser.alternation()?;
        if parser.pos < chars.len() {
            return Err(invalid(pattern, "unmatched closing parenthesis"));
        }
        regex.root = root;
        Ok(regex)
    }

    /// Whether the pattern matches anywhere in `text`; an error when matching ran out of its
    /// step or frame budget (the answer is then unknown).
    pub fn is_match(&self, text: &str) -> Result<bool> {
        let chars: Vec<char> = text.chars().collect();
        let run = Run {
            re: self,
            text: &chars,
            steps: Cell::new(0),
            depth: Cell::new(0),
            out_of_budget: Cell::new(false),
        };
        let found = (0..=chars.len())
            .any(|start| !run.exhausted() && run.node(&self.root, start, &mut |_| true));
        if !found && (run.out_of_budget.get() || run.exhausted()) {
            return Err(Error::new(
                ErrorCode::Location51156,
                "Error occurred while executing the regular expression in $regex. Result code: \
                 match limit exceeded",
            ));
        }
        Ok(found)
    }
}

struct Run<'r> {
    re: &'r Regex,
    text: &'r [char],
    steps: Cell<usize>,
    depth: Cell<usize>,
    /// Set when a budget cut a branch short: a "no match" is then not an answer.
    out_of_budget: Cell<bool>,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn fold(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

impl Run<'_> {
    fn at(&self, pos: usize) -> Option<char> {
        self.text.get(pos).copied()
    }

    fn exhausted(&self) -> bool {
        self.steps.get() > STEP_BUDGET
    }

    /// Whether the single-character node matches the character at `pos`.
    fn single(&self, node: &Node, pos: usize) -> bool {
        let Some(c) = self.at(pos) else {
            return false;
        };
        match node {
            Node::Char(expected) => {
                *expected == c || (self.re.ignore_case && fold(*expected) == fold(c))
            }
            Node::Any => self.re.dot_all || c != '\n',
            Node::Class(class) => self.class_matches(class, c),
            _ => false,
        }
    }

    fn class_matches(&self, class: &Class, c: char) -> bool {
        let hit = |c: char| {
            class.items.iter().any(|item| match item {
                ClassItem::Range(lo, hi) => *lo <= c && c <= *hi,
                ClassItem::Digit(neg) => c.is_ascii_digit() != *neg,
                ClassItem::Word(neg) => (c.is_ascii_alphanumeric() || c == '_') != *neg,
                ClassItem::Space(neg) => c.is_whitespace() != *neg,
            })
        };
        let found = hit(c)
            || (self.re.ignore_case && (hit(fold(c)) || c.to_uppercase().next().is_some_and(hit)));
        found != class.negate
    }

    /// Matches `node` at `pos`, then calls the continuation `k` with the end position;
    /// backtracks into `node` while `k` fails.
    fn node(&self, node: &Node, pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
        self.steps.set(self.steps.get() + 1);
        if self.exhausted() || self.depth.get() > DEPTH_BUDGET {
            self.out_of_budget.set(true);
            return false;
        }
        self.depth.set(self.depth.get() + 1);
        let result = self.node_inner(node, pos, k);
        self.depth.set(self.depth.get() - 1);
        result
    }

    fn node_inner(&self, node: &Node, pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
        match node {
            Node::Char(_) | Node::Any | Node::Class(_) => self.single(node, pos) && k(pos + 1),
            Node::LineStart => {
                (pos == 0 || (self.re.multiline && self.at(pos.wrapping_sub(1)) == Some('\n')))
                    && k(pos)
            }
            Node::LineEnd => {
                let at_end = pos == self.text.len()
                    || (pos + 1 == self.text.len() && self.at(pos) == Some('\n'))
                    || (self.re.multiline && self.at(pos) == Some('\n'));
                at_end && k(pos)
            }
            Node::TextStart => pos == 0 && k(pos),
            Node::TextEnd => pos == self.text.len() && k(pos),
            Node::TextEndOrFinalNewline => {
                (pos == self.text.len()
                    || (pos + 1 == self.text.len() && self.at(pos) == Some('\n')))
                    && k(pos)
            }
            Node::WordBoundary(want) => {
                let before = pos > 0 && self.at(pos - 1).is_some_and(is_word);
                let after = self.at(pos).is_some_and(is_word);
                ((before != after) == *want) && k(pos)
            }
            Node::Concat(items) => self.seq(items, pos, k),
            Node::Alt(branches) => branches.iter().any(|b| self.node(b, pos, k)),
            Node::Look { node, negate } => {
                let found = self.node(node, pos, &mut |_| true);
                found != *negate && k(pos)
            }
            Node::Repeat {
                node,
                min,
                max,
                greedy,
            } => {
                if matches!(**node, Node::Char(_) | Node::Any | Node::Class(_)) {
                    self.repeat_single(node, *min, *max, *greedy, pos, k)
                } else {
                    self.repeat(node, *min, *max, *greedy, 0, pos, k)
                }
            }
        }
    }

    fn seq(&self, items: &[Node], pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
        match items.split_first() {
            None => k(pos),
            Some((first, rest)) => self.node(first, pos, &mut |p| self.seq(rest, p, k)),
        }
    }

    /// A repeated single-character node: count the run iteratively, then try the continuation
    /// from the longest (greedy) or shortest (lazy) end, so `.*` over long text needs no
    /// recursion per character.
    fn repeat_single(
        &self,
        node: &Node,
        min: usize,
        max: usize,
        greedy: bool,
        pos: usize,
        k: &mut dyn FnMut(usize) -> bool,
    ) -> bool {
        let mut run = 0;
        while run < max && self.single(node, pos + run) {
            run += 1;
        }
        if run < min {
            return false;
        }
        let mut try_at = |n: usize| {
            self.steps.set(self.steps.get() + 1);
            !self.exhausted() && k(pos + n)
        };
        if greedy {
            (min..=run).rev().any(&mut try_at)
        } else {
            (min..=run).any(try_at)
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn repeat(
        &self,
        node: &Node,
        min: usize,
        max: usize,
        greedy: bool,
        count: usize,
        pos: usize,
        k: &mut dyn FnMut(usize) -> bool,
    ) -> bool {
        if count < min {
            return self.node(node, pos, &mut |p| {
                self.repeat(node, min, max, greedy, count + 1, p, k)
            });
        }
        let more = |k: &mut dyn FnMut(usize) -> bool| {
            count < max
                && self.node(node, pos, &mut |p| {
                    // An iteration that consumed nothing cannot make progress.
                    p != pos && self.repeat(node, min, max, greedy, count + 1, p, k)
                })
        };
        // Greedy tries one more iteration before the continuation; lazy the other way round.
        if greedy && more(k) {
            return true;
        }
        if k(pos) {
            return true;
        }
        !greedy && more(k)
    }
}
