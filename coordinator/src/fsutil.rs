//! Atomic file writes and path-naming I/O errors (engine-core's `fsutil`, which the
//! checkpoints share).

pub use engine_core::fsutil::{IoError, fsync_dir, write_atomic};
