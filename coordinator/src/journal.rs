//! The merge journal: every merge is written to `journal/merge-<seq>.kjr` (atomically, and
//! fsynced) before it is applied and acknowledged. Entries are removed only once every
//! checkpoint kept on disk covers them, so any of them can resume; after a crash the
//! coordinator loads the newest checkpoint and replays the entries after it, so a merge
//! that was acknowledged is never lost and never redone. An entry holds everything the
//! merge changed (gradient and counters), so replay restores the same totals as the live
//! merge (`Totals::add_merge` is the one place both go through).
//!
//! File layout: `KEIMAJR1`, u32 LE length + JSON `JournalMeta`, u64 LE length + zstd blob of
//! the applied gradient (`keima_proto::sparse` gradient encoding), u64 LE FNV-1a 64 of all
//! bytes before it.

use crate::fsutil::{IoError, write_atomic};
use keima_proto::sparse::{self, Fnv64, GradEntry};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"KEIMAJR1";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JournalMeta {
    /// The version after this merge.
    pub seq: u64,
    pub shard_id: u64,
    pub attempt: u32,
    pub worker: String,
    /// Version the gradient was computed with.
    pub computed_on: u64,
    /// Scale applied for staleness (already included in the stored gradient).
    pub factor: f64,
    pub positions: u64,
    pub used: u64,
    pub loss_sum: f64,
    pub entries: u64,
    /// Teacher records stored under `teacher/` for this shard (written before the entry).
    #[serde(default)]
    pub records_kept: u64,
    /// The worker's CPU time for the shard (`ShardStats.cpu_seconds`).
    #[serde(default)]
    pub cpu_seconds: f64,
}

pub fn dir(run_dir: &Path) -> PathBuf {
    run_dir.join("journal")
}

fn entry_path(run_dir: &Path, seq: u64) -> PathBuf {
    dir(run_dir).join(format!("merge-{seq:012}.kjr"))
}

/// Writes entry `meta.seq` durably.
pub fn write(run_dir: &Path, meta: &JournalMeta, grads: &[GradEntry]) -> Result<(), IoError> {
    let json = serde_json::to_vec(meta).expect("journal metadata serializes (plain numbers and strings)");
    let blob = sparse::compress(&sparse::encode_gradient(grads));
    let mut b = Vec::with_capacity(32 + json.len() + blob.len());
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(&(json.len() as u32).to_le_bytes());
    b.extend_from_slice(&json);
    b.extend_from_slice(&(blob.len() as u64).to_le_bytes());
    b.extend_from_slice(&blob);
    let mut h = Fnv64::default();
    h.update(&b);
    b.extend_from_slice(&h.0.to_le_bytes());
    write_atomic(&entry_path(run_dir, meta.seq), &b)
}

/// Reads and checks one entry.
pub fn read(path: &Path, features: u64) -> Result<(JournalMeta, Vec<GradEntry>), String> {
    let err = |what: &str| format!("{}: {what}", path.display());
    let b = std::fs::read(path).map_err(|e| err(&e.to_string()))?;
    if b.len() < 28 || &b[..8] != MAGIC {
        return Err(err("not a Keima journal entry"));
    }
    let (body, sum) = b.split_at(b.len() - 8);
    let mut h = Fnv64::default();
    h.update(body);
    if h.0.to_le_bytes() != sum {
        return Err(err("checksum mismatch (corrupt journal entry)"));
    }
    let jl = u32::from_le_bytes(body[8..12].try_into().unwrap()) as usize;
    let json = body.get(12..12 + jl).ok_or_else(|| err("truncated"))?;
    let meta: JournalMeta = serde_json::from_slice(json).map_err(|e| err(&e.to_string()))?;
    let bl_at = 12 + jl;
    let bl =
        u64::from_le_bytes(body.get(bl_at..bl_at + 8).ok_or_else(|| err("truncated"))?.try_into().unwrap());
    let blob = body.get(bl_at + 8..bl_at + 8 + bl as usize).ok_or_else(|| err("truncated"))?;
    let raw = sparse::decompress(blob, usize::MAX >> 1).map_err(|e| err(&e.to_string()))?;
    let mut grads = Vec::with_capacity(meta.entries as usize);
    sparse::decode_gradient(&raw, features, None, &mut grads).map_err(|e| err(&e.to_string()))?;
    if grads.len() as u64 != meta.entries {
        return Err(err("entry count does not match its header"));
    }
    Ok((meta, grads))
}

/// Sequence numbers present, sorted.
pub fn list(run_dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut out: Vec<(u64, PathBuf)> = std::fs::read_dir(dir(run_dir))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let seq = name.strip_prefix("merge-")?.strip_suffix(".kjr")?.parse().ok()?;
            Some((seq, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// Removes the entries up to and including `seq` (covered by every checkpoint kept).
pub fn prune(run_dir: &Path, seq: u64) -> Result<(), IoError> {
    for (s, p) in list(run_dir) {
        if s <= seq {
            std::fs::remove_file(&p).map_err(IoError::at("remove journal entry", &p))?;
        }
    }
    Ok(())
}

/// Removes temporary files of entries whose write a crash interrupted (never acknowledged).
pub fn remove_unfinished(run_dir: &Path) -> Result<u64, IoError> {
    let mut n = 0;
    for e in std::fs::read_dir(dir(run_dir)).into_iter().flatten().filter_map(|e| e.ok()) {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "tmp") {
            std::fs::remove_file(&p).map_err(IoError::at("remove unfinished journal entry", &p))?;
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption_detected() {
        let tmp = tempfile::Builder::new().prefix("keima-journal-").tempdir_in(std::env::temp_dir()).unwrap();
        let d = tmp.path();
        let meta = JournalMeta {
            seq: 3,
            shard_id: 9,
            attempt: 2,
            worker: "w".into(),
            computed_on: 2,
            factor: 1.0,
            positions: 10,
            used: 9,
            loss_sum: 6.5,
            entries: 2,
            records_kept: 4,
            cpu_seconds: 2.5,
        };
        let g = vec![(4, [0.5, -1.0]), (70, [2.0, 0.0])];
        write(d, &meta, &g).unwrap();
        let l = list(d);
        assert_eq!(l.len(), 1);
        assert_eq!(read(&l[0].1, 100).unwrap(), (meta, g));
        let mut bytes = std::fs::read(&l[0].1).unwrap();
        let n = bytes.len();
        bytes[n / 2] ^= 1;
        std::fs::write(&l[0].1, &bytes).unwrap();
        assert!(read(&l[0].1, 100).unwrap_err().contains("checksum"));
        prune(d, 3).unwrap();
        assert!(list(d).is_empty());
    }
}
