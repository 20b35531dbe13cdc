//! Keima's wire contract. The gRPC service (tonic/prost, compiled by protox in build.rs)
//! arrives with distributed training; until then this crate only fixes the version number
//! that every message will carry, so that peers of different builds refuse each other.

/// Bumped whenever a message changes meaning or layout.
pub const PROTOCOL_VERSION: u32 = 1;
