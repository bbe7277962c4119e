//! The table of commands mayfly implements: the one list that dispatch, `listCommands`, the
//! admin-only and test-only checks and every per-command fact read. Each row is a command's
//! name, where it may run ([`Scope`]), what it names ([`Target`]), its [`Fact`]s and its help
//! text; nothing else in the server keeps a list of commands by name.
//!
//! Owns: the facts that are constants of a command. Does not own the facts that depend on the
//! command's arguments (an `aggregate`'s stages, an `update`'s upserts): those are read from the
//! parsed command where they are judged.

macro_rules! command_table {
    ($( $variant:ident = $name:literal, $scope:ident, $target:ident, [$($fact:ident),*], $help:literal; )*) => {
        /// A command mayfly knows, by its exact (case-sensitive) name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum CommandName {
            $($variant),*
        }

        impl CommandName {
            pub const ALL: &'static [CommandName] = &[$(CommandName::$variant),*];

            pub fn from_name(name: &str) -> Option<CommandName> {
                match name {
                    $($name => Some(CommandName::$variant),)*
                    _ => None,
                }
            }

            pub fn name(self) -> &'static str {
                match self {
                    $(CommandName::$variant => $name),*
                }
            }

            pub fn help(self) -> &'static str {
                match self {
                    $(CommandName::$variant => $help),*
                }
            }

            pub fn scope(self) -> Scope {
                match self {
                    $(CommandName::$variant => Scope::$scope),*
                }
            }

            pub fn target(self) -> Target {
                match self {
                    $(CommandName::$variant => Target::$target),*
                }
            }

            /// Whether the command's row lists `fact`.
            pub fn has(self, fact: Fact) -> bool {
                let facts: &[Fact] = match self {
                    $(CommandName::$variant => &[$(Fact::$fact),*]),*
                };
                facts.contains(&fact)
            }
        }
    };
}

impl CommandName {
    /// mongod's `op` for the command in `currentOp`, the profiler and `top`: the CRUD commands
    /// have their own, every other command is `command`.
    pub fn op_type(self) -> &'static str {
        match self {
            CommandName::Find => "query",
            CommandName::GetMore => "getmore",
            CommandName::Insert => "insert",
            CommandName::Update => "update",
            CommandName::Delete => "remove",
            _ => "command",
        }
    }
}

/// Where a command may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Any database.
    Any,
    /// Only against `admin` (13 Unauthorized elsewhere, as mongod answers).
    Admin,
    /// Only when the server was started with `--enable-test-commands`; otherwise it does not
    /// exist (59 CommandNotFound).
    Test,
    /// A test command that runs only against `admin` (TTL-23).
    TestAdmin,
}

impl Scope {
    pub fn is_test(self) -> bool {
        matches!(self, Scope::Test | Scope::TestAdmin)
    }
}

/// What a command names besides its database: the namespace `currentOp` and the profiler show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Its first field is a collection name (`{find: "c"}`).
    Collection,
    /// A cursor's collection, in its `collection` field (`getMore`).
    Cursor,
    /// The database alone (`db.$cmd`).
    Database,
}

/// A constant fact of a command, listed in its row when it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fact {
    /// May run in a multi-document transaction (mongod's `txnCmdAllowlist`, less its sharding,
    /// two-phase-commit and internal commands; 263 OperationNotSupportedInTransaction otherwise).
    InTransaction,
    /// A retryable write: may carry a `txnNumber` outside a transaction (mongod's
    /// `retryableWriteCommands`; 50768 NotARetryableWriteCommand otherwise).
    RetryableWrite,
    /// Takes a `writeConcern` (mongod's `supportsWriteConcern`); an `aggregate` ending in
    /// `$out` or `$merge` also does, which depends on its pipeline.
    WriteConcern,
    /// Anyone may run it before authenticating (mongod's `requiresAuth() == false`).
    WithoutAuth,
    /// Exists only in the Cosmos profile: mongod has no such command (59 CommandNotFound).
    CosmosOnly,
    /// A Cosmos DB account lacks it at every server version: refused there with 115.
    NotInCosmos,
    /// The Cosmos profile's request time limit does not apply: `hello` waits as long as its
    /// `maxAwaitTimeMS`, and a `getMore` is a cursor's later batch.
    NoRequestTimeLimit,
}

command_table! {
    Hello = "hello", Any, Database, [WithoutAuth, NoRequestTimeLimit], "Describes this server and negotiates the connection.";
    IsMaster = "isMaster", Any, Database, [WithoutAuth, NoRequestTimeLimit], "Legacy name of hello.";
    IsMasterLower = "ismaster", Any, Database, [WithoutAuth, NoRequestTimeLimit], "Legacy name of hello.";
    Ping = "ping", Any, Database, [WithoutAuth], "Answers {ok: 1}.";
    GetLastRequestStatistics = "getLastRequestStatistics", Any, Database, [CosmosOnly], "Cosmos profile: the request units the connection's previous command was charged (an estimate).";
    BuildInfo = "buildInfo", Any, Database, [WithoutAuth], "Version and build details.";
    BuildInfoLower = "buildinfo", Any, Database, [WithoutAuth], "Version and build details.";
    GetParameter = "getParameter", Admin, Database, [], "Reads server parameters: {getParameter: 1, <name>: 1} or {getParameter: '*'}.";
    GetLog = "getLog", Admin, Database, [], "Reads a server log: 'startupWarnings', or '*' for the names.";
    GetCmdLineOpts = "getCmdLineOpts", Admin, Database, [], "The command line and the options it resolved to.";
    HostInfo = "hostInfo", Any, Database, [NotInCosmos], "Facts about the host machine.";
    ServerStatus = "serverStatus", Any, Database, [], "Counters and state of the running server.";
    ReplSetGetStatus = "replSetGetStatus", Admin, Database, [], "Replica-set status (--replSet); a standalone answers 76 NoReplicationEnabled, as mongod.";
    ReplSetGetConfig = "replSetGetConfig", Admin, Database, [], "The replica set's configuration (--replSet).";
    ReplSetInitiate = "replSetInitiate", Admin, Database, [], "Refused: the one-member replica set is initiated at start (23 AlreadyInitialized).";
    ReplSetStepDown = "replSetStepDown", Admin, Database, [], "Refused: a one-member replica set has no electable secondary (262 ExceededTimeLimit).";
    ReplSetReconfig = "replSetReconfig", Admin, Database, [], "Refused: the one-member replica set's configuration is fixed (103).";
    WhatsMyUri = "whatsmyuri", Any, Database, [WithoutAuth], "The client's address as the server sees it.";
    ConnectionStatus = "connectionStatus", Any, Database, [WithoutAuth, NotInCosmos], "Authentication state of this connection.";
    ListCommands = "listCommands", Any, Database, [WithoutAuth, NotInCosmos], "Lists every command this server implements.";
    StartSession = "startSession", Any, Database, [], "Starts a logical session.";
    EndSessions = "endSessions", Any, Database, [WithoutAuth], "Ends logical sessions.";
    CommitTransaction = "commitTransaction", Admin, Database, [InTransaction, WriteConcern], "Commits the session's multi-document transaction.";
    AbortTransaction = "abortTransaction", Admin, Database, [InTransaction, WriteConcern], "Aborts the session's multi-document transaction.";
    RefreshSessions = "refreshSessions", Any, Database, [], "Keeps logical sessions alive.";
    KillSessions = "killSessions", Any, Database, [], "Kills logical sessions.";
    KillAllSessions = "killAllSessions", Any, Database, [], "Kills all logical sessions of the given users.";
    KillAllSessionsByPattern = "killAllSessionsByPattern", Any, Database, [], "Kills the logical sessions matching patterns.";
    SaslStart = "saslStart", Any, Database, [WithoutAuth], "Starts a SASL authentication conversation.";
    SaslContinue = "saslContinue", Any, Database, [WithoutAuth], "Continues a SASL authentication conversation.";
    Logout = "logout", Any, Database, [WithoutAuth], "Ends this connection's authentication on the database.";
    GetLastError = "getLastError", Any, Database, [WithoutAuth], "Removed in MongoDB 5.1: always fails with 5739000.";
    GetLastErrorLower = "getlasterror", Any, Database, [WithoutAuth], "Removed in MongoDB 5.1: always fails with 5739000.";
    Authenticate = "authenticate", Any, Database, [WithoutAuth], "Refused: the MONGODB-X509 and MONGODB-CR mechanisms are not enabled.";
    Insert = "insert", Any, Collection, [InTransaction, RetryableWrite, WriteConcern], "Inserts documents.";
    Find = "find", Any, Collection, [InTransaction], "Queries a collection and opens a cursor over the result.";
    GetMore = "getMore", Any, Cursor, [InTransaction, NoRequestTimeLimit], "Returns the next batch of a cursor.";
    KillCursors = "killCursors", Any, Database, [InTransaction], "Closes cursors.";
    Update = "update", Any, Collection, [InTransaction, RetryableWrite, WriteConcern], "Updates documents.";
    Delete = "delete", Any, Collection, [InTransaction, RetryableWrite, WriteConcern], "Deletes documents.";
    FindAndModify = "findAndModify", Any, Collection, [InTransaction, RetryableWrite, WriteConcern], "Updates or removes one document and returns it.";
    FindAndModifyLower = "findandmodify", Any, Collection, [InTransaction, RetryableWrite, WriteConcern], "Updates or removes one document and returns it.";
    Count = "count", Any, Collection, [], "Counts documents.";
    Distinct = "distinct", Any, Collection, [InTransaction], "Lists the distinct values of a field.";
    Aggregate = "aggregate", Any, Collection, [InTransaction], "Runs an aggregation pipeline.";
    Explain = "explain", Any, Database, [], "Describes how a find, count, distinct, aggregate, update, delete or findAndModify is (or would be) executed.";
    Create = "create", Any, Collection, [InTransaction, WriteConcern], "Creates a collection.";
    Drop = "drop", Any, Collection, [WriteConcern], "Drops a collection.";
    DropDatabase = "dropDatabase", Any, Database, [WriteConcern], "Drops a database.";
    RenameCollection = "renameCollection", Admin, Database, [WriteConcern, NotInCosmos], "Renames a collection.";
    ListCollections = "listCollections", Any, Database, [], "Lists the collections of a database.";
    ListDatabases = "listDatabases", Admin, Database, [], "Lists databases.";
    DbStats = "dbStats", Any, Database, [], "Statistics of a database.";
    DbStatsLower = "dbstats", Any, Database, [], "Statistics of a database.";
    CollStats = "collStats", Any, Collection, [], "Statistics of a collection.";
    Profile = "profile", Any, Database, [NotInCosmos], "Sets or reads the database profiler's level, slowms, sampleRate and filter.";
    Top = "top", Admin, Database, [NotInCosmos], "Time and counts of operations per collection since the server started.";
    Validate = "validate", Any, Collection, [], "Checks a collection's records, indexes, expiry keys and stored count against each other.";
    CreateIndexes = "createIndexes", Any, Collection, [InTransaction, WriteConcern], "Creates indexes.";
    ListIndexes = "listIndexes", Any, Collection, [], "Lists the indexes of a collection.";
    DropIndexes = "dropIndexes", Any, Collection, [WriteConcern], "Drops indexes.";
    CustomAction = "customAction", Any, Database, [CosmosOnly], "Cosmos profile: the account's extension commands CreateDatabase, UpdateDatabase, GetDatabase, CreateCollection, UpdateCollection and GetCollection.";
    ShardCollection = "shardCollection", Any, Database, [CosmosOnly], "Cosmos profile: gives a collection its shard key: {shardCollection: 'db.coll', key: {field: 'hashed'}}.";
    AdvanceClock = "advanceClock", TestAdmin, Database, [], "Test command: moves the server clock forward by {advanceClock: <seconds>} and reports it.";
    Reaper = "reaper", TestAdmin, Database, [], "Test command: {reaper: 'pause' | 'resume' | 'runOnce'} controls the TTL reaper.";
    CollMod = "collMod", Any, Collection, [WriteConcern, NotInCosmos], "Refused (Cosmos DB does not support collMod), except {collMod: c} alone, which changes nothing.";
    CurrentOp = "currentOp", Admin, Database, [], "Lists the operations running now: {currentOp: 1, <field>: <condition>...}.";
    KillOp = "killOp", Admin, Database, [NotInCosmos], "Asks a running operation to stop: {killOp: 1, op: <opid>}.";
    CreateUser = "createUser", Any, Database, [WriteConcern], "Creates a user of this database: {createUser: name, pwd, roles}.";
    UpdateUser = "updateUser", Any, Database, [WriteConcern], "Changes a user's password, roles, custom data or mechanisms.";
    DropUser = "dropUser", Any, Database, [WriteConcern], "Removes a user of this database.";
    DropAllUsersFromDatabase = "dropAllUsersFromDatabase", Any, Database, [WriteConcern], "Removes every user of this database.";
    UsersInfo = "usersInfo", Any, Database, [], "Describes users: {usersInfo: 1 | name | {user, db} | [...]}.";
    GrantRolesToUser = "grantRolesToUser", Any, Database, [WriteConcern], "Adds roles to a user.";
    RevokeRolesFromUser = "revokeRolesFromUser", Any, Database, [WriteConcern], "Removes roles from a user.";
    Sleep = "sleep", Test, Database, [], "Test command: sleeps for {millis: N} (or {secs: N}) milliseconds.";
    ConfigureFailPoint = "configureFailPoint", TestAdmin, Database, [], "Test command: sets the failCommand fail point: {configureFailPoint: 'failCommand', mode, data}.";
    WaitForFailPoint = "waitForFailPoint", TestAdmin, Database, [], "Test command: waits until a fail point has fired {timesEntered: N} times (maxTimeMS required).";
}

#[cfg(test)]
mod tests {
    use super::*;

    /// mongod 7.0's `txnCmdAllowlist` (`service_entry_point_common.cpp`), less the entries only
    /// a router, a shard or a two-phase commit sends (`cluster*`, `coordinateCommitTransaction`,
    /// `prepareTransaction`), which mayfly does not have.
    const MONGOD_TXN_ALLOWLIST: &[&str] = &[
        "abortTransaction",
        "aggregate",
        "commitTransaction",
        "create",
        "createIndexes",
        "delete",
        "distinct",
        "find",
        "findandmodify",
        "findAndModify",
        "getMore",
        "insert",
        "killCursors",
        "update",
    ];

    /// mongod 7.0's `retryableWriteCommands` (`transaction_validation.cpp`).
    const MONGOD_RETRYABLE_WRITES: &[&str] = &[
        "delete",
        "findandmodify",
        "findAndModify",
        "insert",
        "update",
    ];

    /// The commands of mongod 7.0 whose `requiresAuth()` is false, among those mayfly has.
    const MONGOD_WITHOUT_AUTH: &[&str] = &[
        "hello",
        "isMaster",
        "ismaster",
        "ping",
        "buildInfo",
        "buildinfo",
        "saslStart",
        "saslContinue",
        "authenticate",
        "getLastError",
        "getlasterror",
        "logout",
        "connectionStatus",
        "whatsmyuri",
        "endSessions",
        "listCommands",
    ];

    /// The commands mayfly has that take a `writeConcern` in mongod 7.0
    /// (`supportsWriteConcern() == true`), `aggregate` aside (it depends on its last stage).
    const MONGOD_WRITE_CONCERN: &[&str] = &[
        "insert",
        "update",
        "delete",
        "findAndModify",
        "findandmodify",
        "create",
        "drop",
        "dropDatabase",
        "renameCollection",
        "createIndexes",
        "dropIndexes",
        "collMod",
        "createUser",
        "updateUser",
        "dropUser",
        "dropAllUsersFromDatabase",
        "grantRolesToUser",
        "revokeRolesFromUser",
        "commitTransaction",
        "abortTransaction",
    ];

    /// Every command of the table has `fact` exactly when mongod's set names it.
    fn agrees(fact: Fact, mongod: &[&str]) {
        for command in CommandName::ALL {
            assert_eq!(
                command.has(fact),
                mongod.contains(&command.name()),
                "{fact:?} of {}",
                command.name()
            );
        }
    }

    #[test]
    fn the_commands_a_transaction_may_run_are_mongods() {
        agrees(Fact::InTransaction, MONGOD_TXN_ALLOWLIST);
        // count is not in the allow-list: drivers count in a transaction with an aggregate.
        assert!(!CommandName::Count.has(Fact::InTransaction));
    }

    #[test]
    fn the_retryable_writes_are_mongods() {
        agrees(Fact::RetryableWrite, MONGOD_RETRYABLE_WRITES);
    }

    #[test]
    fn the_commands_run_before_authenticating_are_mongods() {
        agrees(Fact::WithoutAuth, MONGOD_WITHOUT_AUTH);
    }

    #[test]
    fn the_commands_taking_a_write_concern_are_mongods() {
        agrees(Fact::WriteConcern, MONGOD_WRITE_CONCERN);
    }

    #[test]
    fn cosmos_facts_exclude_each_other_and_name_the_cosmos_commands() {
        let only: Vec<&str> = CommandName::ALL
            .iter()
            .filter(|c| c.has(Fact::CosmosOnly))
            .map(|c| c.name())
            .collect();
        assert_eq!(
            only,
            [
                "getLastRequestStatistics",
                "customAction",
                "shardCollection"
            ]
        );
        for command in CommandName::ALL {
            assert!(
                !(command.has(Fact::CosmosOnly) && command.has(Fact::NotInCosmos)),
                "{}",
                command.name()
            );
        }
    }

    #[test]
    fn targets_follow_the_shape_of_the_first_field() {
        for (command, target) in [
            (CommandName::Find, Target::Collection),
            (CommandName::Insert, Target::Collection),
            (CommandName::CollStats, Target::Collection),
            (CommandName::GetMore, Target::Cursor),
            (CommandName::ListCollections, Target::Database),
            (CommandName::DropDatabase, Target::Database),
            // Its first field is `db.collection`, not a collection name.
            (CommandName::RenameCollection, Target::Database),
            (CommandName::Ping, Target::Database),
        ] {
            assert_eq!(command.target(), target, "{}", command.name());
        }
    }
}
