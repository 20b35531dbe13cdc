//! Keima's wire contract: the gRPC service generated from `proto/keima.proto` (module
//! `v1`), the protocol version, the encoding of sparse payloads (`sparse`), the checks a
//! receiver applies (`checks`, `usi_engine_name`), and the one conversion between a shard's work and
//! engine-core's settings types (`spec`). Nothing here knows about weights or search.

pub mod checks;
pub mod seal;
pub mod sparse;
pub mod spec;
pub mod usi_engine_name;

/// Generated messages, client and server of `keima.v1`.
pub mod v1 {
    tonic::include_proto!("keima.v1");
}

/// Bumped on any incompatible change of the messages, of the sparse layout or of the push
/// checksum. 2: the push checksum also covers the header and the statistics (`seal`).
/// 3: a shard's teacher settings are `TeacherSearch` and `SelfPlayGames` (`spec`).
/// 4: `ShardStats.cpu_seconds`; match shards (`MatchSpec`, `MatchResult`); both sealed.
/// 5: workers register their USI engines' names; match shards against one of them
/// (`MatchSpec.usi`), time losses in `MatchResult` (sealed). An older worker would play
/// such a shard against material.
pub const PROTOCOL_VERSION: u32 = 5;

/// Largest gRPC message either side accepts (one chunk plus headers; chunks hold at most
/// `sparse::ENTRIES_PER_CHUNK` entries, about 1 MiB).
pub const MAX_MESSAGE_BYTES: usize = 8 << 20;

/// Metadata key carrying the shared token (`Bearer <token>`).
pub const AUTH_HEADER: &str = "authorization";
