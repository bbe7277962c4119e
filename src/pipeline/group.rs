//! `$group`: a key expression and accumulators (`$sum`, `$avg`, `$min`, `$max`, `$first`,
//! `$last`, `$push`, `$addToSet`, `$count`). Keys are grouped by BSON equality (`1`, `1.0` and
//! `NumberLong(1)` are one group); groups come out in order of first appearance.

use super::memory::StageMemory;
use crate::error::{Error, ErrorCode, Result};
use crate::query::accumulator::{Accumulator, OrdBson, State};
use crate::query::expr::{Expression, Variables};
use crate::query::size::value_size;
use bson::{Bson, Document};
use std::collections::BTreeMap;

#[derive(Debug)]
pub struct Group {
    id: Expression,
    accumulators: Vec<(String, Accumulator)>,
}

impl Group {
    pub fn compile(spec: &Bson, vars: &Variables) -> Result<Group> {
        let Bson::Document(spec) = spec else {
            return Err(Error::new(
                ErrorCode::Location15947,
                "a group's fields must be specified in an object",
            ));
        };
        let mut id = None;
        let mut accumulators = Vec::new();
        for (name, value) in spec {
            if name == "_id" {
                id = Some(Expression::compile(value, vars)?);
                continue;
            }
            if name.contains('.') {
                return Err(Error::new(
                    ErrorCode::Location40235,
                    format!("The field name '{name}' cannot contain '.'"),
                ));
            }
            if name.starts_with('$') {
                return Err(Error::new(
                    ErrorCode::Location40236,
                    format!("The field name '{name}' cannot be an operator name"),
                ));
            }
            let Bson::Document(acc) = value else {
                return Err(Error::new(
                    ErrorCode::Location40234,
                    format!("The field '{name}' must be an accumulator object"),
                ));
            };
            if acc.len() != 1 {
                return Err(Error::new(
                    ErrorCode::Location40238,
                    format!("The field '{name}' must specify one accumulator"),
                ));
            }
            let Some((op_name, arg)) = acc.iter().next() else {
                continue;
            };
            accumulators.push((name.clone(), Accumulator::compile(op_name, arg, vars)?));
        }
        let id = id.ok_or_else(|| {
            Error::new(
                ErrorCode::Location15955,
                "a group specification must include an _id",
            )
        })?;
        Ok(Group { id, accumulators })
    }

    /// Groups every input document; the result is one document per distinct key. The keys and
    /// the accumulators' values count against `memory`.
    pub fn run(
        &self,
        docs: impl Iterator<Item = Result<Document>>,
        memory: &mut StageMemory,
    ) -> Result<Vec<Document>> {
        let mut index: BTreeMap<OrdBson, usize> = BTreeMap::new();
        let mut groups: Vec<(Bson, Vec<State>)> = Vec::new();
        for doc in docs {
            let doc = doc?;
            let key = self.id.eval(&doc)?.unwrap_or(Bson::Null);
            let slot = match index.get(&OrdBson(key.clone())) {
                Some(slot) => *slot,
                None => {
                    // The key is held twice (the index and the group), plus each state.
                    memory.charge(
                        2 * value_size(&key) + GROUP_OVERHEAD * (1 + self.accumulators.len()),
                    )?;
                    let states = self
                        .accumulators
                        .iter()
                        .map(|(_, acc)| acc.start())
                        .collect();
                    groups.push((key.clone(), states));
                    index.insert(OrdBson(key), groups.len() - 1);
                    groups.len() - 1
                }
            };
            let Some((_, states)) = groups.get_mut(slot) else {
                continue;
            };
            for (state, (_, acc)) in states.iter_mut().zip(&self.accumulators) {
                memory.adjust(state.add(acc.arg().eval(&doc)?)?)?;
            }
        }
        Ok(groups
            .into_iter()
            .map(|(key, states)| {
                let mut out = Document::new();
                out.insert("_id", key);
                for (state, (name, _)) in states.into_iter().zip(&self.accumulators) {
                    out.insert(name.clone(), state.finish());
                }
                out
            })
            .collect())
    }
}

/// Bytes a group or an accumulator state holds besides its values (map and vector entries).
const GROUP_OVERHEAD: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn group(spec: Document, docs: Vec<Document>) -> Vec<Document> {
        Group::compile(&Bson::Document(spec), &Variables::default())
            .unwrap()
            .run(
                docs.into_iter().map(Ok),
                &mut StageMemory::new(super::super::memory::Blocking::Group, false),
            )
            .unwrap()
    }

    #[test]
    fn accumulators_follow_mongod() {
        let docs = vec![
            doc! {"k": 1, "v": 2, "s": "b"},
            doc! {"k": 1.0, "v": 3.5, "s": "a"},
            doc! {"k": 2, "v": null},
            doc! {"k": 2i64, "v": i32::MAX},
            doc! {"k": 2, "v": 1},
        ];
        let out = group(
            doc! {"_id": "$k", "n": {"$sum": 1}, "t": {"$sum": "$v"}, "a": {"$avg": "$v"},
            "lo": {"$min": "$v"}, "hi": {"$max": "$s"}, "f": {"$first": "$s"},
            "l": {"$last": "$s"}, "p": {"$push": "$s"}, "u": {"$addToSet": "$k"}, "c": {"$count": {}}},
            docs,
        );
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0],
            doc! {"_id": 1, "n": 2, "t": 5.5, "a": 2.75, "lo": 2, "hi": "b", "f": "b", "l": "a",
            "p": ["b", "a"], "u": [1], "c": 2}
        );
        let second = &out[1];
        assert_eq!(
            second.get("t"),
            Some(&Bson::Int64(i64::from(i32::MAX) + 1)),
            "int32 overflow widens"
        );
        assert_eq!(
            second.get("lo"),
            Some(&Bson::Int32(1)),
            "null is ignored by $min"
        );
        assert_eq!(
            second.get("f"),
            Some(&Bson::Null),
            "$first of a missing field is null"
        );
    }

    #[test]
    fn bad_specs_have_mongod_codes() {
        let vars = Variables::default();
        let code = |spec: Document| {
            Group::compile(&Bson::Document(spec), &vars)
                .unwrap_err()
                .code
        };
        assert_eq!(code(doc! {"n": {"$sum": 1}}), ErrorCode::Location15955);
        assert_eq!(code(doc! {"_id": 1, "n": 1}), ErrorCode::Location40234);
        assert_eq!(
            code(doc! {"_id": 1, "n": {"$foo": 1}}),
            ErrorCode::Location15952
        );
        assert_eq!(
            code(doc! {"_id": 1, "n": {"$sum": [1]}}),
            ErrorCode::Location40237
        );
        assert_eq!(
            code(doc! {"_id": 1, "a.b": {"$sum": 1}}),
            ErrorCode::Location40235
        );
    }
}
