//! The behaviour profile: MongoDB 7.0 (the default: mongod's behaviour with the Cosmos TTL
//! rules) or Azure Cosmos DB for MongoDB (RU) at one account server version (`--compat cosmos`,
//! `--cosmos-version`), with the rules that profile enforces and the ones a team relaxed
//! (`--cosmos-allow`).
//!
//! Pure: the rules' decisions ([`sort`], [`indexes`], [`shard_keys`]) and the errors they answer with
//! ([`refusal`]). The layers that apply them hold one [`Profile`], set at start.

pub mod account;
pub mod change_streams;
pub mod indexes;
pub mod limits;
pub mod operators;
pub mod refusal;
pub mod ru;
pub mod shard_keys;
pub mod sort;
pub mod stages;
pub mod throttle;
pub mod transactions;

use std::fmt;

/// Which database mayfly behaves as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compat {
    /// MongoDB 7.0, with the Cosmos TTL rules.
    #[default]
    #[value(name = "mongodb")]
    MongoDb,
    /// Azure Cosmos DB for MongoDB (RU): its handshake, limits and refusals.
    Cosmos,
}

/// The server version of a Cosmos DB for MongoDB (RU) account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Deserialize)]
pub enum CosmosVersion {
    #[value(name = "3.6")]
    #[serde(rename = "3.6")]
    V3_6,
    #[value(name = "4.0")]
    #[serde(rename = "4.0")]
    V4_0,
    #[value(name = "4.2")]
    #[serde(rename = "4.2")]
    V4_2,
    #[value(name = "5.0")]
    #[serde(rename = "5.0")]
    V5_0,
    #[value(name = "6.0")]
    #[serde(rename = "6.0")]
    V6_0,
    #[default]
    #[value(name = "7.0")]
    #[serde(rename = "7.0")]
    V7_0,
}

impl CosmosVersion {
    /// The `maxWireVersion` such an account reports: observed from drivers' errors for 3.6 (6),
    /// 4.0 (7) and 4.2 (8); MongoDB's own mapping for 5.0, 6.0 and 7.0, where no source says.
    pub fn wire_version(self) -> i32 {
        match self {
            CosmosVersion::V3_6 => 6,
            CosmosVersion::V4_0 => 7,
            CosmosVersion::V4_2 => 8,
            CosmosVersion::V5_0 => 13,
            CosmosVersion::V6_0 => 17,
            CosmosVersion::V7_0 => 21,
        }
    }

    /// `buildInfo.versionArray`.
    pub fn version_array(self) -> [i32; 4] {
        match self {
            CosmosVersion::V3_6 => [3, 6, 0, 0],
            CosmosVersion::V4_0 => [4, 0, 0, 0],
            CosmosVersion::V4_2 => [4, 2, 0, 0],
            CosmosVersion::V5_0 => [5, 0, 0, 0],
            CosmosVersion::V6_0 => [6, 0, 0, 0],
            CosmosVersion::V7_0 => [7, 0, 0, 0],
        }
    }

    /// `buildInfo.version`.
    pub fn version(self) -> String {
        let [major, minor, patch, _] = self.version_array();
        format!("{major}.{minor}.{patch}")
    }
}

/// One Cosmos behaviour that `--compat cosmos` reproduces and `--cosmos-allow NAME` turns off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// A sort must be served by an index: `_id`, the shard key, a single-field index on the
    /// field, a wildcard index, or for several fields a compound index in the same order.
    SortWithoutIndex,
    /// A unique index is created only while the collection is empty.
    UniqueIndexOnPopulated,
    /// Unique and compound indexes take no nested (dotted) paths.
    NestedIndexPaths,
    /// No text, 2d, hashed, sparse or collated indexes.
    IndexKinds,
    /// A document is at most 2 MB unless `--cosmos-16mb`.
    DocumentSize,
    /// Retryable writes are refused unless `--cosmos-retryable-writes`.
    RetryableWrites,
    /// Commands the account does not have (`collMod`, `renameCollection`, …).
    UnsupportedCommands,
    /// Requests over the provisioned request units a second get 16500 (only with
    /// `--cosmos-throughput`).
    Throttling,
    /// On a sharded collection: every document has the shard key, a single-document write
    /// names it by equality, no update changes it, and a unique index leads with it.
    ShardKeys,
    /// Change streams: one collection, `$match` then `$project`, no deletes reported.
    ChangeStreams,
    /// Transactions live at most 5 seconds; an expired one answers "Transaction is not active".
    TransactionLimits,
    /// Aggregation stages the account's version lacks, and `$lookup` with `let`.
    UnsupportedStages,
    /// A request still running after 60 seconds is stopped and answers 50.
    RequestTimeLimit,
    /// A connection idle for 30 minutes is closed.
    IdleConnections,
    /// Query operators no account version has (`$bitsAllSet` and kin, legacy geometry).
    UnsupportedOperators,
    /// Write concerns are ignored: every write is acknowledged as the service always does
    /// (quorum), so `w: 2`, `w: 3` or a tag set never gives a `writeConcernError`.
    WriteConcerns,
}

impl Rule {
    pub const ALL: [Rule; 16] = [
        Rule::SortWithoutIndex,
        Rule::UniqueIndexOnPopulated,
        Rule::NestedIndexPaths,
        Rule::IndexKinds,
        Rule::DocumentSize,
        Rule::RetryableWrites,
        Rule::UnsupportedCommands,
        Rule::Throttling,
        Rule::ShardKeys,
        Rule::ChangeStreams,
        Rule::TransactionLimits,
        Rule::UnsupportedStages,
        Rule::RequestTimeLimit,
        Rule::IdleConnections,
        Rule::UnsupportedOperators,
        Rule::WriteConcerns,
    ];

    /// The rule's name in `--cosmos-allow` and in refusals.
    pub fn name(self) -> &'static str {
        match self {
            Rule::SortWithoutIndex => "sort-without-index",
            Rule::UniqueIndexOnPopulated => "unique-index-on-populated",
            Rule::NestedIndexPaths => "nested-index-paths",
            Rule::IndexKinds => "index-kinds",
            Rule::DocumentSize => "document-size",
            Rule::RetryableWrites => "retryable-writes",
            Rule::UnsupportedCommands => "unsupported-commands",
            Rule::Throttling => "throttling",
            Rule::ShardKeys => "shard-keys",
            Rule::ChangeStreams => "change-streams",
            Rule::TransactionLimits => "transaction-limits",
            Rule::UnsupportedStages => "unsupported-stages",
            Rule::RequestTimeLimit => "request-time-limit",
            Rule::IdleConnections => "idle-connections",
            Rule::UnsupportedOperators => "unsupported-operators",
            Rule::WriteConcerns => "write-concerns",
        }
    }

    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|rule| rule.name() == name)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The service's text for an item over the limit.
pub const DOCUMENT_TOO_LARGE: &str = "Request size is too large";

/// Cosmos DB's default largest document: 2 MB. Cosmos measures the UTF-8 length of the item's
/// JSON; mayfly measures the document's BSON (docs/cosmos.md says how the two differ).
pub const COSMOS_MAX_DOCUMENT_BYTES: usize = 2 * 1024 * 1024;

/// MongoDB 7.0's wire version.
pub const MONGODB_WIRE_VERSION: i32 = 21;

/// How this server behaves; one per server, fixed at start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    pub compat: Compat,
    pub version: CosmosVersion,
    /// The Cosmos rules turned off, in [`Rule`]'s order.
    pub allowed: Vec<Rule>,
    /// `--cosmos-throughput`: request units a second each collection may spend unless it (or
    /// its database) has its own provisioned throughput; `None`: no throttling.
    pub throughput: Option<u32>,
    /// `--cosmos-server-side-retry` (the capability `DisableRateLimitingResponses`): a
    /// throttled request waits inside the server, up to 60 seconds, instead of failing.
    pub server_side_retry: bool,
    /// `--cosmos-ttl-custom-path` (the capability `EnableTtlOnCustomPath`, TTL-30): a TTL index
    /// may sit on one single field other than `_ts`.
    pub ttl_custom_path: bool,
    /// How long a request may run and a connection may stay idle (Cosmos's 60 seconds and 30
    /// minutes; tests shorten them).
    pub limits: limits::Limits,
    /// `--cosmos-region`: the account's region (`None`: [`DEFAULT_REGION`]).
    pub region: Option<String>,
}

/// The region a Cosmos profile's `hello` shows when `--cosmos-region` names none.
pub const DEFAULT_REGION: &str = "local";

impl Profile {
    /// MongoDB 7.0: no Cosmos rule applies.
    pub fn mongodb() -> Profile {
        Profile::default()
    }

    /// Cosmos DB at `version`, every rule on.
    pub fn cosmos(version: CosmosVersion) -> Profile {
        Profile {
            compat: Compat::Cosmos,
            version,
            ..Profile::default()
        }
    }

    /// The same profile with `rule` turned off.
    pub fn allowing(mut self, rule: Rule) -> Profile {
        if !self.allowed.contains(&rule) {
            self.allowed.push(rule);
            self.allowed.sort();
        }
        self
    }

    pub fn is_cosmos(&self) -> bool {
        self.compat == Compat::Cosmos
    }

    /// Whether `rule` is applied: the Cosmos profile, and not allowed.
    pub fn enforces(&self, rule: Rule) -> bool {
        self.is_cosmos() && !self.allowed.contains(&rule)
    }

    /// The account capabilities on, by their Azure names (each lifts a rule, or changes how
    /// throttling answers), for the start-up log.
    pub fn capabilities(&self) -> Vec<&'static str> {
        let mut on = Vec::new();
        if !self.is_cosmos() {
            return on;
        }
        if self.allowed.contains(&Rule::DocumentSize) {
            on.push("EnableMongo16MBDocumentSupport");
        }
        if self.allowed.contains(&Rule::RetryableWrites) {
            on.push("EnableMongoRetryableWrites");
        }
        if self.server_side_retry {
            on.push("DisableRateLimitingResponses");
        }
        if self.ttl_custom_path {
            on.push("EnableTtlOnCustomPath");
        }
        on
    }

    /// Whether a TTL index may sit on a custom field (TTL-30): the Cosmos profile with the
    /// capability `EnableTtlOnCustomPath`.
    pub fn ttl_on_custom_path(&self) -> bool {
        self.is_cosmos() && self.ttl_custom_path
    }

    /// Whether requests are throttled to provisioned throughput.
    pub fn throttles(&self) -> bool {
        self.throughput.is_some() && self.enforces(Rule::Throttling)
    }

    /// Whether commands are charged request units (`getLastRequestStatistics`, throttling).
    pub fn charges(&self) -> bool {
        self.is_cosmos()
    }

    /// How long a request may run before it is stopped ([`Rule::RequestTimeLimit`]).
    pub fn request_time_limit(&self) -> Option<std::time::Duration> {
        self.enforces(Rule::RequestTimeLimit)
            .then_some(self.limits.request)
    }

    /// How long a connection may wait for its next request before it is closed
    /// ([`Rule::IdleConnections`]).
    pub fn idle_connection_limit(&self) -> Option<std::time::Duration> {
        self.enforces(Rule::IdleConnections)
            .then_some(self.limits.idle_connection)
    }

    /// The region the handshake tags this server with (`tags: {region}`), in the Cosmos
    /// profile, as an account's `hello` shows the region it runs in.
    pub fn region(&self) -> Option<&str> {
        self.is_cosmos()
            .then(|| self.region.as_deref().unwrap_or(DEFAULT_REGION))
    }

    /// The `maxWireVersion` the handshake reports.
    pub fn max_wire_version(&self) -> i32 {
        match self.compat {
            Compat::MongoDb => MONGODB_WIRE_VERSION,
            Compat::Cosmos => self.version.wire_version(),
        }
    }

    /// The profile's document limit, to carry into a write.
    pub fn document_limit(&self) -> DocumentLimit {
        DocumentLimit(
            self.enforces(Rule::DocumentSize)
                .then_some(COSMOS_MAX_DOCUMENT_BYTES),
        )
    }
}

/// The largest document a write may store when the profile lowers mongod's 16 MB; the default
/// is no lower limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DocumentLimit(Option<usize>);

impl DocumentLimit {
    /// Whether there is a limit to check (callers measure a document only then).
    pub fn applies(self) -> bool {
        self.0.is_some()
    }

    /// Refuses a document of `bytes` (its BSON size) over the limit, as the Cosmos service
    /// refuses an item over 2 MB: 16 with `RequestEntityTooLarge (413)`.
    pub fn check(self, bytes: usize) -> crate::error::Result<()> {
        match self.0 {
            Some(max) if bytes > max => Err(refusal::refuse_from_service(
                Rule::DocumentSize,
                crate::error::ErrorCode::InvalidLength,
                refusal::ServiceFailure {
                    status: "RequestEntityTooLarge (413)",
                    substatus: 0,
                    message: DOCUMENT_TOO_LARGE,
                },
            )),
            _ => Ok(()),
        }
    }

    /// [`DocumentLimit::check`] of `doc`'s BSON size; measured only when a limit applies.
    pub fn check_document(self, doc: &bson::Document) -> crate::error::Result<()> {
        if !self.applies() {
            return Ok(());
        }
        let mut bytes = Vec::new();
        doc.to_writer(&mut bytes)
            .map_err(|e| crate::error::Error::internal(format!("cannot encode document: {e}")))?;
        self.check(bytes.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_profile_enforces_no_rule() {
        let profile = Profile::mongodb();
        assert!(Rule::ALL.iter().all(|rule| !profile.enforces(*rule)));
        assert_eq!(profile.max_wire_version(), 21);
        assert!(!profile.document_limit().applies());
        assert!(profile.document_limit().check(16 * 1024 * 1024).is_ok());
    }

    #[test]
    fn cosmos_enforces_every_rule_but_the_allowed_ones() {
        let profile = Profile::cosmos(CosmosVersion::V4_2).allowing(Rule::SortWithoutIndex);
        assert!(!profile.enforces(Rule::SortWithoutIndex));
        assert!(profile.enforces(Rule::UniqueIndexOnPopulated));
        assert_eq!(profile.max_wire_version(), 8);
        let limit = profile.document_limit();
        assert!(limit.check(2 * 1024 * 1024).is_ok());
        let err = limit.check(2 * 1024 * 1024 + 1).unwrap_err();
        assert_eq!(err.code.code(), 16);
        assert!(err.message.starts_with(
            "Error=16, Details='Response status code does not indicate success: RequestEntityTooLarge (413); Substatus: 0;"
        ));
        let lifted = profile.allowing(Rule::DocumentSize);
        assert!(!lifted.document_limit().applies());
    }

    #[test]
    fn wire_versions_are_the_accounts() {
        let table = [
            (CosmosVersion::V3_6, 6, "3.6.0"),
            (CosmosVersion::V4_0, 7, "4.0.0"),
            (CosmosVersion::V4_2, 8, "4.2.0"),
            (CosmosVersion::V5_0, 13, "5.0.0"),
            (CosmosVersion::V6_0, 17, "6.0.0"),
            (CosmosVersion::V7_0, 21, "7.0.0"),
        ];
        for (version, wire, text) in table {
            assert_eq!(version.wire_version(), wire);
            assert_eq!(version.version(), text);
        }
    }

    #[test]
    fn rule_names_round_trip() {
        for rule in Rule::ALL {
            assert_eq!(Rule::from_name(rule.name()), Some(rule));
        }
        assert_eq!(Rule::from_name("shard-keys"), Some(Rule::ShardKeys));
        assert_eq!(Rule::from_name("no-such-rule"), None);
    }

    #[test]
    fn shard_keys_are_a_rule_of_their_own() {
        let cosmos = Profile::cosmos(CosmosVersion::V7_0);
        assert!(cosmos.enforces(Rule::ShardKeys));
        assert!(!Profile::mongodb().enforces(Rule::ShardKeys));
        let relaxed = cosmos.allowing(Rule::ShardKeys);
        assert!(!relaxed.enforces(Rule::ShardKeys));
        assert!(relaxed.enforces(Rule::SortWithoutIndex));
    }
}
