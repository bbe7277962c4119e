//! What a Cosmos DB account keeps per database and per collection beyond MongoDB's options:
//! the shard key and the provisioned throughput (`customAction` `CreateCollection`,
//! `shardCollection`, `UpdateCollection`, …). Stored with the catalog entry (a database's in an
//! entry of its own).

use serde::{Deserialize, Serialize};

/// A collection's Cosmos settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionSettings {
    /// The shard key's path (`"a.b"`); `None`: an unsharded ("fixed") collection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_key: Option<String>,
    /// Throughput provisioned for the collection; `None`: it shares its database's (or
    /// `--cosmos-throughput`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Throughput>,
}

/// A database's Cosmos settings (`customAction` `CreateDatabase`, `UpdateDatabase`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatabaseSettings {
    /// Throughput its collections share unless they have their own; `None`: none provisioned
    /// on the database (each collection has its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Throughput>,
}

/// Request units per second provisioned for a database or a collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Throughput {
    /// `offerThroughput`: a fixed budget.
    Manual(u32),
    /// `autoScaleSettings.maxThroughput`: scales between a tenth of it and it.
    Autoscale(u32),
}

impl Throughput {
    /// The request units a second the budget allows at most.
    pub fn max_per_second(self) -> u32 {
        match self {
            Throughput::Manual(ru) | Throughput::Autoscale(ru) => ru,
        }
    }

    /// What `GetDatabase` and `GetCollection` report as `provisionedThroughput`: the fixed
    /// budget, or for autoscale the tenth of the maximum it scales down to (Microsoft's
    /// custom-commands page shows `provisionedThroughput: 2000` beside `maxThroughput: 20000`).
    pub fn provisioned(self) -> u32 {
        match self {
            Throughput::Manual(ru) => ru,
            Throughput::Autoscale(max) => max / 10,
        }
    }
}
