//! Teacher data: PackedSfen, PackedSfenValue, zstd teacher shards.
