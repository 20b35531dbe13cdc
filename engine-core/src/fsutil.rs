//! Atomic file writes: temp file, fsync, rename, fsync of the directory. A crash at any
//! moment leaves either the old file or the new one.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A failed file-system operation, naming the operation and the path.
#[derive(Debug, thiserror::Error)]
#[error("{what} {}: {source}", path.display())]
pub struct IoError {
    pub what: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl IoError {
    /// A `map_err` adapter: `.map_err(IoError::at("write", &path))`.
    pub fn at(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> IoError {
        let path = path.to_path_buf();
        move |source| IoError { what, path, source }
    }
}

pub fn fsync_dir(dir: &Path) -> Result<(), IoError> {
    File::open(dir).and_then(|f| f.sync_all()).map_err(IoError::at("fsync", dir))
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), IoError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(IoError::at("create directory", dir))?;
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).map_err(IoError::at("create", &tmp))?;
    f.write_all(bytes).and_then(|_| f.sync_all()).map_err(IoError::at("write", &tmp))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(IoError::at("rename into place", path))?;
    fsync_dir(dir)
}
