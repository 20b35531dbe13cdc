//! Teacher data for training: shard lists (with `*`/`?` wildcards in the file name), a
//! seeded bounded-buffer shuffle that emits every record exactly once per epoch (no
//! dropped tail), and the RNG.

use crate::teacher::{RejectCounts, ShardReader, TeacherRecord, manifest_path};
use std::path::{Path, PathBuf};

/// The learner's shuffle RNG: SplitMix64, whose one-word state is saved in checkpoints.
pub type Rng = crate::rng::SplitMix64;

/// The shuffle RNG of an epoch.
pub fn epoch_rng(seed: u64, epoch: u64) -> Rng {
    let mut r = Rng::new(seed ^ epoch.wrapping_mul(0xd1b5_4a32_d192_ed03));
    r.next_u64();
    r
}

fn wildcard(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            wildcard(&pattern[1..], name) || (!name.is_empty() && wildcard(pattern, &name[1..]))
        }
        (Some(b'?'), Some(_)) => wildcard(&pattern[1..], &name[1..]),
        (Some(p), Some(n)) if p == n => wildcard(&pattern[1..], &name[1..]),
        _ => false,
    }
}

/// Expands a list of paths and wildcard patterns (wildcards in the last component only)
/// into files, sorted per pattern. Manifests and `.tmp` files are excluded. A pattern
/// that matches nothing is an error.
pub fn resolve_shards(specs: &[String]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for spec in specs {
        if !spec.contains(['*', '?']) {
            let p = PathBuf::from(spec);
            if !p.is_file() {
                return Err(format!("teacher shard {spec}: no such file"));
            }
            out.push(p);
            continue;
        }
        let path = Path::new(spec);
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let pat = path.file_name().and_then(|f| f.to_str()).ok_or(format!("bad shard pattern {spec}"))?;
        if dir.to_string_lossy().contains(['*', '?']) {
            return Err(format!("shard pattern {spec}: wildcards are allowed in the file name only"));
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| format!("shard pattern {spec}: {}: {e}", dir.display()))?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().and_then(|f| f.to_str()).unwrap_or("");
                p.is_file()
                    && !name.ends_with(".manifest.json")
                    && !name.ends_with(".tmp")
                    && wildcard(pat.as_bytes(), name.as_bytes())
            })
            .collect();
        if found.is_empty() {
            return Err(format!("shard pattern {spec} matches no file"));
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

/// Record count from the shards' manifests, if every shard has one.
pub fn manifest_records(shards: &[PathBuf]) -> Option<u64> {
    let mut n = 0;
    for s in shards {
        let text = std::fs::read_to_string(manifest_path(s)).ok()?;
        let m: crate::teacher::ShardManifest = serde_json::from_str(&text).ok()?;
        n += m.records;
    }
    Some(n)
}

/// Streams every valid record of the shards once, shuffled within a bounded buffer.
pub struct ShuffleStream {
    shards: Vec<PathBuf>,
    next_shard: usize,
    reader: Option<ShardReader>,
    buffer: Vec<TeacherRecord>,
    capacity: usize,
    rng: Rng,
    emitted: u64,
    rejects: RejectCounts,
}

impl ShuffleStream {
    pub fn new(shards: Vec<PathBuf>, capacity: usize, rng: Rng) -> ShuffleStream {
        ShuffleStream {
            shards,
            next_shard: 0,
            reader: None,
            buffer: Vec::new(),
            capacity: capacity.max(1),
            rng,
            emitted: 0,
            rejects: RejectCounts::default(),
        }
    }

    fn read_one(&mut self) -> Result<Option<TeacherRecord>, String> {
        loop {
            if self.reader.is_none() {
                let Some(p) = self.shards.get(self.next_shard) else { return Ok(None) };
                self.next_shard += 1;
                self.reader = Some(ShardReader::open(p).map_err(|e| e.to_string())?);
            }
            let r = self.reader.as_mut().unwrap();
            match r.next_record().map_err(|e| e.to_string())? {
                Some(rec) => return Ok(Some(rec)),
                None => {
                    self.rejects.merge(r.rejects());
                    self.reader = None;
                }
            }
        }
    }

    pub fn next_record(&mut self) -> Result<Option<TeacherRecord>, String> {
        while self.buffer.len() < self.capacity {
            match self.read_one()? {
                Some(r) => self.buffer.push(r),
                None => break,
            }
        }
        if self.buffer.is_empty() {
            return Ok(None);
        }
        let i = self.rng.below(self.buffer.len());
        self.emitted += 1;
        Ok(Some(self.buffer.swap_remove(i)))
    }

    /// Up to `n` records (fewer only at the end of the data).
    pub fn next_batch(&mut self, n: usize) -> Result<Vec<TeacherRecord>, String> {
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            match self.next_record()? {
                Some(r) => v.push(r),
                None => break,
            }
        }
        Ok(v)
    }

    /// Skips `n` records (resuming inside an epoch).
    pub fn skip(&mut self, n: u64) -> Result<(), String> {
        for _ in 0..n {
            if self.next_record()?.is_none() {
                return Err("the teacher data has fewer records than the checkpoint consumed: \
                            the shards changed since the checkpoint"
                    .into());
            }
        }
        Ok(())
    }

    pub fn emitted(&self) -> u64 {
        self.emitted
    }

    pub fn rng(&self) -> Rng {
        self.rng
    }

    /// Rejected records of the shards finished so far.
    pub fn rejects(&self) -> &RejectCounts {
        &self.rejects
    }
}
