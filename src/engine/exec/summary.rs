//! What one run of a plan amounts to, as the logs and explain state it: mongod's
//! `planSummary` of the plan, and the keys and documents its leaves examined.
//!
//! Owns: reading these off a plan and its counters. Does not own: the explain documents
//! (`engine::explain`) or the operation's log of plans (`plan_log`).

use super::plan::Node;
use super::plan_log::Totals;
use super::stages::{Counters, StageStats};
use bson::Bson;

/// The leaves of `node` as mongod names them in `planSummary`, comma-separated.
pub fn summary(node: &Node) -> String {
    match node.leaf() {
        Node::Eof => "EOF".to_owned(),
        Node::IdHack { .. } => "IDHACK".to_owned(),
        Node::CollScan { .. } => "COLLSCAN".to_owned(),
        Node::IxScan(scan) => format!("IXSCAN {}", key_pattern(&scan.index.key)),
        Node::CountScan(scan) => format!("COUNT_SCAN {}", key_pattern(&scan.index.key)),
        Node::Or { inputs, .. } => inputs.iter().map(summary).collect::<Vec<_>>().join(", "),
        // `leaf` never stops at these.
        Node::Sort { .. } | Node::Skip { .. } | Node::Limit { .. } => String::new(),
    }
}

/// A key pattern as mongod prints one: `{ a: 1, b.c: -1 }`.
fn key_pattern(key: &bson::Document) -> String {
    let fields: Vec<String> = key
        .iter()
        .map(|(field, direction)| {
            let direction = match direction {
                Bson::String(s) => format!("\"{s}\""),
                Bson::Double(d) if d.fract() == 0.0 => format!("{}", *d as i64),
                other => other.to_string(),
            };
            format!("{field}: {direction}")
        })
        .collect();
    format!("{{ {} }}", fields.join(", "))
}

/// Keys and documents examined over the whole run.
pub fn totals(node: &Node, stats: &StageStats) -> Totals {
    let leaf_stats = {
        let mut s = stats;
        let mut n = node;
        while let Node::Sort { input, .. } | Node::Skip { input, .. } | Node::Limit { input, .. } =
            n
        {
            match s.child.as_deref() {
                Some(c) => s = c,
                None => break,
            }
            n = input;
        }
        s
    };
    if let Node::Or { inputs, .. } = node.leaf() {
        return inputs
            .iter()
            .zip(&leaf_stats.inputs)
            .map(|(input, stats)| totals(input, stats))
            .fold(Totals::default(), |a, b| Totals {
                keys_examined: a.keys_examined + b.keys_examined,
                docs_examined: a.docs_examined + b.docs_examined,
            });
    }
    let docs = Counters::get(&leaf_stats.counters.docs_examined);
    let keys = match node.leaf() {
        Node::IxScan(scan) if scan.index.id.is_some() => leaf_stats
            .child
            .as_deref()
            .map_or(0, |c| Counters::get(&c.counters.keys_examined)),
        _ => Counters::get(&leaf_stats.counters.keys_examined),
    };
    Totals {
        keys_examined: keys,
        docs_examined: docs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn key_patterns_print_as_mongod_prints_them() {
        assert_eq!(key_pattern(&doc! {"a": 1}), "{ a: 1 }");
        assert_eq!(key_pattern(&doc! {"a": 1, "b.c": -1}), "{ a: 1, b.c: -1 }");
        assert_eq!(key_pattern(&doc! {"t": "text"}), "{ t: \"text\" }");
        assert_eq!(key_pattern(&doc! {"a": 1.0}), "{ a: 1 }");
    }

    #[test]
    fn leaves_name_the_summary() {
        assert_eq!(summary(&Node::CollScan { reverse: false }), "COLLSCAN");
        assert_eq!(summary(&Node::Eof), "EOF");
        let limited = Node::Limit {
            input: Box::new(Node::IdHack { ids: vec![] }),
            n: 1,
        };
        assert_eq!(summary(&limited), "IDHACK");
    }
}
