//! `offerThroughput` and `autoScaleSettings: {maxThroughput}` of the `customAction` commands:
//! parsed, and checked against Cosmos DB's bounds.
//!
//! Microsoft's custom-commands page: a collection gets 400 RU/s unless it says otherwise, more
//! than 10,000 RU/s needs a `shardKey`, and an unsharded collection's autoscale maximum lies
//! between 4,000 and 10,000. Its throughput page and REST reference: manual throughput from 400
//! RU/s in steps of 100, autoscale maxima in steps of 1,000 from 1,000, up to 1,000,000 (the
//! default account limit), and one kind or the other, never both. Cosmos's error texts for
//! these are not published; the texts here are mayfly's.

use crate::command::args::wrong_type;
use crate::error::{Error, Result};
use crate::profile::account::Throughput;
use bson::{Bson, Document};

const COMMAND: &str = "customAction";
/// What a collection created without a throughput of its own gets ("a new fixed, unsharded,
/// collection with 400RU/s").
pub const DEFAULT_RU: u32 = 400;
const MANUAL_STEP: u32 = 100;
const AUTOSCALE_MIN: u32 = 1_000;
const AUTOSCALE_STEP: u32 = 1_000;
const ACCOUNT_MAX: u32 = 1_000_000;
/// The most an unsharded collection may have, either kind.
const UNSHARDED_MAX: u32 = 10_000;
/// The least autoscale maximum of an unsharded collection.
const UNSHARDED_AUTOSCALE_MIN: u32 = 4_000;

/// The throughput a command asks for: `offerThroughput: n`, `autoScaleSettings:
/// {maxThroughput: n}`, or neither (`None`).
pub fn parse(cmd: &Document) -> Result<Option<Throughput>> {
    let manual = cmd
        .get("offerThroughput")
        .map(|v| whole(v, "offerThroughput"));
    let autoscale = cmd.get("autoScaleSettings").map(autoscale_max);
    let throughput = match (manual, autoscale) {
        (Some(_), Some(_)) => {
            return Err(Error::bad_value(
                "offerThroughput and autoScaleSettings cannot both be given: a throughput is manual or autoscale",
            ))
        }
        (Some(ru), None) => Throughput::Manual(ru?),
        (None, Some(max)) => Throughput::Autoscale(max?),
        (None, None) => return Ok(None),
    };
    check_bounds(throughput)?;
    Ok(Some(throughput))
}

/// The autoscale maximum of `autoScaleSettings`: a document holding `maxThroughput` only.
fn autoscale_max(value: &Bson) -> Result<u32> {
    let Bson::Document(settings) = value else {
        return Err(wrong_type(COMMAND, "autoScaleSettings", value, "object"));
    };
    if let Some(field) = settings.keys().find(|k| k.as_str() != "maxThroughput") {
        return Err(Error::new(
            crate::error::ErrorCode::IDLUnknownField,
            format!("BSON field '{COMMAND}.autoScaleSettings.{field}' is an unknown field."),
        ));
    }
    match settings.get("maxThroughput") {
        Some(max) => whole(max, "autoScaleSettings.maxThroughput"),
        None => Err(Error::new(
            crate::error::ErrorCode::Location40414,
            format!(
                "BSON field '{COMMAND}.autoScaleSettings.maxThroughput' is missing but a required field"
            ),
        )),
    }
}

/// A positive whole number of request units (drivers and shells send ints or doubles).
fn whole(value: &Bson, field: &str) -> Result<u32> {
    let n = match value {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        Bson::Double(d) if d.fract() == 0.0 && d.abs() < 1e12 => *d as i64,
        Bson::Double(d) => {
            return Err(Error::bad_value(format!(
                "{field} must be a whole number of request units, not {d}"
            )))
        }
        other => return Err(wrong_type(COMMAND, field, other, "int")),
    };
    u32::try_from(n)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| Error::bad_value(format!("{field} must be positive, not {n}")))
}

/// The account-wide bounds of each kind.
fn check_bounds(throughput: Throughput) -> Result<()> {
    let (ok, rule) = match throughput {
        Throughput::Manual(ru) => (
            (DEFAULT_RU..=ACCOUNT_MAX).contains(&ru) && ru % MANUAL_STEP == 0,
            "offerThroughput must be between 400 and 1000000 RU/s, in steps of 100",
        ),
        Throughput::Autoscale(max) => (
            (AUTOSCALE_MIN..=ACCOUNT_MAX).contains(&max) && max % AUTOSCALE_STEP == 0,
            "autoScaleSettings.maxThroughput must be between 1000 and 1000000 RU/s, in steps of 1000",
        ),
    };
    if ok {
        Ok(())
    } else {
        Err(Error::bad_value(format!(
            "{rule}; got {}",
            throughput.max_per_second()
        )))
    }
}

/// The bounds of a collection's own throughput: without a shard key at most 10,000 RU/s, and
/// an autoscale maximum of at least 4,000.
pub fn check_for_collection(throughput: Throughput, sharded: bool) -> Result<()> {
    if sharded {
        return Ok(());
    }
    match throughput {
        Throughput::Manual(ru) if ru > UNSHARDED_MAX => Err(Error::bad_value(format!(
            "offerThroughput {ru} is over 10000 RU/s, the most a collection without a shardKey may have"
        ))),
        Throughput::Autoscale(max) if !(UNSHARDED_AUTOSCALE_MIN..=UNSHARDED_MAX).contains(&max) => {
            Err(Error::bad_value(format!(
                "autoScaleSettings.maxThroughput of a collection without a shardKey must be between 4000 and 10000 RU/s; got {max}"
            )))
        }
        _ => Ok(()),
    }
}

/// Changing a throughput keeps its kind: "Changing your database from provisioned throughput
/// to autoscale and vice-versa is only supported in the Azure portal."
pub fn check_same_kind(current: Throughput, new: Throughput) -> Result<()> {
    match (current, new) {
        (Throughput::Manual(_), Throughput::Manual(_))
        | (Throughput::Autoscale(_), Throughput::Autoscale(_)) => Ok(()),
        _ => Err(Error::bad_value(
            "changing between manual (offerThroughput) and autoscale (autoScaleSettings) throughput is only supported in the Azure portal",
        )),
    }
}

/// `provisionedThroughput` and, for autoscale, `autoScaleSettings`, as `GetDatabase` and
/// `GetCollection` report them.
pub fn report(reply: &mut Document, throughput: Throughput) {
    reply.insert("provisionedThroughput", ru(throughput.provisioned()));
    if let Throughput::Autoscale(max) = throughput {
        reply.insert("autoScaleSettings", bson::doc! {"maxThroughput": ru(max)});
    }
}

/// Request units as an int, as the page shows them (every bound fits).
fn ru(value: u32) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn throughput_is_parsed_and_bounded() {
        let ok = |t: Throughput| Ok::<_, i32>(Some(t));
        let cases = [
            (doc! {}, Ok(None)),
            (doc! {"offerThroughput": 400}, ok(Throughput::Manual(400))),
            (
                doc! {"offerThroughput": 1200.0},
                ok(Throughput::Manual(1200)),
            ),
            (
                doc! {"offerThroughput": 1_000_000_i64},
                ok(Throughput::Manual(1_000_000)),
            ),
            (
                doc! {"autoScaleSettings": {"maxThroughput": 20000}},
                ok(Throughput::Autoscale(20_000)),
            ),
            (doc! {"offerThroughput": 399}, Err(2)),
            (doc! {"offerThroughput": 450}, Err(2)),
            (doc! {"offerThroughput": 1_000_100}, Err(2)),
            (doc! {"offerThroughput": 0}, Err(2)),
            (doc! {"offerThroughput": -400}, Err(2)),
            (doc! {"offerThroughput": 400.5}, Err(2)),
            (doc! {"offerThroughput": "400"}, Err(14)),
            (doc! {"autoScaleSettings": {"maxThroughput": 1500}}, Err(2)),
            (doc! {"autoScaleSettings": {"maxThroughput": 500}}, Err(2)),
            (doc! {"autoScaleSettings": 4000}, Err(14)),
            (doc! {"autoScaleSettings": {}}, Err(40414)),
            (
                doc! {"autoScaleSettings": {"maxThroughput": 4000, "x": 1}},
                Err(40415),
            ),
            (
                doc! {"offerThroughput": 400, "autoScaleSettings": {"maxThroughput": 4000}},
                Err(2),
            ),
        ];
        for (cmd, want) in cases {
            let got = parse(&cmd).map_err(|e| e.code.code());
            assert_eq!(got, want, "{cmd}");
        }
    }

    #[test]
    fn an_unsharded_collection_is_bounded() {
        let cases = [
            (Throughput::Manual(10_000), false, true),
            (Throughput::Manual(10_100), false, false),
            (Throughput::Manual(11_000), true, true),
            (Throughput::Autoscale(4_000), false, true),
            (Throughput::Autoscale(3_000), false, false),
            (Throughput::Autoscale(20_000), false, false),
            (Throughput::Autoscale(20_000), true, true),
            (Throughput::Autoscale(1_000), true, true),
        ];
        for (throughput, sharded, allowed) in cases {
            let got = check_for_collection(throughput, sharded).is_ok();
            assert_eq!(got, allowed, "{throughput:?} sharded: {sharded}");
        }
    }

    #[test]
    fn a_change_keeps_the_kind() {
        let (manual, auto) = (Throughput::Manual(400), Throughput::Autoscale(4000));
        assert!(check_same_kind(manual, Throughput::Manual(1200)).is_ok());
        assert!(check_same_kind(auto, Throughput::Autoscale(8000)).is_ok());
        assert_eq!(check_same_kind(manual, auto).unwrap_err().code.code(), 2);
        assert_eq!(check_same_kind(auto, manual).unwrap_err().code.code(), 2);
    }

    #[test]
    fn reports_follow_the_page() {
        let mut reply = doc! {};
        report(&mut reply, Throughput::Manual(1000));
        assert_eq!(reply, doc! {"provisionedThroughput": 1000});
        let mut reply = doc! {};
        report(&mut reply, Throughput::Autoscale(20_000));
        assert_eq!(
            reply,
            doc! {"provisionedThroughput": 2000, "autoScaleSettings": {"maxThroughput": 20000}}
        );
    }
}
