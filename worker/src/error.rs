//! What stops a worker: the errors no retry can fix.

use crate::connection::ConnectError;
use std::fmt;
use std::time::Duration;
use tonic::Code;

/// A call to the coordinator, as errors and logs name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Register,
    Lease,
    PullWeights,
    Push { shard: u64 },
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Call::Register => f.write_str("register"),
            Call::Lease => f.write_str("lease"),
            Call::PullWeights => f.write_str("pull weights"),
            Call::Push { shard } => write!(f, "push of shard {shard}"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The async runtime or a signal handler could not be set up.
    #[error("{what}: {source}")]
    Setup { what: &'static str, source: std::io::Error },
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The coordinator refused a call in a way no retry can fix (token, protocol, layout, a
    /// request refused as malformed): its message says why.
    #[error("{call}: {message}")]
    Refused { call: Call, code: Code, message: String },
    /// The coordinator stayed unreachable (or kept failing) longer than the worker waits.
    #[error("{call}: the coordinator has been unreachable for {limit:?}: {message}")]
    Unreachable { call: Call, limit: Duration, message: String },
    /// The run needs weights this build cannot hold (layout, pattern file).
    #[error("{0}")]
    Incompatible(String),
    /// A reply that breaks the protocol.
    #[error("{0}")]
    BadReply(&'static str),
    /// The thread running a shard panicked.
    #[error("{0}")]
    Job(#[from] tokio::task::JoinError),
}
