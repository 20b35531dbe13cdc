//! The solved table on disk, memory-mapped for lookups.
//!
//! Layout (little-endian): a 64-byte header — magic `KEIMADOB`, format version (u32),
//! reserved (u32), position count n (u64), max distance (u64), 32 reserved bytes — then
//! n sorted position keys (u64 each, `solver::table_key`: colour-normalised and
//! mirror-folded), then n value bytes (`solver::Value::to_byte`). About 9 bytes per
//! position: 0.96 GB for the full game. Version 1 tables (keys not mirror-folded) are
//! refused: rebuild them.

use super::solver::Value;
use engine_core::mmap::map_read_only;
use memmap2::Mmap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

const MAGIC: &[u8; 8] = b"KEIMADOB";
const VERSION: u32 = 2;
const HEADER: usize = 64;

/// Writes keys and values atomically (temp file, fsync, rename).
pub fn write_table(path: &Path, keys: &[u64], values: &[u8], max_distance: u32) -> std::io::Result<()> {
    assert_eq!(keys.len(), values.len());
    let tmp = path.with_extension("tmp");
    {
        let f = File::create(&tmp)?;
        let mut w = BufWriter::with_capacity(1 << 22, f);
        let mut h = [0u8; HEADER];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[16..24].copy_from_slice(&(keys.len() as u64).to_le_bytes());
        h[24..32].copy_from_slice(&(max_distance as u64).to_le_bytes());
        w.write_all(&h)?;
        for chunk in keys.chunks(1 << 16) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|k| k.to_le_bytes()).collect();
            w.write_all(&bytes)?;
        }
        w.write_all(values)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(Ok(d)) = path.parent().filter(|d| !d.as_os_str().is_empty()).map(File::open) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// A memory-mapped solved table.
pub struct Table {
    map: Mmap,
    n: usize,
    pub max_distance: u32,
}

impl Table {
    pub fn open(path: &Path) -> Result<Table, String> {
        let f = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        // Tables are written atomically (`write_table`), never in place.
        let map = map_read_only(&f).map_err(|e| format!("{}: mmap: {e}", path.display()))?;
        if map.len() < HEADER || &map[..8] != MAGIC {
            return Err(format!("{}: not a Keima dobutsu table (bad magic)", path.display()));
        }
        let version = u32::from_le_bytes(map[8..12].try_into().unwrap_or_default());
        if version != VERSION {
            return Err(format!(
                "{}: table version {version}, expected {VERSION}; rebuild it with `keima dobutsu solve --build --out FILE`",
                path.display()
            ));
        }
        let n = u64::from_le_bytes(map[16..24].try_into().unwrap_or_default()) as usize;
        let max_distance = u64::from_le_bytes(map[24..32].try_into().unwrap_or_default()) as u32;
        let want = n.checked_mul(9).and_then(|x| x.checked_add(HEADER));
        if want != Some(map.len()) {
            return Err(format!(
                "{}: header says {n} positions ({:?} bytes) but the file has {} bytes (truncated? rebuild with `keima dobutsu solve --build`)",
                path.display(),
                want,
                map.len()
            ));
        }
        Ok(Table { map, n, max_distance })
    }

    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    fn key_at(&self, i: usize) -> u64 {
        let o = HEADER + 8 * i;
        u64::from_le_bytes(self.map[o..o + 8].try_into().unwrap_or_default())
    }

    /// The value byte of a table key (`solver::table_key`; binary search over the mapped
    /// keys), None if absent.
    pub fn lookup(&self, key: u64) -> Option<u8> {
        let (mut lo, mut hi) = (0usize, self.n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let k = self.key_at(mid);
            if k < key {
                lo = mid + 1;
            } else if k > key {
                hi = mid;
            } else {
                return Some(self.map[HEADER + 8 * self.n + mid]);
            }
        }
        None
    }

    pub fn value(&self, key: u64) -> Option<Value> {
        self.lookup(key).map(Value::from_byte)
    }
}
