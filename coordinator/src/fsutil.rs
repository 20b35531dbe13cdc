//! Atomic file writes: temp file, fsync, rename, fsync of the directory. A crash at any
//! moment leaves either the old file or the new one.

use std::fs::File;
use std::io::Write;
use std::path::Path;

pub fn fsync_dir(dir: &Path) -> Result<(), String> {
    File::open(dir).and_then(|f| f.sync_all()).map_err(|e| format!("fsync {}: {e}", dir.display()))
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tmp = path.with_extension("tmp");
    let io = |e: std::io::Error| format!("{}: {e}", tmp.display());
    let mut f = File::create(&tmp).map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    f.sync_all().map_err(io)?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|e| format!("rename to {}: {e}", path.display()))?;
    fsync_dir(dir)
}
