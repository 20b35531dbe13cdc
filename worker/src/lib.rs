//! The worker: plays or replays the games of a leased shard, searches for teacher values,
//! computes gradients and returns them. Thin around `engine-core`; filled in by the
//! distributed-training issue.

/// The wire version this worker speaks.
pub fn protocol_version() -> u32 {
    keima_proto::PROTOCOL_VERSION
}
