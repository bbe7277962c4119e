//! Servers in the Cosmos profile (`--compat cosmos`: replica set `globaldb`) and clients that
//! reach them as the portal's connection string does, and how tests read their refusals.

use super::TestServer;
use mayfly::profile::{CosmosVersion, Profile};
use mongodb::options::ClientOptions;
use mongodb::Client;
use std::time::Duration;

/// The replica set a Cosmos account answers as.
pub const SET: &str = "globaldb";

impl TestServer {
    /// A server in `profile`, answering as replica set `globaldb`, as `--compat cosmos` does.
    pub async fn start_cosmos(profile: Profile) -> TestServer {
        TestServer::start_with(move |c| {
            c.profile = profile;
            c.replication.set_name = Some(SET.to_owned());
        })
        .await
    }

    /// A Cosmos 7.0 account with every rule on.
    pub async fn start_cosmos_7() -> TestServer {
        TestServer::start_cosmos(Profile::cosmos(CosmosVersion::V7_0)).await
    }

    /// A client as the portal's connection string makes one: `replicaSet=globaldb`,
    /// `retrywrites=false`, `maxIdleTimeMS=120000`, `appName=@test@`.
    pub async fn portal_client(&self) -> Client {
        let uri = format!(
            "mongodb://{}/?replicaSet={SET}&retrywrites=false&maxIdleTimeMS=120000&appName=@test@",
            self.addr
        );
        let mut options = ClientOptions::parse(uri).await.unwrap();
        options.server_selection_timeout = Some(Duration::from_secs(5));
        Client::with_options(options).unwrap()
    }
}

/// `(code, message)` of a failed command or write.
pub fn failure(err: mongodb::error::Error) -> (i32, String) {
    match *err.kind {
        mongodb::error::ErrorKind::Command(c) => (c.code, c.message),
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) => {
            (w.code, w.message)
        }
        mongodb::error::ErrorKind::InsertMany(m) => {
            let w = m.write_errors.unwrap().remove(0);
            (w.code, w.message)
        }
        other => panic!("not a command error: {other:?}"),
    }
}

/// The next `n` events of `stream`, each within 10 seconds.
pub async fn next_events<T>(
    stream: &mut mongodb::change_stream::ChangeStream<T>,
    n: usize,
) -> Vec<T>
where
    T: serde::de::DeserializeOwned + Unpin + Send + Sync,
{
    let mut events = Vec::with_capacity(n);
    while events.len() < n {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.next_if_any())
            .await
            .expect("an event in time")
            .unwrap();
        events.extend(event);
    }
    events
}
