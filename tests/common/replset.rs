//! Servers in replica-set mode (`--replSet NAME`), and clients that discover them the way
//! applications do: `replicaSet=NAME`, no `directConnection`.

use super::TestServer;
use mongodb::options::ClientOptions;
use mongodb::Client;
use std::time::Duration;

impl TestServer {
    /// A server that is the one member (the primary) of replica set `name`.
    pub async fn start_replset(name: &str) -> TestServer {
        let name = name.to_owned();
        TestServer::start_with(move |c| c.replication.set_name = Some(name)).await
    }

    /// `mongodb://host:port/?replicaSet=NAME`: the driver discovers the set from this seed.
    pub fn replset_uri(&self, name: &str) -> String {
        format!("mongodb://{}/?replicaSet={name}", self.addr)
    }

    /// A client of replica set `name`, found through server discovery, with a short server
    /// selection timeout so a failure shows quickly. Retryable writes are off (as in Cosmos DB
    /// connection strings): they need `txnNumber`, which this client must not depend on.
    pub async fn replset_client(&self, name: &str) -> Client {
        let mut options = ClientOptions::parse(self.replset_uri(name)).await.unwrap();
        options.server_selection_timeout = Some(Duration::from_secs(5));
        options.retry_writes = Some(false);
        Client::with_options(options).unwrap()
    }
}
