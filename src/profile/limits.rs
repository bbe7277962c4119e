//! The time limits of a Cosmos DB account: a request runs at most 60 seconds
//! ([`Rule::RequestTimeLimit`]: 50 ExceededTimeLimit, Microsoft's limits and error-codes pages),
//! and a connection idle for 30 minutes is closed by the service ([`Rule::IdleConnections`]:
//! the connection-string page, which is why the portal's string sets `maxIdleTimeMS=120000`).

use super::refusal::refuse;
use super::Rule;
use crate::error::{Error, ErrorCode};
use std::time::Duration;

/// Cosmos's limits; tests shorten them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How long one request may run.
    pub request: Duration,
    /// How long a connection may wait for its next request.
    pub idle_connection: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            request: Duration::from_secs(60),
            idle_connection: Duration::from_secs(30 * 60),
        }
    }
}

/// The error-codes page's words for code 50: no source shows the message an account sends.
pub const REQUEST_TIMED_OUT: &str =
    "The request has exceeded the timeout of 60 seconds of execution.";

/// The answer to a request stopped at the limit: 50, named `ExceededTimeLimit` as Cosmos names
/// it (mongod's name for 50 is `MaxTimeMSExpired`).
pub fn request_timed_out() -> Error {
    refuse(
        Rule::RequestTimeLimit,
        ErrorCode::MaxTimeMSExpired,
        REQUEST_TIMED_OUT,
    )
    .with_extra(bson::doc! {"codeName": "ExceededTimeLimit"})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::refusal::rule_line;
    use crate::profile::{CosmosVersion, Profile};

    #[test]
    fn the_limits_are_cosmoss_and_apply_only_in_its_profile() {
        let cosmos = Profile::cosmos(CosmosVersion::V7_0);
        assert_eq!(cosmos.request_time_limit(), Some(Duration::from_secs(60)));
        assert_eq!(
            cosmos.idle_connection_limit(),
            Some(Duration::from_secs(1800))
        );
        let relaxed = cosmos
            .allowing(Rule::RequestTimeLimit)
            .allowing(Rule::IdleConnections);
        assert_eq!(relaxed.request_time_limit(), None);
        assert_eq!(relaxed.idle_connection_limit(), None);
        assert_eq!(Profile::mongodb().request_time_limit(), None);
        assert_eq!(Profile::mongodb().idle_connection_limit(), None);
    }

    #[test]
    fn a_stopped_request_answers_50_exceeded_time_limit() {
        let reply = request_timed_out().to_reply();
        assert_eq!(reply.get_i32("code"), Ok(50));
        assert_eq!(reply.get_str("codeName"), Ok("ExceededTimeLimit"));
        assert_eq!(
            reply.get_str("errmsg"),
            Ok(format!("{REQUEST_TIMED_OUT}\n{}", rule_line(Rule::RequestTimeLimit)).as_str())
        );
    }
}
