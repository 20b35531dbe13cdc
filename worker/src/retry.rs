//! How the worker answers a failed call, the same way for every call: the status code alone
//! decides (`on_error`), never the message; a coordinator that is away or faulty is waited
//! for with growing pauses (`Backoff`) for at most `give_up_after`.

use crate::error::{Call, WorkerError};
use std::time::{Duration, Instant};
use tonic::{Code, Status};

/// What to do about a failed call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OnError {
    /// No retry can fix it (token, protocol, layout, a request refused as malformed): stop
    /// with the coordinator's message.
    Stop,
    /// The coordinator does not know this worker (it restarted): register again.
    Register,
    /// The lease is no longer this worker's: drop the shard's result and lease again.
    DropShard,
    /// The coordinator is away or had a fault of its own: retry with backoff.
    Retry,
}

/// The decision for a status code (the coordinator's codes are listed in `keima.proto`).
/// Two codes are answers only to some calls: `NOT_FOUND` (unknown worker id) to those made
/// as a registered worker, `ABORTED` (no live lease) to a push; elsewhere they are retried.
fn on_error(code: Code, call: Call) -> OnError {
    match code {
        Code::Unauthenticated
        | Code::PermissionDenied
        | Code::FailedPrecondition
        | Code::InvalidArgument
        | Code::ResourceExhausted
        | Code::OutOfRange
        | Code::Unimplemented => OnError::Stop,
        Code::NotFound if call != Call::Register => OnError::Register,
        Code::Aborted if matches!(call, Call::Push { .. }) => OnError::DropShard,
        _ => OnError::Retry,
    }
}

/// Pauses between retries, doubling from 200 ms to 10 s; gives up once the coordinator has
/// failed for longer than `limit` since the last call that succeeded.
pub struct Backoff {
    delay: Duration,
    since: Option<Instant>,
    limit: Duration,
}

impl Backoff {
    pub fn new(limit: Duration) -> Backoff {
        Backoff { delay: Duration::from_millis(200), since: None, limit }
    }

    async fn wait(&mut self, call: Call, s: &Status) -> Result<(), WorkerError> {
        let since = *self.since.get_or_insert_with(Instant::now);
        if since.elapsed() > self.limit {
            return Err(WorkerError::Unreachable { call, limit: self.limit, message: s.message().into() });
        }
        tracing::warn!("{call}: {} (retrying in {:?})", s.message(), self.delay);
        tokio::time::sleep(self.delay).await;
        self.delay = (self.delay * 2).min(Duration::from_secs(10));
        Ok(())
    }

    fn reset(&mut self) {
        self.delay = Duration::from_millis(200);
        self.since = None;
    }
}

/// What a failed call asks of its caller, which holds the state to act on it.
#[derive(Debug)]
pub enum Setback {
    /// The coordinator does not know this worker: register again, then call again.
    Unregistered,
    /// The lease is gone: drop the shard's result (the coordinator's message says why).
    LeaseGone { message: String },
}

/// Makes a call until the coordinator answers: the one retry loop of the worker. A fatal
/// code ends it (`WorkerError::Refused`); an absent or faulty coordinator is waited for and
/// called again (`WorkerError::Unreachable` past the backoff's limit); an unknown worker or
/// a lost lease comes back as a `Setback`. An answer resets the backoff.
pub async fn retrying<T>(
    call: Call,
    backoff: &mut Backoff,
    mut attempt: impl AsyncFnMut() -> Result<T, Status>,
) -> Result<Result<T, Setback>, WorkerError> {
    loop {
        match attempt().await {
            Ok(reply) => {
                backoff.reset();
                return Ok(Ok(reply));
            }
            Err(s) => match on_error(s.code(), call) {
                OnError::Stop => {
                    return Err(WorkerError::Refused { call, code: s.code(), message: s.message().into() });
                }
                OnError::Register => return Ok(Err(Setback::Unregistered)),
                OnError::DropShard => return Ok(Err(Setback::LeaseGone { message: s.message().into() })),
                OnError::Retry => backoff.wait(call, &s).await?,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_code_alone_decides() {
        let push = Call::Push { shard: 3 };
        let cases = [
            (Code::Unauthenticated, OnError::Stop),
            (Code::FailedPrecondition, OnError::Stop),
            (Code::InvalidArgument, OnError::Stop),
            (Code::ResourceExhausted, OnError::Stop),
            (Code::OutOfRange, OnError::Stop),
            (Code::NotFound, OnError::Register),
            (Code::Aborted, OnError::DropShard),
            (Code::Unavailable, OnError::Retry),
            (Code::Internal, OnError::Retry),
            (Code::DeadlineExceeded, OnError::Retry),
            (Code::Unknown, OnError::Retry),
        ];
        for (code, decision) in cases {
            assert_eq!(on_error(code, push), decision, "{code:?}");
        }
    }

    /// `NOT_FOUND` re-registers and `ABORTED` drops a result only where they can mean that.
    #[test]
    fn two_codes_depend_on_the_call() {
        let cases = [
            (Call::Register, Code::NotFound, OnError::Retry),
            (Call::Register, Code::Aborted, OnError::Retry),
            (Call::Register, Code::Unauthenticated, OnError::Stop),
            (Call::Lease, Code::NotFound, OnError::Register),
            (Call::Lease, Code::Aborted, OnError::Retry),
            (Call::PullWeights, Code::NotFound, OnError::Register),
            (Call::PullWeights, Code::Aborted, OnError::Retry),
            (Call::PullWeights, Code::DataLoss, OnError::Retry),
        ];
        for (call, code, decision) in cases {
            assert_eq!(on_error(code, call), decision, "{call} {code:?}");
        }
    }
}
