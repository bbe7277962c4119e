//! Fields mongod 7.0's command definitions (its IDL files) know, on the commands mayfly
//! implements, that mayfly once called unknown (40415): each is now accepted (and ignored where
//! it means nothing on one node) or refused with 238 by name, where it asks for a sharded
//! cluster's, queryable encryption's or a tenant's machinery. The table is the one in
//! docs/compatibility.md ("Fields only mongod's own cluster sends"); a test checks that the two
//! list the same fields.

use crate::common;

use bson::{doc, spec::BinarySubtype, Binary, Bson, Document};
use common::{error_code, TestServer};

fn uuid() -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Uuid,
        bytes: vec![7; 16],
    })
}

/// What mayfly answers a command carrying the field.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// ok: 1 — accepted (and ignored).
    Accepted,
    /// 238 NotImplemented naming the field.
    Refused,
}

/// A command on collection `c` (which holds `{_id: 1}`) with one extra field.
fn command(name: &str, field: &str, value: Bson) -> Document {
    let mut cmd = match name {
        "find" => doc! {"find": "c", "filter": {}},
        "count" => doc! {"count": "c"},
        "aggregate" => doc! {"aggregate": "c", "pipeline": [], "cursor": {}},
        "insert" => doc! {"insert": "c", "documents": [{}]},
        "update" => doc! {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 1}}}]},
        "delete" => doc! {"delete": "c", "deletes": [{"q": {"_id": 99}, "limit": 1}]},
        "findAndModify" => {
            doc! {"findAndModify": "c", "query": {"_id": 1}, "update": {"$set": {"y": 1}}}
        }
        "drop" => doc! {"drop": "gone"},
        "renameCollection" => doc! {"renameCollection": "fields.nothere", "to": "fields.other"},
        "createIndexes" => {
            doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]}
        }
        "dropIndexes" => doc! {"dropIndexes": "c", "index": "*"},
        "listIndexes" => doc! {"listIndexes": "c"},
        "collStats" => doc! {"collStats": "c"},
        "createUser" => doc! {"createUser": "u", "pwd": "p", "roles": []},
        "updateUser" => doc! {"updateUser": "u", "pwd": "q"},
        "create" => doc! {"create": "made"},
        other => panic!("no template for {other}"),
    };
    cmd.insert(field, value);
    cmd
}

/// (command, field, value, expected). Every field mongod 7.0 knows that only its cluster sends.
fn table() -> Vec<(&'static str, &'static str, Bson, Expect)> {
    use Expect::{Accepted, Refused};
    let t = Bson::Boolean(true);
    let f = Bson::Boolean(false);
    let obj = Bson::Document(doc! {"x": 1});
    let mut rows = vec![
        // Generic: ignored.
        ("count", "stmtId", Bson::Int32(0), Accepted),
        ("count", "$queryOptions", Bson::Document(doc! {}), Accepted),
        ("count", "tracking_info", obj.clone(), Accepted),
        (
            "count",
            "$configTime",
            Bson::Timestamp(bson::Timestamp {
                time: 1,
                increment: 1,
            }),
            Accepted,
        ),
        (
            "count",
            "$topologyTime",
            Bson::Timestamp(bson::Timestamp {
                time: 1,
                increment: 1,
            }),
            Accepted,
        ),
        ("count", "$configServerState", obj.clone(), Accepted),
        ("count", "$replData", Bson::Int32(1), Accepted),
        ("count", "$oplogQueryData", Bson::Int32(1), Accepted),
        ("count", "coordinator", t.clone(), Accepted),
        // Generic: refused.
        ("count", "shardVersion", obj.clone(), Refused),
        ("find", "databaseVersion", obj.clone(), Refused),
        ("count", "txnRetryCounter", Bson::Int32(1), Refused),
        ("find", "maxTimeMSOpOnly", Bson::Int32(1000), Refused),
        (
            "find",
            "$tenant",
            Bson::ObjectId(bson::oid::ObjectId::new()),
            Refused,
        ),
        (
            "create",
            "allowImplicitCollectionCreation",
            f.clone(),
            Refused,
        ),
        (
            "create",
            "allowImplicitCollectionCreation",
            t.clone(),
            Accepted,
        ),
        ("count", "expectPrefix", t.clone(), Refused),
        ("count", "expectPrefix", f.clone(), Accepted),
        // find.
        ("find", "allowSpeculativeMajorityRead", t.clone(), Accepted),
        ("find", "mirrored", t.clone(), Accepted),
        ("find", "sampleId", uuid(), Accepted),
        ("find", "$_requestResumeToken", t.clone(), Refused),
        ("find", "$_requestResumeToken", f.clone(), Accepted),
        ("find", "$_resumeAfter", obj.clone(), Refused),
        ("find", "$_resumeAfter", Bson::Document(doc! {}), Accepted),
        ("find", "$_startAt", obj.clone(), Refused),
        // aggregate.
        ("aggregate", "sampleId", uuid(), Accepted),
        ("aggregate", "stmtId", Bson::Int32(0), Accepted),
        ("aggregate", "isMapReduceCommand", f.clone(), Accepted),
        (
            "aggregate",
            "$_requestReshardingResumeToken",
            t.clone(),
            Refused,
        ),
        ("aggregate", "exchange", obj.clone(), Refused),
        ("aggregate", "$_passthroughToShard", obj.clone(), Refused),
        ("aggregate", "$_generateV2ResumeTokens", t.clone(), Refused),
        (
            "aggregate",
            "$_externalDataSources",
            Bson::Array(vec![obj.clone()]),
            Refused,
        ),
        (
            "aggregate",
            "$_isClusterQueryWithoutShardKeyCmd",
            t.clone(),
            Refused,
        ),
        ("aggregate", "fromMongos", t.clone(), Refused),
        ("aggregate", "needsMerge", t.clone(), Refused),
        // findAndModify.
        ("findAndModify", "batchSize", Bson::Int32(1), Accepted),
        ("findAndModify", "singleBatch", t.clone(), Accepted),
        ("findAndModify", "sampleId", uuid(), Accepted),
        (
            "findAndModify",
            "$_allowShardKeyUpdatesWithoutFullShardKeyInQuery",
            t.clone(),
            Accepted,
        ),
        ("findAndModify", "$_originalQuery", obj.clone(), Refused),
        ("findAndModify", "$_originalCollation", obj.clone(), Refused),
        // createIndexes, collStats, createUser.
        ("createIndexes", "v", Bson::Int32(2), Accepted),
        ("createIndexes", "returnOnStart", t.clone(), Accepted),
        (
            "collStats",
            "validationLevel",
            Bson::String("strict".into()),
            Accepted,
        ),
        (
            "createUser",
            "authenticationRestrictions",
            Bson::Array(vec![]),
            Accepted,
        ),
        (
            "createUser",
            "authenticationRestrictions",
            Bson::Array(vec![Bson::Document(doc! {"clientSource": ["127.0.0.1"]})]),
            Refused,
        ),
        (
            "updateUser",
            "authenticationRestrictions",
            Bson::Array(vec![Bson::Document(doc! {"clientSource": ["127.0.0.1"]})]),
            Refused,
        ),
    ];
    for name in ["insert", "update", "delete", "findAndModify"] {
        rows.push((name, "bypassEmptyTsReplacement", t.clone(), Accepted));
        rows.push((name, "encryptionInformation", obj.clone(), Refused));
    }
    rows.push(("count", "encryptionInformation", obj.clone(), Refused));
    rows.push(("find", "encryptionInformation", obj.clone(), Refused));
    rows.push(("aggregate", "encryptionInformation", obj.clone(), Refused));
    for name in ["find", "aggregate", "update", "delete", "findAndModify"] {
        rows.push((name, "runtimeConstants", obj.clone(), Refused));
    }
    for name in [
        "find",
        "aggregate",
        "insert",
        "update",
        "delete",
        "drop",
        "renameCollection",
        "createIndexes",
        "dropIndexes",
    ] {
        rows.push((name, "collectionUUID", uuid(), Refused));
    }
    for name in [
        "insert",
        "update",
        "delete",
        "listIndexes",
        "createIndexes",
        "dropIndexes",
    ] {
        rows.push((name, "isTimeseriesNamespace", t.clone(), Refused));
        rows.push((name, "isTimeseriesNamespace", f.clone(), Accepted));
    }
    rows
}

#[tokio::test]
async fn every_field_mongod_knows_is_accepted_or_refused_by_name() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let db = client.database("fields");
    let admin = client.database("admin");
    let mut failures = Vec::new();
    for (name, field, value, expected) in table() {
        db.collection::<Document>("c").drop().await.unwrap();
        db.collection::<Document>("c")
            .insert_one(doc! {"_id": 1})
            .await
            .unwrap();
        let _ = db.run_command(doc! {"dropUser": "u"}).await;
        let cmd = command(name, field, value.clone());
        let target = if name == "renameCollection" {
            &admin
        } else {
            &db
        };
        let outcome = target.run_command(cmd.clone()).await;
        let got = match &outcome {
            Ok(reply) if reply.get("ok") == Some(&Bson::Double(1.0)) => Some(Expect::Accepted),
            Err(e) if error_code(e) == Some(238) && e.to_string().contains(field) => {
                Some(Expect::Refused)
            }
            _ => None,
        };
        if got != Some(expected) {
            failures.push(format!("{cmd}: expected {expected:?}, got {outcome:?}"));
        }
    }
    // The update statement's own field, known to mongod 7.0 by its `$_` name.
    let statement = doc! {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"z": 1}},
    "$_allowShardKeyUpdatesWithoutFullShardKeyInQuery": true}]};
    let reply = db.run_command(statement).await.unwrap();
    assert_eq!(reply.get_i32("n"), Ok(1), "{reply}");
    // A statement's constants and a router's supplied upsert would change what it does.
    for (field, value, code) in [
        ("c", Bson::Document(doc! {"k": 1}), Some(238)),
        ("c", Bson::Document(doc! {}), None),
        ("upsertSupplied", Bson::Boolean(true), Some(238)),
        ("upsertSupplied", Bson::Boolean(false), None),
    ] {
        let mut stmt = doc! {"q": {"_id": 1}, "u": {"$set": {"w": 1}}};
        stmt.insert(field, value);
        let outcome = db
            .run_command(doc! {"update": "c", "updates": [stmt]})
            .await;
        assert_eq!(
            outcome.as_ref().err().and_then(error_code),
            code,
            "{field}: {outcome:?}"
        );
    }
    // Generic fields reach commands that check no fields of their own too.
    let err = admin
        .run_command(doc! {"ping": 1, "shardVersion": [1]})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(238), "{err}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_documentation_lists_the_same_fields() {
    let docs = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/compatibility.md"
    ))
    .unwrap();
    let section = docs
        .split("## Fields only mongod's own cluster sends")
        .nth(1)
        .expect("the section exists")
        .split("\n## ")
        .next()
        .unwrap();
    // Rows: | `field` | commands | accepted/refused | why |
    let mut documented = std::collections::BTreeSet::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let field = cells[1].trim_matches('`');
        for command in cells[2].split(", ") {
            documented.insert((command.trim_matches('`').to_string(), field.to_string()));
        }
    }
    // A generic field is documented once, for "any command".
    let expected: std::collections::BTreeSet<(String, String)> = table()
        .into_iter()
        .map(|(c, f, _, _)| {
            let c = if is_generic(f) { "any command" } else { c };
            (c.to_string(), f.to_string())
        })
        .collect();
    assert_eq!(documented, expected);
}

/// The generic fields (mongod's `generic_argument.idl`) among the table's.
fn is_generic(field: &str) -> bool {
    [
        "stmtId",
        "$queryOptions",
        "tracking_info",
        "$configTime",
        "$topologyTime",
        "$configServerState",
        "$replData",
        "$oplogQueryData",
        "coordinator",
        "shardVersion",
        "databaseVersion",
        "txnRetryCounter",
        "maxTimeMSOpOnly",
        "$tenant",
        "allowImplicitCollectionCreation",
        "expectPrefix",
    ]
    .contains(&field)
}

#[tokio::test]
async fn index_fields_drivers_can_send_are_honoured_or_refused() {
    let server = TestServer::start().await;
    let db = server.client().await.database("fields");
    // ignoreUnknownIndexOptions: true drops the unknown option instead of refusing the index.
    let spec = doc! {"key": {"a": 1}, "name": "a_1", "notAnOption": 1};
    let err = db
        .run_command(doc! {"createIndexes": "c", "indexes": [spec.clone()]})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(197), "{err}");
    db.run_command(
        doc! {"createIndexes": "c", "indexes": [spec], "ignoreUnknownIndexOptions": true},
    )
    .await
    .unwrap();
    let listed = db.run_command(doc! {"listIndexes": "c"}).await.unwrap();
    let batch = listed
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let a = batch
        .iter()
        .filter_map(Bson::as_document)
        .find(|i| i.get_str("name") == Ok("a_1"))
        .expect("a_1 is listed");
    assert!(!a.contains_key("notAnOption"), "{a}");
    // listIndexes' build flags change the listing's shape: refused when true, accepted when false.
    for flag in ["includeBuildUUIDs", "includeIndexBuildInfo"] {
        let err = db
            .run_command(doc! {"listIndexes": "c", flag: true})
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(115), "{err}");
        db.run_command(doc! {"listIndexes": "c", flag: false})
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn commands_mongod_does_not_check_ignore_fields_they_do_not_know() {
    let server = TestServer::start_replset("rs0").await;
    let admin = server.replset_client("rs0").await.database("admin");
    for cmd in [
        doc! {"replSetGetStatus": 1, "notAField": 1},
        doc! {"replSetGetConfig": 1, "notAField": 1},
        doc! {"waitForFailPoint": "failCommand", "timesEntered": 0, "maxTimeMS": 1000, "notAField": 1},
    ] {
        let reply = admin.run_command(cmd.clone()).await;
        assert!(reply.is_ok(), "{cmd}: {reply:?}");
    }
    // A change stream's collation applies to its later stages: refused unless simple.
    let stream = |collation: Document| {
        doc! {"aggregate": 1, "pipeline": [{"$changeStream": {"allChangesForCluster": true}}],
        "cursor": {}, "collation": collation}
    };
    let err = admin
        .run_command(stream(doc! {"locale": "en", "strength": 2}))
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(238), "{err}");
    admin
        .run_command(stream(doc! {"locale": "simple"}))
        .await
        .unwrap();
    // $collStats' storageStats is not strict either.
    let fields = admin.client().database("fields");
    fields
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap();
    fields
        .run_command(doc! {"aggregate": "c", "pipeline": [
        {"$collStats": {"storageStats": {"scale": 1, "notAField": 1}}}], "cursor": {}})
        .await
        .unwrap();
    // A one-member set has no one to step down to: mongod's own refusal, not an unknown field.
    let err = admin
        .run_command(doc! {"replSetStepDown": 1, "notAField": 1})
        .await
        .unwrap_err();
    assert_ne!(error_code(&err), Some(40415), "{err}");
    assert!(error_code(&err).is_some(), "{err}");
}

#[tokio::test]
async fn users_info_shows_the_authentication_restrictions_it_keeps_none_of() {
    let server = TestServer::start().await;
    let db = server.client().await.database("fields");
    db.run_command(doc! {"createUser": "ada", "pwd": "pw", "roles": []})
        .await
        .unwrap();
    let shown = |extra: Document| {
        let mut cmd = doc! {"usersInfo": "ada"};
        cmd.extend(extra);
        cmd
    };
    let users = |reply: Document| {
        reply.get_array("users").unwrap()[0]
            .as_document()
            .unwrap()
            .clone()
    };
    let plain = users(db.run_command(shown(doc! {})).await.unwrap());
    assert!(!plain.contains_key("authenticationRestrictions"), "{plain}");
    let with = users(
        db.run_command(shown(doc! {"showAuthenticationRestrictions": true}))
            .await
            .unwrap(),
    );
    assert_eq!(
        with.get_array("authenticationRestrictions"),
        Ok(&vec![]),
        "{with}"
    );
    let both = users(
        db.run_command(shown(
            doc! {"showAuthenticationRestrictions": true, "showPrivileges": true},
        ))
        .await
        .unwrap(),
    );
    assert_eq!(
        both.get_array("inheritedAuthenticationRestrictions"),
        Ok(&vec![]),
        "{both}"
    );
    // As for privileges, restrictions need an exact-match query.
    let err = db
        .run_command(doc! {"usersInfo": 1, "showAuthenticationRestrictions": true})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(20), "{err}");
}
