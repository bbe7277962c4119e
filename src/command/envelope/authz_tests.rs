use super::*;
use bson::doc;

fn user(db: &str, name: &str, roles: &[(&str, &str)]) -> AuthenticatedUser {
    AuthenticatedUser {
        db: db.into(),
        name: name.into(),
        roles: roles.iter().map(|(r, d)| RoleName::new(*r, *d)).collect(),
    }
}

fn decide(
    users: &[AuthenticatedUser],
    localhost: bool,
    db: &str,
    body: &Document,
) -> Result<Access> {
    let name = body
        .keys()
        .next()
        .and_then(|n| CommandName::from_name(n))
        .unwrap();
    let caller = Caller {
        users,
        localhost_exception: localhost,
    };
    // Read once, as the envelope reads it before authorization.
    let parsed = ParsedCommand::parse(name, body, false).unwrap();
    authorize(&caller, name, db, (body, &parsed))
}

#[test]
fn unauthenticated_clients_run_only_the_handshake_commands() {
    for body in [
        doc! {"hello": 1},
        doc! {"isMaster": 1},
        doc! {"ismaster": 1},
        doc! {"ping": 1},
        doc! {"buildInfo": 1},
        doc! {"buildinfo": 1},
        doc! {"saslStart": 1},
        doc! {"saslContinue": 1},
        doc! {"connectionStatus": 1},
        doc! {"whatsmyuri": 1},
        doc! {"endSessions": []},
        doc! {"listCommands": 1},
    ] {
        assert_eq!(
            decide(&[], false, "admin", &body),
            Ok(Access::Allowed),
            "{body}"
        );
    }
    for (body, name) in [
        (doc! {"find": "c"}, "find"),
        (doc! {"insert": "c", "documents": []}, "insert"),
        (doc! {"listDatabases": 1}, "listDatabases"),
        (
            doc! {"createUser": "u", "pwd": "p", "roles": []},
            "createUser",
        ),
        (doc! {"usersInfo": 1}, "usersInfo"),
        (doc! {"serverStatus": 1}, "serverStatus"),
        (doc! {"startSession": 1}, "startSession"),
    ] {
        let err = decide(&[], false, "test", &body).unwrap_err();
        assert_eq!(err.code, ErrorCode::Unauthorized);
        assert_eq!(
            err.message,
            format!("Command {name} requires authentication")
        );
    }
}

#[test]
fn the_localhost_exception_allows_only_the_first_user_in_admin() {
    let create = doc! {"createUser": "root", "pwd": "p", "roles": ["root"]};
    assert_eq!(decide(&[], true, "admin", &create), Ok(Access::Allowed));
    let err = decide(&[], true, "test", &create).unwrap_err();
    assert_eq!(err.code, ErrorCode::Unauthorized);
    assert!(
        err.message.starts_with(
            "not authorized on test to execute command { createUser: \"root\", pwd: \"xxx\""
        ),
        "{}",
        err.message
    );
    // Roles of admin only: granting a role elsewhere needs a user who may.
    let elsewhere =
        doc! {"createUser": "u", "pwd": "p", "roles": [{"role": "readWrite", "db": "app"}]};
    assert_eq!(
        decide(&[], true, "admin", &elsewhere).unwrap_err().code,
        ErrorCode::Unauthorized
    );
    let any_db = doc! {"createUser": "u", "pwd": "p", "roles": ["readWriteAnyDatabase", {"role": "userAdminAnyDatabase", "db": "admin"}]};
    assert_eq!(decide(&[], true, "admin", &any_db), Ok(Access::Allowed));
    for body in [
        doc! {"startSession": 1},
        doc! {"usersInfo": 1},
        doc! {"dropUser": "u"},
    ] {
        assert!(decide(&[], true, "admin", &body).is_err(), "{body}");
    }
    let err = decide(&[], true, "test", &doc! {"find": "c"}).unwrap_err();
    assert_eq!(
        err.message,
        "not authorized on test to execute command { find: \"c\" }"
    );
}

#[test]
fn commands_need_the_privileges_mongod_asks_for() {
    let reader = [user("app", "r", &[("read", "app")])];
    let writer = [user("app", "w", &[("readWrite", "app")])];
    let admin = [user("app", "a", &[("dbAdmin", "app")])];
    let users_admin = [user("app", "ua", &[("userAdmin", "app")])];
    let monitor = [user("admin", "m", &[("clusterMonitor", "admin")])];
    let root = [user("admin", "root", &[("root", "admin")])];
    let table: &[(&[AuthenticatedUser], &str, Document, bool)] = &[
        (&reader, "app", doc! {"find": "c", "filter": {}}, true),
        (&reader, "other", doc! {"find": "c"}, false),
        (&reader, "app", doc! {"count": "c"}, true),
        (&reader, "app", doc! {"distinct": "c", "key": "a"}, true),
        (
            &reader,
            "app",
            doc! {"aggregate": "c", "pipeline": [], "cursor": {}},
            true,
        ),
        (
            &reader,
            "app",
            doc! {"getMore": 5_i64, "collection": "c"},
            true,
        ),
        (
            &reader,
            "app",
            doc! {"killCursors": "c", "cursors": [5_i64]},
            true,
        ),
        (
            &reader,
            "app",
            doc! {"getMore": 5_i64, "collection": "$cmd.listCollections"},
            true,
        ),
        (
            &admin,
            "app",
            doc! {"getMore": 5_i64, "collection": "$cmd.listCollections"},
            true,
        ),
        (
            &admin,
            "app",
            doc! {"getMore": 5_i64, "collection": "c"},
            false,
        ),
        (
            &users_admin,
            "app",
            doc! {"killCursors": "c", "cursors": [5_i64]},
            false,
        ),
        (&reader, "app", doc! {"listCollections": 1}, true),
        (&reader, "app", doc! {"listIndexes": "c"}, true),
        (&reader, "app", doc! {"dbStats": 1}, true),
        (&reader, "app", doc! {"collStats": "c"}, true),
        (
            &reader,
            "app",
            doc! {"aggregate": "c", "pipeline": [{"$collStats": {}}], "cursor": {}},
            true,
        ),
        (&reader, "app", doc! {"explain": {"find": "c"}}, true),
        (
            &reader,
            "app",
            doc! {"explain": {"delete": "c", "deletes": []}},
            false,
        ),
        (&reader, "app", doc! {"insert": "c", "documents": []}, false),
        (&reader, "app", doc! {"update": "c", "updates": []}, false),
        (&reader, "app", doc! {"delete": "c", "deletes": []}, false),
        (
            &reader,
            "app",
            doc! {"findAndModify": "c", "update": {}},
            false,
        ),
        (&reader, "app", doc! {"create": "c"}, false),
        (&reader, "app", doc! {"drop": "c"}, false),
        (
            &reader,
            "app",
            doc! {"createIndexes": "c", "indexes": []},
            false,
        ),
        (&reader, "app", doc! {"dropDatabase": 1}, false),
        (&reader, "admin", doc! {"serverStatus": 1}, false),
        (&reader, "app", doc! {"usersInfo": 1}, false),
        (&reader, "app", doc! {"startSession": 1}, true),
        (&writer, "app", doc! {"insert": "c", "documents": []}, true),
        (
            &writer,
            "app",
            doc! {"update": "c", "updates": [{"q": {}, "u": {}, "upsert": true}]},
            true,
        ),
        (&writer, "app", doc! {"delete": "c", "deletes": []}, true),
        (
            &writer,
            "app",
            doc! {"findAndModify": "c", "remove": true},
            true,
        ),
        (&writer, "app", doc! {"create": "c"}, true),
        (&writer, "app", doc! {"drop": "c"}, true),
        (
            &writer,
            "app",
            doc! {"createIndexes": "c", "indexes": []},
            true,
        ),
        (
            &writer,
            "app",
            doc! {"dropIndexes": "c", "index": "*"},
            true,
        ),
        (
            &writer,
            "app",
            doc! {"explain": {"delete": "c", "deletes": []}},
            true,
        ),
        (&writer, "app", doc! {"dropDatabase": 1}, false),
        (&writer, "app", doc! {"collMod": "c"}, false),
        (
            &writer,
            "admin",
            doc! {"renameCollection": "app.a", "to": "app.b"},
            true,
        ),
        (
            &writer,
            "admin",
            doc! {"renameCollection": "app.a", "to": "other.b"},
            false,
        ),
        (
            &writer,
            "app",
            doc! {"createUser": "x", "pwd": "p", "roles": []},
            false,
        ),
        (&admin, "app", doc! {"find": "c"}, false),
        (&admin, "app", doc! {"dropDatabase": 1}, true),
        (&admin, "app", doc! {"collMod": "c"}, true),
        (
            &admin,
            "app",
            doc! {"createIndexes": "c", "indexes": []},
            true,
        ),
        (
            &users_admin,
            "app",
            doc! {"createUser": "x", "pwd": "p", "roles": ["read"]},
            true,
        ),
        (
            &users_admin,
            "app",
            doc! {"createUser": "x", "pwd": "p", "roles": [{"role": "read", "db": "other"}]},
            false,
        ),
        (&users_admin, "app", doc! {"dropUser": "x"}, true),
        (&users_admin, "app", doc! {"usersInfo": 1}, true),
        (
            &users_admin,
            "app",
            doc! {"usersInfo": {"forAllDBs": true}},
            false,
        ),
        (
            &users_admin,
            "app",
            doc! {"grantRolesToUser": "x", "roles": ["readWrite"]},
            true,
        ),
        (
            &users_admin,
            "app",
            doc! {"revokeRolesFromUser": "x", "roles": ["readWrite"]},
            true,
        ),
        (
            &users_admin,
            "app",
            doc! {"updateUser": "x", "pwd": "new"},
            true,
        ),
        (&users_admin, "app", doc! {"find": "c"}, false),
        (&monitor, "admin", doc! {"serverStatus": 1}, true),
        (&monitor, "admin", doc! {"getLog": "startupWarnings"}, true),
        (&monitor, "admin", doc! {"currentOp": 1}, true),
        (
            &monitor,
            "admin",
            doc! {"aggregate": 1, "pipeline": [{"$currentOp": {}}], "cursor": {}},
            true,
        ),
        (&monitor, "admin", doc! {"killOp": 1, "op": 3}, false),
        (&monitor, "admin", doc! {"listDatabases": 1}, true),
        (&monitor, "admin", doc! {"replSetGetStatus": 1}, true),
        (&monitor, "admin", doc! {"replSetGetConfig": 1}, true),
        (&monitor, "admin", doc! {"replSetStepDown": 60}, false),
        (&monitor, "admin", doc! {"replSetReconfig": {}}, false),
        (&monitor, "admin", doc! {"replSetInitiate": {}}, false),
        (&root, "admin", doc! {"replSetStepDown": 60}, true),
        (&root, "admin", doc! {"replSetInitiate": {}}, true),
        (&reader, "admin", doc! {"replSetGetConfig": 1}, false),
        (&monitor, "app", doc! {"find": "c"}, false),
        (&root, "app", doc! {"find": "c"}, true),
        (&root, "admin", doc! {"killOp": 1, "op": 3}, true),
        (&root, "admin", doc! {"advanceClock": 1}, true),
        (&writer, "admin", doc! {"advanceClock": 1}, false),
    ];
    for (users, db, body, allowed) in table {
        let result = decide(users, false, db, body);
        if *allowed {
            assert!(
                result.is_ok(),
                "{body} on {db} by {:?}: {result:?}",
                users[0].roles
            );
        } else {
            let err = result.unwrap_err();
            assert_eq!(err.code, ErrorCode::Unauthorized, "{body}");
            assert!(
                err.message
                    .starts_with(&format!("not authorized on {db} to execute command {{ ")),
                "{}",
                err.message
            );
        }
    }
}

#[test]
fn users_may_look_at_and_change_themselves() {
    let me = [user("app", "me", &[("read", "app")])];
    for body in [
        doc! {"usersInfo": "me"},
        doc! {"usersInfo": {"user": "me", "db": "app"}},
        doc! {"usersInfo": ["me"]},
        doc! {"updateUser": "me", "pwd": "new"},
        doc! {"updateUser": "me", "customData": {"x": 1}},
    ] {
        assert_eq!(
            decide(&me, false, "app", &body),
            Ok(Access::Allowed),
            "{body}"
        );
    }
    for body in [
        doc! {"usersInfo": "other"},
        doc! {"usersInfo": ["me", "other"]},
        doc! {"updateUser": "me", "roles": ["readWrite"]},
        doc! {"updateUser": "other", "pwd": "new"},
    ] {
        assert!(decide(&me, false, "app", &body).is_err(), "{body}");
    }
}

#[test]
fn list_databases_without_the_action_shows_the_users_databases() {
    let reader = [user("app", "r", &[("read", "app")])];
    assert_eq!(
        decide(&reader, false, "admin", &doc! {"listDatabases": 1}),
        Ok(Access::OnlyDatabasesOf(vec![RoleName::new("read", "app")]))
    );
    let err = decide(
        &reader,
        false,
        "admin",
        &doc! {"listDatabases": 1, "authorizedDatabases": false},
    )
    .unwrap_err();
    assert_eq!(err.code, ErrorCode::Unauthorized);
    let reply = Reply::Document(doc! {
        "databases": [
            {"name": "app", "sizeOnDisk": 10_i64, "empty": false},
            {"name": "other", "sizeOnDisk": 20_i64, "empty": false},
        ],
        "totalSize": 30_i64,
        "totalSizeMb": 0_i64,
        "ok": 1.0,
    });
    let Reply::Document(filtered) = only_databases_of(&[RoleName::new("read", "app")], reply)
    else {
        panic!("a document reply stays a document");
    };
    assert_eq!(filtered.get_array("databases").unwrap().len(), 1);
    assert_eq!(filtered.get_i64("totalSize").unwrap(), 10);
}

#[test]
fn shown_commands_are_bounded_and_hide_passwords() {
    let mut deep = doc! {"x": 1};
    for _ in 0..50 {
        deep = doc! {"d": deep};
    }
    let err = not_authorized("test", &doc! {"find": "c", "filter": deep, "pwd": "secret"});
    assert!(err.message.contains("{ ... }"), "{}", err.message);
    assert!(!err.message.contains("secret"));
}

#[test]
fn startup_warnings_follow_auth_and_binding() {
    // No account user: its key has a warning of its own (the next test).
    let mut config = Config {
        cosmos_account: None,
        ..Config::default()
    };
    assert!(
        startup_warnings(&config, false).is_empty(),
        "loopback, auth off"
    );
    config.bind_ips = vec!["0.0.0.0".into()];
    let warnings = startup_warnings(&config, false);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].starts_with("Access control is not enabled for the database."));
    config.auth = true;
    assert_eq!(
        startup_warnings(&config, false).len(),
        1,
        "auth on, no users"
    );
    assert!(startup_warnings(&config, true).is_empty());
}

#[test]
fn the_published_emulator_key_beyond_localhost_is_warned_about() {
    let published = || Config {
        cosmos_account: Some("localhost".into()),
        ..Config::default()
    };
    let own_key = || Config {
        cosmos_key: crate::config::Secret::new("my own key"),
        ..published()
    };
    let no_account = || Config {
        cosmos_account: None,
        ..published()
    };
    // (configuration, auth, bind addresses, warned about the key)
    let table: [(Config, bool, &[&str], bool); 7] = [
        (published(), true, &["0.0.0.0"], true),
        (published(), true, &["127.0.0.1", "10.0.0.5"], true),
        (published(), true, &["127.0.0.1", "::1", "localhost"], false),
        (published(), false, &["0.0.0.0"], false),
        (own_key(), true, &["0.0.0.0"], false),
        (no_account(), true, &["0.0.0.0"], false),
        (published(), true, &["::"], true),
    ];
    for (mut config, auth, binds, want) in table {
        config.auth = auth;
        config.bind_ips = binds.iter().map(|b| b.to_string()).collect();
        let warned = startup_warnings(&config, true)
            .iter()
            .any(|w| w.contains("the emulator's published key"));
        assert_eq!(
            warned, want,
            "auth {auth}, {binds:?}, {:?}",
            config.cosmos_account
        );
    }
}

#[test]
fn pipeline_stages_need_privileges_on_what_they_read_and_write() {
    let reader = [user("app", "r", &[("read", "app")])];
    let writer = [user("app", "w", &[("readWrite", "app")])];
    let read_one_db = [user("app", "r2", &[("read", "app"), ("read", "other")])];
    let table: &[(&[AuthenticatedUser], Document, bool)] = &[
        (
            &reader,
            doc! {"aggregate": "c", "pipeline": [{"$out": "t"}], "cursor": {}},
            false,
        ),
        (
            &writer,
            doc! {"aggregate": "c", "pipeline": [{"$out": "t"}], "cursor": {}},
            true,
        ),
        (
            &reader,
            doc! {"aggregate": "c", "pipeline": [{"$merge": {"into": "t"}}], "cursor": {}},
            false,
        ),
        (
            &writer,
            doc! {"aggregate": "c", "pipeline": [{"$merge": {"into": {"db": "other", "coll": "t"}}}], "cursor": {}},
            false,
        ),
        (
            &reader,
            doc! {"aggregate": "c", "pipeline": [{"$lookup": {"from": "d", "as": "x", "pipeline": [{"$unionWith": "e"}]}}], "cursor": {}},
            true,
        ),
        (
            &read_one_db,
            doc! {"aggregate": "c", "pipeline": [{"$out": {"db": "other", "coll": "t"}}], "cursor": {}},
            false,
        ),
        // Nested inside $facet, a write stage still counts (the stage itself refuses it later).
        (
            &reader,
            doc! {"aggregate": "c", "pipeline": [{"$facet": {"a": [{"$merge": "t"}]}}], "cursor": {}},
            false,
        ),
        // An explained aggregate's stages, as the explain's parse read them.
        (
            &reader,
            doc! {"explain": {"aggregate": "c", "pipeline": [{"$out": "t"}], "cursor": {}}},
            false,
        ),
        (
            &writer,
            doc! {"explain": {"aggregate": "c", "pipeline": [{"$out": "t"}], "cursor": {}}},
            true,
        ),
        (
            &reader,
            doc! {"explain": {"aggregate": "c", "pipeline": [{"$lookup": {"from": "d", "as": "x", "pipeline": []}}], "cursor": {}}},
            true,
        ),
        (
            &read_one_db,
            doc! {"explain": {"aggregate": "c", "pipeline": [{"$unionWith": {"coll": "t", "pipeline": []}}], "cursor": {}}},
            true,
        ),
    ];
    for (users, body, allowed) in table {
        let decision = decide(users, false, "app", body);
        assert_eq!(decision.is_ok(), *allowed, "{body}");
    }
}

#[test]
fn db_admin_runs_the_profiler_and_reads_its_collection_only() {
    let admin = [user("app", "a", &[("dbAdmin", "app")])];
    for body in [
        doc! {"profile": 2},
        doc! {"find": "system.profile"},
        doc! {"aggregate": "system.profile", "pipeline": [], "cursor": {}},
        doc! {"drop": "system.profile"},
    ] {
        assert!(decide(&admin, false, "app", &body).is_ok(), "{body}");
    }
    for (db, body) in [
        ("app", doc! {"find": "other"}),
        ("app", doc! {"find": "system.users"}),
        ("shop", doc! {"find": "system.profile"}),
        ("admin", doc! {"top": 1}),
    ] {
        assert_eq!(
            decide(&admin, false, db, &body).unwrap_err().code,
            ErrorCode::Unauthorized,
            "{db} {body}"
        );
    }
    let any = [user("admin", "a", &[("dbAdminAnyDatabase", "admin")])];
    assert!(decide(&any, false, "shop", &doc! {"find": "system.profile"}).is_ok());
    let monitor = [user("admin", "m", &[("clusterMonitor", "admin")])];
    assert!(decide(&monitor, false, "admin", &doc! {"top": 1}).is_ok());
    let reader = [user("app", "r", &[("read", "app")])];
    assert!(decide(&reader, false, "app", &doc! {"profile": -1}).is_err());
}

#[test]
fn a_writes_needs_are_read_from_its_parse() {
    use crate::auth::roles::Action as A;
    let insert_on_c = |body: &Document| {
        let name = CommandName::from_name(body.keys().next().unwrap()).unwrap();
        let parsed = ParsedCommand::parse(name, body, false).unwrap();
        let c = Resource::Collection {
            db: "app",
            collection: "c",
        };
        needs(name, "app", (body, Some(&parsed)), 0)
            .iter()
            .any(|(resource, actions)| *resource == c && actions.contains(&A::Insert))
    };
    let cases = [
        (
            doc! {"update": "c", "updates": [{"q": {}, "u": {}}, {"q": {}, "u": {}, "upsert": 1}]},
            true,
        ),
        (
            doc! {"update": "c", "updates": [{"q": {}, "u": {}, "upsert": false}]},
            false,
        ),
        (
            doc! {"findAndModify": "c", "update": {}, "upsert": true},
            true,
        ),
        (doc! {"findAndModify": "c", "remove": true}, false),
        (
            doc! {"explain": {"update": "c", "updates": [{"q": {}, "u": {}, "upsert": true}]}},
            true,
        ),
        (
            doc! {"explain": {"findandmodify": "c", "update": {}}},
            false,
        ),
    ];
    for (body, needs_insert) in cases {
        assert_eq!(insert_on_c(&body), needs_insert, "{body}");
    }
}
