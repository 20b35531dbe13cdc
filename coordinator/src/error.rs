//! Errors of a push, split by whose fault they are, with the one mapping to gRPC status
//! codes that workers act on (`keima.proto`, `PushGradient`). The worker's faults are
//! counted as rejected pushes; the coordinator's own (storage, internal) are counted as
//! server faults and the worker retries, since nothing was merged.

use crate::fault::Injected;
use crate::fsutil::IoError;
use crate::queue::LeaseProblem;
use tonic::{Code, Status};

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// Malformed or inconsistent: structure, values or counts.
    #[error("{0}")]
    Invalid(String),
    #[error(
        "push checksum mismatch: the upload was corrupted, or its header or statistics are not the ones \
         its payload was sealed with"
    )]
    BadChecksum,
    #[error(
        "push larger than max_push_mib = {limit_mib} MiB: raise [coordinator] max_push_mib or make shards smaller"
    )]
    TooLarge { limit_mib: u64 },
    /// Protocol version or feature layout differ: no retry can fix it.
    #[error("{0}")]
    Incompatible(String),
    #[error("worker id {0:?} is not registered with this run (the coordinator restarted?): register again")]
    UnknownWorker(String),
    #[error(
        "shard {shard} attempt {attempt} pushed by {worker:?}: {problem}; drop the result and lease again"
    )]
    NoLease { shard: u64, attempt: u32, worker: String, problem: LeaseProblem },
    #[error("the gradient claims weights version {claimed} but the coordinator is at {current}")]
    FutureVersion { claimed: u64, current: u64 },
    /// The stream itself failed (cut, or a message over the gRPC size limit).
    #[error("push stream: {}", .0.message())]
    Transport(Status),
    /// The coordinator could not store the merge (nothing was applied).
    #[error("coordinator storage: {0}")]
    Storage(#[from] IoError),
    #[error("coordinator internal error: {0}")]
    Internal(String),
    /// Interrupted: nothing is merged after the final checkpoint (the worker retries; after
    /// `keima train --resume` the shard is leased again).
    #[error("the coordinator is stopping: nothing was merged; the shard is done again after a resume")]
    Stopping,
    #[error(transparent)]
    Injected(#[from] Injected),
}

impl PushError {
    /// The coordinator's fault, not the worker's (nothing was merged; retrying may work).
    pub fn is_server_fault(&self) -> bool {
        matches!(self, PushError::Storage(_) | PushError::Internal(_) | PushError::Injected(_))
    }

    /// The status code a worker sees (and decides on).
    pub fn code(&self) -> Code {
        match self {
            PushError::Invalid(_) | PushError::BadChecksum | PushError::FutureVersion { .. } => {
                Code::InvalidArgument
            }
            PushError::TooLarge { .. } => Code::ResourceExhausted,
            PushError::Incompatible(_) => Code::FailedPrecondition,
            PushError::UnknownWorker(_) => Code::NotFound,
            PushError::NoLease { .. } => Code::Aborted,
            PushError::Transport(s) => s.code(),
            PushError::Storage(_) | PushError::Stopping => Code::Unavailable,
            PushError::Internal(_) | PushError::Injected(_) => Code::Internal,
        }
    }
}

impl From<PushError> for Status {
    fn from(e: PushError) -> Status {
        Status::new(e.code(), e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn client_and_server_faults_map_to_distinct_codes() {
        let io =
            IoError { what: "write", path: PathBuf::from("j"), source: std::io::Error::other("disk full") };
        let cases: Vec<(PushError, Code, bool)> = vec![
            (PushError::Invalid("x".into()), Code::InvalidArgument, false),
            (PushError::BadChecksum, Code::InvalidArgument, false),
            (PushError::FutureVersion { claimed: 3, current: 2 }, Code::InvalidArgument, false),
            (PushError::TooLarge { limit_mib: 1 }, Code::ResourceExhausted, false),
            (PushError::Incompatible("protocol".into()), Code::FailedPrecondition, false),
            (PushError::UnknownWorker("w1".into()), Code::NotFound, false),
            (PushError::Stopping, Code::Unavailable, false),
            (
                PushError::NoLease {
                    shard: 1,
                    attempt: 2,
                    worker: "w".into(),
                    problem: LeaseProblem::Expired,
                },
                Code::Aborted,
                false,
            ),
            (PushError::Transport(Status::out_of_range("too big")), Code::OutOfRange, false),
            (PushError::Storage(io), Code::Unavailable, true),
            (PushError::Internal("join".into()), Code::Internal, true),
        ];
        for (e, code, server) in cases {
            assert_eq!(e.is_server_fault(), server, "{e}");
            let status = Status::from(e);
            assert_eq!(status.code(), code, "{status:?}");
        }
    }
}
