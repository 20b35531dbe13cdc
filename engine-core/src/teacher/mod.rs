//! Teacher data: PackedSfen (32-byte positions), PackedSfenValue (40-byte records) and
//! zstd teacher shards with a JSON manifest. Formats: shared/spec/formats.md.
//!
//! Everything read from a file is validated: a record that fails is counted by reason
//! (`RejectCounts`) and skipped, never used.

pub mod config;
pub mod gensfen;
pub mod openings;
pub mod packed_sfen;
pub mod psv;
pub mod shard;
pub mod stats;

pub use openings::{Opening, load_openings};
pub use packed_sfen::{PackError, PackedSfen, pack, try_pack, unpack, unpack_with_ply};
pub use psv::{PackedSfenValue, RejectCounts, RejectKind, RejectReason};
pub use shard::{
    Fnv1a64, SHARD_FORMAT, SHARD_VERSION, ShardError, ShardManifest, ShardReader, ShardSettings, ShardWriter,
    TeacherRecord, manifest_path,
};
