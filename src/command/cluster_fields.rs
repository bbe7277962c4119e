//! The fields mongod 7.0's command definitions (its IDL files) know that only its own cluster —
//! routers, shards, config servers, resharding, queryable encryption, internal sessions — sends,
//! on the commands mayfly implements. A driver never sends them; mayfly must still not call them
//! unknown (40415), as mongod does not. Those that mean nothing on one node are accepted and
//! ignored; those that ask for something mayfly does not do are refused with 238, by name.
//!
//! Owns: the two lists and the refusal, which runs for every command before it is dispatched.
//! Does not own: the fields clients send (each command's own list, checked by
//! `args::check_fields` and `spec::Spec::finish`, which ask `is_known` here), nor `lsid`'s own fields (`session_id`).

use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document};

/// Accepted on every command and ignored: cluster time gossip of config servers, replication
/// metadata requests, a retryable write's statement id outside the write commands, the legacy
/// read-preference wrapper and the two-phase-commit flag. On one node none of them changes what a
/// command does.
const IGNORED_GENERIC: &[&str] = &[
    "stmtId",
    "$queryOptions",
    "tracking_info",
    "$configTime",
    "$topologyTime",
    "$configServerState",
    "$replData",
    "$oplogQueryData",
    "coordinator",
];

/// When a field asks for something mayfly does not do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    /// Whatever its value.
    Present,
    /// When it is `true` (`false` asks for what mayfly does anyway).
    True,
    /// When it is `false`.
    False,
    /// When it is anything but an empty array or document.
    NonEmpty,
}

/// (commands, field, when it is refused, what it asks for). An empty command list is every
/// command (mongod's generic arguments).
type Rule = (&'static [&'static str], &'static str, When, &'static str);

const UUID_CHECKED: &[&str] = &[
    "find",
    "aggregate",
    "insert",
    "update",
    "delete",
    "drop",
    "renameCollection",
    "createIndexes",
    "dropIndexes",
];
const ENCRYPTED: &[&str] = &[
    "count",
    "find",
    "aggregate",
    "insert",
    "update",
    "delete",
    "findAndModify",
];
const RUNTIME_CONSTANTS: &[&str] = &["find", "aggregate", "update", "delete", "findAndModify"];
const TIMESERIES: &[&str] = &[
    "insert",
    "update",
    "delete",
    "listIndexes",
    "createIndexes",
    "dropIndexes",
];

const RULES: &[Rule] = &[
    (
        &[],
        "shardVersion",
        When::Present,
        "a shard's routing version",
    ),
    (
        &[],
        "databaseVersion",
        When::Present,
        "a shard's routing version",
    ),
    (
        &[],
        "txnRetryCounter",
        When::Present,
        "a sharded transaction's retry counter",
    ),
    (
        &[],
        "maxTimeMSOpOnly",
        When::Present,
        "an internal time limit",
    ),
    (&[], "$tenant", When::Present, "a tenant"),
    (
        &[],
        "allowImplicitCollectionCreation",
        When::False,
        "no implicit collection creation",
    ),
    (&[], "expectPrefix", When::True, "tenant-prefixed names"),
    (
        UUID_CHECKED,
        "collectionUUID",
        When::Present,
        "a collection UUID check",
    ),
    (
        ENCRYPTED,
        "encryptionInformation",
        When::Present,
        "queryable encryption",
    ),
    (
        RUNTIME_CONSTANTS,
        "runtimeConstants",
        When::Present,
        "a router's runtime constants",
    ),
    (
        TIMESERIES,
        "isTimeseriesNamespace",
        When::True,
        "a time-series collection's buckets",
    ),
    (
        &["find"],
        "$_requestResumeToken",
        When::True,
        "a resumable scan",
    ),
    (
        &["find"],
        "$_resumeAfter",
        When::NonEmpty,
        "a resumable scan",
    ),
    (&["find"], "$_startAt", When::NonEmpty, "a resumable scan"),
    (
        &["aggregate"],
        "$_requestReshardingResumeToken",
        When::True,
        "resharding",
    ),
    (
        &["aggregate"],
        "exchange",
        When::Present,
        "a router's exchange",
    ),
    (
        &["aggregate"],
        "$_passthroughToShard",
        When::Present,
        "a router's pass-through",
    ),
    (
        &["aggregate"],
        "$_generateV2ResumeTokens",
        When::True,
        "version 2 resume tokens",
    ),
    (
        &["aggregate"],
        "$_externalDataSources",
        When::Present,
        "external data sources",
    ),
    (
        &["aggregate"],
        "$_isClusterQueryWithoutShardKeyCmd",
        When::True,
        "a router's query",
    ),
    (
        &["aggregate"],
        "fromMongos",
        When::True,
        "a router's pipeline half",
    ),
    (
        &["aggregate"],
        "needsMerge",
        When::True,
        "a router's pipeline half",
    ),
    (
        &["findAndModify"],
        "$_originalQuery",
        When::Present,
        "a router's rewritten query",
    ),
    (
        &["findAndModify"],
        "$_originalCollation",
        When::Present,
        "a router's rewritten query",
    ),
    (
        &["createUser", "updateUser"],
        "authenticationRestrictions",
        When::NonEmpty,
        "authentication restrictions",
    ),
];

/// Fields accepted and ignored on one command (besides `IGNORED_GENERIC`), each meaning nothing
/// here: a mirrored or sampled read's mark, a speculative majority read (one node's reads are
/// majority-committed), findAndModify's unused cursor options, a write's request not to replace
/// empty timestamps (mayfly never does), the shard-key flag of unsharded collections, and
/// createIndexes' early return (mayfly replies once the index is built, which is later and
/// stronger) and its top-level `v` (each index spec has its own), a map-reduce's mark, and
/// collStats' `validationLevel` (mongod reads no validation level there either).
const IGNORED: &[(&[&str], &str)] = &[
    (&["find", "aggregate", "findAndModify"], "sampleId"),
    (&["find"], "mirrored"),
    (&["find"], "allowSpeculativeMajorityRead"),
    (&["findAndModify"], "batchSize"),
    (&["findAndModify"], "singleBatch"),
    (
        &["findAndModify"],
        "$_allowShardKeyUpdatesWithoutFullShardKeyInQuery",
    ),
    (
        &["insert", "update", "delete", "findAndModify"],
        "bypassEmptyTsReplacement",
    ),
    (&["createIndexes"], "returnOnStart"),
    (&["createIndexes"], "v"),
    (&["aggregate"], "isMapReduceCommand"),
    (&["collStats"], "validationLevel"),
];

/// Whether `field` of `command` is one of the cluster's own fields, accepted or refused here.
pub fn is_known(command: &str, field: &str) -> bool {
    let command = canonical(command);
    IGNORED_GENERIC.contains(&field)
        || IGNORED
            .iter()
            .any(|(commands, f)| *f == field && commands.contains(&command))
        || RULES
            .iter()
            .any(|(commands, f, _, _)| *f == field && applies(commands, command))
}

/// Refuses the cluster's fields that ask for something mayfly does not do: 238 naming the field.
pub fn check(command: &str, body: &Document) -> Result<()> {
    let command = canonical(command);
    for (commands, field, when, asks_for) in RULES {
        if !applies(commands, command) {
            continue;
        }
        let Some(value) = body.get(*field) else {
            continue;
        };
        let refused = match when {
            When::Present => true,
            When::True => super::values::is_truthy(value),
            When::False => !super::values::is_truthy(value),
            When::NonEmpty => {
                !matches!(value, Bson::Array(a) if a.is_empty())
                    && !matches!(value, Bson::Document(d) if d.is_empty())
            }
        };
        if refused {
            return Err(Error::new(
                ErrorCode::NotImplemented,
                format!(
                    "BSON field '{command}.{field}' asks for {asks_for}, which mayfly does not support"
                ),
            ));
        }
    }
    Ok(())
}

fn applies(commands: &[&str], command: &str) -> bool {
    commands.is_empty() || commands.contains(&command)
}

/// mongod's lower-case aliases name the same command definition.
fn canonical(command: &str) -> &str {
    match command {
        "findandmodify" => "findAndModify",
        "dbstats" => "dbStats",
        "buildinfo" => "buildInfo",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn each_rule_refuses_only_what_asks_for_something() {
        let table = [
            ("find", doc! {"find": "c", "shardVersion": [1]}, true),
            ("ping", doc! {"ping": 1, "databaseVersion": {}}, true),
            (
                "insert",
                doc! {"insert": "c", "isTimeseriesNamespace": false},
                false,
            ),
            (
                "insert",
                doc! {"insert": "c", "isTimeseriesNamespace": true},
                true,
            ),
            (
                "find",
                doc! {"find": "c", "isTimeseriesNamespace": true},
                false,
            ),
            (
                "create",
                doc! {"create": "c", "allowImplicitCollectionCreation": true},
                false,
            ),
            (
                "create",
                doc! {"create": "c", "allowImplicitCollectionCreation": false},
                true,
            ),
            ("find", doc! {"find": "c", "$_resumeAfter": {}}, false),
            (
                "find",
                doc! {"find": "c", "$_resumeAfter": {"$recordId": 1}},
                true,
            ),
            (
                "createUser",
                doc! {"createUser": "u", "authenticationRestrictions": []},
                false,
            ),
            (
                "createUser",
                doc! {"createUser": "u", "authenticationRestrictions": [{"clientSource": ["1.2.3.4"]}]},
                true,
            ),
            (
                "findandmodify",
                doc! {"findandmodify": "c", "runtimeConstants": {}},
                true,
            ),
            ("count", doc! {"count": "c", "runtimeConstants": {}}, false),
        ];
        for (command, body, refused) in table {
            let result = check(command, &body);
            assert_eq!(result.is_err(), refused, "{body}");
            if let Err(e) = result {
                assert_eq!(e.code, ErrorCode::NotImplemented, "{body}");
            }
        }
    }

    #[test]
    fn known_fields_are_scoped_to_their_commands() {
        assert!(is_known("find", "$configTime"));
        assert!(is_known("findandmodify", "bypassEmptyTsReplacement"));
        assert!(is_known("insert", "collectionUUID"));
        assert!(!is_known("count", "collectionUUID"));
        assert!(!is_known("find", "returnOnStart"));
        assert!(!is_known("find", "noSuchField"));
    }

    #[test]
    fn the_write_commands_share_their_rules() {
        for command in ["insert", "update", "delete"] {
            assert!(is_known(command, "encryptionInformation"));
            assert!(is_known(command, "bypassEmptyTsReplacement"));
        }
    }
}
