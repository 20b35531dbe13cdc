//! The coordinator: owns the weights, leases shards to workers, merges their gradients.
//! Thin around `engine-core` (learning math) and `keima-proto` (wire contract); filled in
//! by the learner and distributed-training issues.

/// The wire version this coordinator speaks.
pub fn protocol_version() -> u32 {
    keima_proto::PROTOCOL_VERSION
}
