//! The pattern parser: PCRE-subset syntax into the matcher's [`Node`] tree.

use super::{invalid, Class, ClassItem, Node, MAX_GROUP_NESTING};
use crate::error::Result;

pub(super) struct Parser<'p> {
    pub(super) chars: &'p [char],
    pub(super) pos: usize,
    pub(super) extended: bool,
    pub(super) pattern: &'p str,
    /// Groups open around the current position.
    pub(super) nesting: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_extended(&mut self) {
        if !self.extended {
            return;
        }
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                self.pos += 1;
            } else if c == '#' {
                while let Some(c) = self.peek() {
                    self.pos += 1;
                    if c == '\n' {
                        break;
                    }
                }
            } else {
                break;
            }
        }
    }

    pub(super) fn alternation(&mut self) -> Result<Node> {
        let mut branches = vec![self.concat()?];
        while self.peek() == Some('|') {
            self.pos += 1;
            branches.push(self.concat()?);
        }
        Ok(if branches.len() == 1 {
            branches.pop().unwrap_or(Node::Concat(vec![]))
        } else {
            Node::Alt(branches)
        })
    }

    fn concat(&mut self) -> Result<Node> {
        let mut items = Vec::new();
        loop {
            self.skip_extended();
            match self.peek() {
                None | Some('|') | Some(')') => break,
                Some(_) => {
                    let atom = self.atom()?;
                    let atom = self.quantifier(atom)?;
                    items.push(atom);
                }
            }
        }
        Ok(Node::Concat(items))
    }

    fn quantifier(&mut self, atom: Node) -> Result<Node> {
        self.skip_extended();
        let (min, max) = match self.peek() {
            Some('*') => {
                self.pos += 1;
                (0, usize::MAX)
            }
            Some('+') => {
                self.pos += 1;
                (1, usize::MAX)
            }
            Some('?') => {
                self.pos += 1;
                (0, 1)
            }
            Some('{') => match self.counted()? {
                Some(bounds) => bounds,
                None => return Ok(atom),
            },
            _ => return Ok(atom),
        };
        if matches!(
            atom,
            Node::LineStart | Node::LineEnd | Node::TextStart | Node::TextEnd
        ) {
            return Err(invalid(
                self.pattern,
                "quantifier does not follow a repeatable item",
            ));
        }
        let mut greedy = true;
        match self.peek() {
            Some('?') => {
                greedy = false;
                self.pos += 1;
            }
            Some('+') => self.pos += 1,
            _ => {}
        }
        if matches!(self.peek(), Some('*' | '+')) {
            return Err(invalid(
                self.pattern,
                "quantifier does not follow a repeatable item",
            ));
        }
        Ok(Node::Repeat {
            node: Box::new(atom),
            min,
            max,
            greedy,
        })
    }

    /// `{n}`, `{n,}`, `{n,m}`; anything else is a literal `{` (as in PCRE). Consumes on success.
    fn counted(&mut self) -> Result<Option<(usize, usize)>> {
        let rest: String = self.chars.get(self.pos..).unwrap_or(&[]).iter().collect();
        let Some(end) = rest.find('}') else {
            return Ok(None);
        };
        let body = rest.get(1..end).unwrap_or("");
        let parse = |s: &str| -> Option<usize> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                None
            } else {
                s.parse().ok()
            }
        };
        let bounds = match body.split_once(',') {
            None => parse(body).map(|n| (n, n)),
            Some((lo, "")) => parse(lo).map(|n| (n, usize::MAX)),
            Some((lo, hi)) => parse(lo).zip(parse(hi)),
        };
        match bounds {
            Some((lo, hi)) if lo > hi => Err(invalid(
                self.pattern,
                "numbers out of order in {} quantifier",
            )),
            Some(b) => {
                self.pos += body.chars().count() + 2;
                Ok(Some(b))
            }
            None => Ok(None),
        }
    }

    fn atom(&mut self) -> Result<Node> {
        let Some(c) = self.peek() else {
            return Err(invalid(self.pattern, "unexpected end of pattern"));
        };
        self.pos += 1;
        match c {
            '.' => Ok(Node::Any),
            '^' => Ok(Node::LineStart),
            '$' => Ok(Node::LineEnd),
            '[' => self.class().map(Node::Class),
            '(' => self.group(),
            '\\' => self.escape(false).map(|e| match e {
                Escaped::Node(n) => n,
                Escaped::Item(item) => Node::Class(Class {
                    negate: false,
                    items: vec![item],
                }),
            }),
            '*' | '+' | '?' => Err(invalid(
                self.pattern,
                "quantifier does not follow a repeatable item",
            )),
            other => Ok(Node::Char(other)),
        }
    }

    fn group(&mut self) -> Result<Node> {
        if self.nesting >= MAX_GROUP_NESTING {
            return Err(invalid(self.pattern, "parentheses are too deeply nested"));
        }
        self.nesting += 1;
        let node = self.group_body();
        self.nesting -= 1;
        node
    }

    fn group_body(&mut self) -> Result<Node> {
        let mut look = None;
        if self.peek() == Some('?') {
            let kind = self.chars.get(self.pos + 1).copied();
            match kind {
                Some(':') => {}
                Some('=') => look = Some(false),
                Some('!') => look = Some(true),
                _ => return Err(invalid(self.pattern, "unsupported group syntax")),
            }
            self.pos += 2;
        }
        let inner = self.alternation()?;
        if self.peek() != Some(')') {
            return Err(invalid(self.pattern, "missing closing parenthesis"));
        }
        self.pos += 1;
        Ok(match look {
            Some(negate) => Node::Look {
                node: Box::new(inner),
                negate,
            },
            None => inner,
        })
    }

    fn class(&mut self) -> Result<Class> {
        let mut class = Class {
            negate: false,
            items: vec![],
        };
        if self.peek() == Some('^') {
            class.negate = true;
            self.pos += 1;
        }
        let mut first = true;
        loop {
            let Some(c) = self.peek() else {
                return Err(invalid(
                    self.pattern,
                    "missing terminating ] for character class",
                ));
            };
            self.pos += 1;
            if c == ']' && !first {
                return Ok(class);
            }
            first = false;
            let low = if c == '\\' {
                match self.escape(true)? {
                    Escaped::Node(Node::Char(ch)) => ch,
                    Escaped::Item(item) => {
                        class.items.push(item);
                        continue;
                    }
                    Escaped::Node(_) => {
                        return Err(invalid(self.pattern, "invalid escape in class"))
                    }
                }
            } else {
                c
            };
            if self.peek() == Some('-') && !matches!(self.chars.get(self.pos + 1), Some(']') | None)
            {
                self.pos += 1;
                let Some(hc) = self.peek() else {
                    return Err(invalid(
                        self.pattern,
                        "missing terminating ] for character class",
                    ));
                };
                self.pos += 1;
                let high = if hc == '\\' {
                    match self.escape(true)? {
                        Escaped::Node(Node::Char(ch)) => ch,
                        _ => return Err(invalid(self.pattern, "invalid range in character class")),
                    }
                } else {
                    hc
                };
                if high < low {
                    return Err(invalid(
                        self.pattern,
                        "range out of order in character class",
                    ));
                }
                class.items.push(ClassItem::Range(low, high));
            } else {
                class.items.push(ClassItem::Range(low, low));
            }
        }
    }

    fn escape(&mut self, in_class: bool) -> Result<Escaped> {
        let Some(c) = self.peek() else {
            return Err(invalid(self.pattern, "\\ at end of pattern"));
        };
        self.pos += 1;
        let item = |i| Ok(Escaped::Item(i));
        match c {
            'd' => item(ClassItem::Digit(false)),
            'D' => item(ClassItem::Digit(true)),
            'w' => item(ClassItem::Word(false)),
            'W' => item(ClassItem::Word(true)),
            's' => item(ClassItem::Space(false)),
            'S' => item(ClassItem::Space(true)),
            'n' => Ok(Escaped::Node(Node::Char('\n'))),
            't' => Ok(Escaped::Node(Node::Char('\t'))),
            'r' => Ok(Escaped::Node(Node::Char('\r'))),
            'f' => Ok(Escaped::Node(Node::Char('\x0c'))),
            'v' => Ok(Escaped::Node(Node::Char('\x0b'))),
            'e' => Ok(Escaped::Node(Node::Char('\x1b'))),
            '0' => Ok(Escaped::Node(Node::Char('\0'))),
            'b' if in_class => Ok(Escaped::Node(Node::Char('\x08'))),
            'b' => Ok(Escaped::Node(Node::WordBoundary(true))),
            'B' if !in_class => Ok(Escaped::Node(Node::WordBoundary(false))),
            'A' if !in_class => Ok(Escaped::Node(Node::TextStart)),
            'z' if !in_class => Ok(Escaped::Node(Node::TextEnd)),
            'Z' if !in_class => Ok(Escaped::Node(Node::TextEndOrFinalNewline)),
            'x' => {
                let digits: String = self
                    .chars
                    .get(self.pos..)
                    .unwrap_or(&[])
                    .iter()
                    .take(2)
                    .take_while(|c| c.is_ascii_hexdigit())
                    .collect();
                self.pos += digits.len();
                let code = u32::from_str_radix(&digits, 16).unwrap_or(0);
                Ok(Escaped::Node(Node::Char(
                    char::from_u32(code).unwrap_or('\0'),
                )))
            }
            c if c.is_ascii_alphanumeric() => {
                Err(invalid(self.pattern, "unsupported escape sequence"))
            }
            other => Ok(Escaped::Node(Node::Char(other))),
        }
    }
}

enum Escaped {
    Node(Node),
    Item(ClassItem),
}
