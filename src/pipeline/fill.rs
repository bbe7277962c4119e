//! `$fill`: null and missing fields filled with a value (`{value: expr}`), the last value seen
//! (`{method: "locf"}`) or a linear interpolation (`{method: "linear"}`) along `sortBy`,
//! within partitions (`partitionBy` / `partitionByFields`).
//!
//! Owns: parsing `$fill` with mongod's rules. As in mongod, the methods run as a
//! `$setWindowFields` with `$locf`/`$linearFill` (`window/`), and the values as
//! `$addFields: {f: {$ifNull: ["$f", value]}}` after it; rows keep their documents' expiry.

use super::memory::StageLimits;
use super::window::SetWindowFields;
use super::Rows;
use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::{Expression, Variables};
use bson::{doc, Bson, Document};

#[derive(Debug)]
pub struct Fill {
    window: Option<SetWindowFields>,
    values: Vec<(Vec<String>, Expression)>,
}

const STAGE: &str = "$fill";

fn unknown(field: &str) -> Error {
    Error::new(
        ErrorCode::IDLUnknownField,
        format!("BSON field '{STAGE}.{field}' is an unknown field."),
    )
}

fn wrong_type(field: &str, value: &Bson, expected: &str) -> Error {
    Error::type_mismatch(format!(
        "BSON field '{STAGE}.{field}' is the wrong type '{}', expected type '{expected}'",
        crate::query::path::type_name(value)
    ))
}

impl Fill {
    pub fn parse(arg: &Bson, vars: &Variables) -> Result<Fill> {
        let Bson::Document(spec) = arg else {
            return Err(Error::failed_to_parse(format!(
                "The {STAGE} stage specification must be an object, found {}",
                crate::query::path::type_name(arg)
            )));
        };
        let (mut sort_by, mut partition_by, mut partition_fields, mut output) =
            (None, None, None, None);
        for (k, v) in spec {
            match k.as_str() {
                "sortBy" => match v {
                    Bson::Document(d) => sort_by = Some(d.clone()),
                    other => return Err(wrong_type(k, other, "object")),
                },
                "partitionBy" => match v {
                    Bson::String(_) | Bson::Document(_) => partition_by = Some(v.clone()),
                    other => return Err(wrong_type(k, other, "[string, object]")),
                },
                "partitionByFields" => partition_fields = Some(string_array(k, v)?),
                "output" => match v {
                    Bson::Document(d) => output = Some(d),
                    other => return Err(wrong_type(k, other, "object")),
                },
                other => return Err(unknown(other)),
            }
        }
        let output = output.ok_or_else(|| {
            Error::new(
                ErrorCode::Location40414,
                format!("BSON field '{STAGE}.output' is missing but a required field"),
            )
        })?;
        if output.is_empty() {
            return Err(Error::new(
                ErrorCode::Location6050203,
                "The output field in '$fill' must contain an object with at least one element",
            ));
        }
        let mut methods = Document::new();
        let mut values = Vec::new();
        for (field, spec) in output {
            let Bson::Document(spec) = spec else {
                return Err(Error::new(
                    ErrorCode::Location6050200,
                    "Each fill output specification must be an object with exactly one field",
                ));
            };
            let (mut method, mut value) = (None, None);
            for (k, v) in spec {
                match k.as_str() {
                    "method" => match v {
                        Bson::String(m) => method = Some(m.as_str()),
                        other => return Err(wrong_type(k, other, "string")),
                    },
                    "value" => value = Some(v),
                    other => return Err(unknown(other)),
                }
            }
            if let Some(method) = method {
                if value.is_some() {
                    return Err(Error::new(
                        ErrorCode::Location6050201,
                        "Each fill output specification must have exactly one of 'method' or \
                         'value' fields, not both",
                    ));
                }
                let function = match method {
                    "locf" => "$locf",
                    "linear" => "$linearFill",
                    _ => {
                        return Err(Error::new(
                            ErrorCode::Location6050202,
                            "Method must be either locf or linear",
                        ))
                    }
                };
                methods.insert(field.clone(), doc! {function: format!("${field}")});
            }
            if let Some(value) = value {
                let path = super::window::output_path(field)?;
                values.push((path, Expression::compile(value, vars)?));
            }
        }
        let mut window_spec = Document::new();
        if let Some(sort_by) = sort_by {
            window_spec.insert("sortBy", sort_by);
        }
        match (partition_by, partition_fields) {
            (Some(_), Some(_)) => {
                return Err(Error::new(
                    ErrorCode::Location6050204,
                    "Maximum one of 'partitionBy' and 'partitionByFields can be specified in \
                     '$fill'",
                ))
            }
            (Some(p), None) => {
                window_spec.insert("partitionBy", p);
            }
            (None, Some(fields)) => {
                let mut key = Document::new();
                for f in fields {
                    key.insert(f.clone(), format!("${f}"));
                }
                window_spec.insert("partitionBy", key);
            }
            (None, None) => {}
        }
        let window = if methods.is_empty() {
            None
        } else {
            window_spec.insert("output", methods);
            Some(SetWindowFields::parse(&Bson::Document(window_spec), vars)?)
        };
        Ok(Fill { window, values })
    }

    /// Runs the fill over every input row.
    pub fn apply(
        self,
        rows: Rows,
        limits: &StageLimits,
        spill: Option<&crate::engine::exec::spill::SpillDir>,
    ) -> Result<Rows> {
        let rows: Rows = match self.window {
            Some(window) => window.apply(rows, limits, spill)?,
            None => rows,
        };
        if self.values.is_empty() {
            return Ok(rows);
        }
        let values = self.values;
        Ok(Box::new(rows.map(move |r| {
            r.and_then(|row| {
                let mut doc = row.doc.clone();
                for (path, value) in &values {
                    let current = crate::query::path::get(&row.doc, path);
                    if current.is_none_or(|v| matches!(v, Bson::Null | Bson::Undefined)) {
                        if let Some(v) = value.eval(&row.doc)? {
                            crate::query::path::set(&mut doc, path, v)?;
                        }
                    }
                }
                row.reshaped(doc)
            })
        })))
    }
}

fn string_array(field: &str, v: &Bson) -> Result<Vec<String>> {
    parse_string_array_in(STAGE, field, v)
}

/// An IDL `array<string>` field of `stage`.
pub(super) fn parse_string_array_in(stage: &str, field: &str, v: &Bson) -> Result<Vec<String>> {
    let wrong = |value: &Bson, expected: &str| {
        Error::type_mismatch(format!(
            "BSON field '{stage}.{field}' is the wrong type '{}', expected type '{expected}'",
            crate::query::path::type_name(value)
        ))
    };
    let Bson::Array(items) = v else {
        return Err(wrong(v, "array"));
    };
    items
        .iter()
        .map(|item| match item {
            Bson::String(s) => Ok(s.clone()),
            other => Err(wrong(other, "string")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Row;

    fn run(spec: Document, docs: Vec<Document>) -> Result<Vec<Document>> {
        let fill = Fill::parse(&Bson::Document(spec), &Variables::default())?;
        let rows: Rows = Box::new(docs.into_iter().map(|d| Ok(Row::computed(d))));
        fill.apply(rows, &StageLimits::default(), None)?
            .map(|r| r.map(|row| row.doc))
            .collect()
    }

    #[test]
    fn fills_follow_mongods_reference_examples() {
        // "Fill Missing Field Values with a Constant Value".
        let docs = vec![
            doc! {"date": 1, "bootsSold": 10, "sandalsSold": 20, "sneakersSold": 12},
            doc! {"date": 2, "bootsSold": 7, "sneakersSold": 8},
            doc! {"date": 3, "bootsSold": 6, "sandalsSold": 11},
        ];
        let out = run(
            doc! {"output": {"bootsSold": {"value": 0}, "sandalsSold": {"value": 0}, "sneakersSold": {"value": 0}}},
            docs,
        )
        .unwrap();
        assert_eq!(
            out[1],
            doc! {"date": 2, "bootsSold": 7, "sneakersSold": 8, "sandalsSold": 0}
        );
        assert_eq!(out[2].get("sneakersSold"), Some(&Bson::Int32(0)));
        // "Fill Missing Field Values with Linear Interpolation".
        let docs = [5, 0, 0, 0, 10, 0, 6, 8]
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut d = doc! {"time": i as i32};
                if *p != 0 {
                    d.insert("price", *p);
                } else {
                    d.insert("price", Bson::Null);
                }
                d
            })
            .collect();
        let out = run(
            doc! {"sortBy": {"time": 1}, "output": {"price": {"method": "linear"}}},
            docs,
        )
        .unwrap();
        let prices: Vec<_> = out
            .iter()
            .map(|d| d.get("price").cloned().unwrap())
            .collect();
        assert_eq!(
            prices,
            vec![
                Bson::Int32(5),
                Bson::Double(6.25),
                Bson::Double(7.5),
                Bson::Double(8.75),
                Bson::Int32(10),
                Bson::Double(8.0),
                Bson::Int32(6),
                Bson::Int32(8)
            ]
        );
        // "Fill Missing Field Values Based on the Last Observed Value", per partition.
        let docs = vec![
            doc! {"t": 1, "k": "a", "score": 90},
            doc! {"t": 2, "k": "a"},
            doc! {"t": 1, "k": "b"},
            doc! {"t": 2, "k": "b", "score": 80},
            doc! {"t": 3, "k": "b", "score": null},
        ];
        let out = run(
            doc! {"sortBy": {"t": 1}, "partitionByFields": ["k"], "output": {"score": {"method": "locf"}}},
            docs,
        )
        .unwrap();
        let scores: Vec<_> = out.iter().map(|d| d.get("score").cloned()).collect();
        assert_eq!(
            scores,
            vec![
                Some(Bson::Int32(90)),
                Some(Bson::Int32(90)),
                Some(Bson::Null),
                Some(Bson::Int32(80)),
                Some(Bson::Int32(80))
            ]
        );
    }

    #[test]
    fn bad_fills_have_mongod_codes() {
        let code = |spec: Bson| Fill::parse(&spec, &Variables::default()).unwrap_err().code;
        let cases = [
            (Bson::Int32(1), ErrorCode::FailedToParse),
            (doc! {"sortBy": {"a": 1}}.into(), ErrorCode::Location40414),
            (doc! {"output": {}}.into(), ErrorCode::Location6050203),
            (doc! {"output": {"a": 1}}.into(), ErrorCode::Location6050200),
            (doc! {"output": {"a": {"method": "locf", "value": 1}}}.into(), ErrorCode::Location6050201),
            (doc! {"output": {"a": {"method": "mean"}}}.into(), ErrorCode::Location6050202),
            (doc! {"output": {"a": {"value": 1}}, "partitionBy": "$k", "partitionByFields": ["k"]}.into(), ErrorCode::Location6050204),
            (doc! {"output": {"a": {"value": 1}}, "foo": 1}.into(), ErrorCode::IDLUnknownField),
            (doc! {"output": {"a": {"method": "linear"}}}.into(), ErrorCode::Location605001),
            (doc! {"output": {"a": {"value": 1}}, "partitionByFields": "k"}.into(), ErrorCode::TypeMismatch),
        ];
        for (spec, want) in cases {
            assert_eq!(code(spec.clone()), want, "{spec}");
        }
        let repeated = run(
            doc! {"sortBy": {"t": 1}, "output": {"a": {"method": "linear"}}},
            vec![doc! {"t": 1, "a": 1}, doc! {"t": 1, "a": null}],
        );
        assert_eq!(repeated.unwrap_err().code, ErrorCode::Location6050106);
    }
}
