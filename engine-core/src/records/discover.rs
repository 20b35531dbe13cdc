//! Finding record files: paths the caller names, directories searched recursively.

use super::load::format_from_extension;
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum DiscoverError {
    #[error("{}: no such file or directory", .0.display())]
    Missing(PathBuf),
    #[error("{}: {source}", path.display())]
    ReadDir { path: PathBuf, source: std::io::Error },
}

/// The record files named by `paths`, in order: a file is taken as given (whatever its
/// extension); a directory is searched recursively, its entries in sorted order, for files
/// whose extension names a record format ([`format_from_extension`]). A path that does
/// not exist is an error.
pub fn record_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, DiscoverError> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut files)?;
        } else if p.exists() {
            files.push(p.clone());
        } else {
            return Err(DiscoverError::Missing(p.clone()));
        }
    }
    Ok(files)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), DiscoverError> {
    let read_error = |source| DiscoverError::ReadDir { path: dir.to_path_buf(), source };
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).map_err(read_error)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out)?;
        } else if format_from_extension(&p).is_some() {
            out.push(p);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_are_searched_for_record_extensions() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        for name in ["b.csa", "a.KIF", "notes.txt", "sub/c.ki2u", "sub/deeper/d.sfen", "sub/e.usi"] {
            std::fs::write(root.join(name), "").unwrap();
        }
        let explicit = root.join("notes.txt");
        let found = record_files(&[root.to_path_buf(), explicit.clone()]).unwrap();
        let names: Vec<String> =
            found.iter().map(|p| p.strip_prefix(root).unwrap().display().to_string()).collect();
        assert_eq!(names, ["a.KIF", "b.csa", "sub/c.ki2u", "sub/deeper/d.sfen", "sub/e.usi", "notes.txt"]);
        let missing = root.join("nope");
        let e = record_files(std::slice::from_ref(&missing)).unwrap_err();
        assert_eq!(e.to_string(), format!("{}: no such file or directory", missing.display()));
    }
}
