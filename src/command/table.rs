//! The table of commands mayfly implements: the one list that dispatch, `listCommands` and the
//! admin-only and test-only checks all read.

macro_rules! command_table {
    ($( $variant:ident = $name:literal, $scope:ident, $help:literal; )*) => {
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
        }
    };
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

command_table! {
    Hello = "hello", Any, "Describes this server and negotiates the connection.";
    IsMaster = "isMaster", Any, "Legacy name of hello.";
    IsMasterLower = "ismaster", Any, "Legacy name of hello.";
    Ping = "ping", Any, "Answers {ok: 1}.";
    GetLastRequestStatistics = "getLastRequestStatistics", Any, "Cosmos profile: the request units the connection's previous command was charged (an estimate).";
    BuildInfo = "buildInfo", Any, "Version and build details.";
    BuildInfoLower = "buildinfo", Any, "Version and build details.";
    GetParameter = "getParameter", Admin, "Reads server parameters: {getParameter: 1, <name>: 1} or {getParameter: '*'}.";
    GetLog = "getLog", Admin, "Reads a server log: 'startupWarnings', or '*' for the names.";
    GetCmdLineOpts = "getCmdLineOpts", Admin, "The command line and the options it resolved to.";
    HostInfo = "hostInfo", Any, "Facts about the host machine.";
    ServerStatus = "serverStatus", Any, "Counters and state of the running server.";
    ReplSetGetStatus = "replSetGetStatus", Admin, "Replica-set status (--replSet); a standalone answers 76 NoReplicationEnabled, as mongod.";
    ReplSetGetConfig = "replSetGetConfig", Admin, "The replica set's configuration (--replSet).";
    ReplSetInitiate = "replSetInitiate", Admin, "Refused: the one-member replica set is initiated at start (23 AlreadyInitialized).";
    ReplSetStepDown = "replSetStepDown", Admin, "Refused: a one-member replica set has no electable secondary (262 ExceededTimeLimit).";
    ReplSetReconfig = "replSetReconfig", Admin, "Refused: the one-member replica set's configuration is fixed (103).";
    WhatsMyUri = "whatsmyuri", Any, "The client's address as the server sees it.";
    ConnectionStatus = "connectionStatus", Any, "Authentication state of this connection.";
    ListCommands = "listCommands", Any, "Lists every command this server implements.";
    StartSession = "startSession", Any, "Starts a logical session.";
    EndSessions = "endSessions", Any, "Ends logical sessions.";
    CommitTransaction = "commitTransaction", Admin, "Commits the session's multi-document transaction.";
    AbortTransaction = "abortTransaction", Admin, "Aborts the session's multi-document transaction.";
    RefreshSessions = "refreshSessions", Any, "Keeps logical sessions alive.";
    KillSessions = "killSessions", Any, "Kills logical sessions.";
    KillAllSessions = "killAllSessions", Any, "Kills all logical sessions of the given users.";
    KillAllSessionsByPattern = "killAllSessionsByPattern", Any, "Kills the logical sessions matching patterns.";
    SaslStart = "saslStart", Any, "Starts a SASL authentication conversation.";
    SaslContinue = "saslContinue", Any, "Continues a SASL authentication conversation.";
    Logout = "logout", Any, "Ends this connection's authentication on the database.";
    GetLastError = "getLastError", Any, "Removed in MongoDB 5.1: always fails with 5739000.";
    GetLastErrorLower = "getlasterror", Any, "Removed in MongoDB 5.1: always fails with 5739000.";
    Authenticate = "authenticate", Any, "Refused: the MONGODB-X509 and MONGODB-CR mechanisms are not enabled.";
    Insert = "insert", Any, "Inserts documents.";
    Find = "find", Any, "Queries a collection and opens a cursor over the result.";
    GetMore = "getMore", Any, "Returns the next batch of a cursor.";
    KillCursors = "killCursors", Any, "Closes cursors.";
    Update = "update", Any, "Updates documents.";
    Delete = "delete", Any, "Deletes documents.";
    FindAndModify = "findAndModify", Any, "Updates or removes one document and returns it.";
    FindAndModifyLower = "findandmodify", Any, "Updates or removes one document and returns it.";
    Count = "count", Any, "Counts documents.";
    Distinct = "distinct", Any, "Lists the distinct values of a field.";
    Aggregate = "aggregate", Any, "Runs an aggregation pipeline.";
    Explain = "explain", Any, "Describes how a find, count, distinct, aggregate, update, delete or findAndModify is (or would be) executed.";
    Create = "create", Any, "Creates a collection.";
    Drop = "drop", Any, "Drops a collection.";
    DropDatabase = "dropDatabase", Any, "Drops a database.";
    RenameCollection = "renameCollection", Admin, "Renames a collection.";
    ListCollections = "listCollections", Any, "Lists the collections of a database.";
    ListDatabases = "listDatabases", Admin, "Lists databases.";
    DbStats = "dbStats", Any, "Statistics of a database.";
    DbStatsLower = "dbstats", Any, "Statistics of a database.";
    CollStats = "collStats", Any, "Statistics of a collection.";
    Profile = "profile", Any, "Sets or reads the database profiler's level, slowms, sampleRate and filter.";
    Top = "top", Admin, "Time and counts of operations per collection since the server started.";
    Validate = "validate", Any, "Checks a collection's records, indexes, expiry keys and stored count against each other.";
    CreateIndexes = "createIndexes", Any, "Creates indexes.";
    ListIndexes = "listIndexes", Any, "Lists the indexes of a collection.";
    DropIndexes = "dropIndexes", Any, "Drops indexes.";
    CustomAction = "customAction", Any, "Cosmos profile: the account's extension commands CreateDatabase, UpdateDatabase, GetDatabase, CreateCollection, UpdateCollection and GetCollection.";
    ShardCollection = "shardCollection", Any, "Cosmos profile: gives a collection its shard key: {shardCollection: 'db.coll', key: {field: 'hashed'}}.";
    AdvanceClock = "advanceClock", TestAdmin, "Test command: moves the server clock forward by {advanceClock: <seconds>} and reports it.";
    Reaper = "reaper", TestAdmin, "Test command: {reaper: 'pause' | 'resume' | 'runOnce'} controls the TTL reaper.";
    CollMod = "collMod", Any, "Refused (Cosmos DB does not support collMod), except {collMod: c} alone, which changes nothing.";
    CurrentOp = "currentOp", Admin, "Lists the operations running now: {currentOp: 1, <field>: <condition>...}.";
    KillOp = "killOp", Admin, "Asks a running operation to stop: {killOp: 1, op: <opid>}.";
    CreateUser = "createUser", Any, "Creates a user of this database: {createUser: name, pwd, roles}.";
    UpdateUser = "updateUser", Any, "Changes a user's password, roles, custom data or mechanisms.";
    DropUser = "dropUser", Any, "Removes a user of this database.";
    DropAllUsersFromDatabase = "dropAllUsersFromDatabase", Any, "Removes every user of this database.";
    UsersInfo = "usersInfo", Any, "Describes users: {usersInfo: 1 | name | {user, db} | [...]}.";
    GrantRolesToUser = "grantRolesToUser", Any, "Adds roles to a user.";
    RevokeRolesFromUser = "revokeRolesFromUser", Any, "Removes roles from a user.";
    Sleep = "sleep", Test, "Test command: sleeps for {millis: N} (or {secs: N}) milliseconds.";
    ConfigureFailPoint = "configureFailPoint", TestAdmin, "Test command: sets the failCommand fail point: {configureFailPoint: 'failCommand', mode, data}.";
    WaitForFailPoint = "waitForFailPoint", TestAdmin, "Test command: waits until a fail point has fired {timesEntered: N} times (maxTimeMS required).";
}
