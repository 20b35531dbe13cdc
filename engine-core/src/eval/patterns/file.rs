//! Pattern files: a versioned header, fixed-size records (pattern + weight) and a checksum.
//!
//! Layout (little-endian): magic `KEIMAPAT`, version u32 = 1, count u32, flags u32 = 0,
//! then `count` records of 20 bytes — size u8, relative u8, 2 zero bytes, four triples of
//! (colour u8, piece type u8, square u8) (unused triples zero), weight i32 — then an
//! FNV-1a 64-bit checksum of everything before it.

use super::pattern::{MAX_PATTERN_SIZE, Pattern, Triple};
use super::set::PatternSet;
use crate::rules::{Color, PieceType, Square};
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;

pub const MAGIC: &[u8; 8] = b"KEIMAPAT";
pub const VERSION: u32 = 1;
const HEADER_LEN: usize = 20;
const RECORD_LEN: usize = 20;

#[derive(Debug, Error)]
pub enum PatternFileError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a Keima pattern file (bad magic); make one with `keima patterns extract`")]
    Magic { path: PathBuf },
    #[error(
        "{path}: format version {found}, this build reads version {VERSION}; re-extract or upgrade Keima"
    )]
    Version { path: PathBuf, found: u32 },
    #[error(
        "{path}: {actual} bytes, but the header promises {count} patterns ({expected} bytes); the file is truncated or corrupt"
    )]
    Size { path: PathBuf, count: u32, expected: u64, actual: u64 },
    #[error("{path}: checksum mismatch; the file is corrupt")]
    Checksum { path: PathBuf },
    #[error("{path}: pattern {index}: {reason}")]
    Record { path: PathBuf, index: usize, reason: String },
}

pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Serialises a pattern set (patterns and weights).
pub fn to_bytes(set: &PatternSet) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + set.len() * RECORD_LEN + 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(set.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    for (p, w) in set.patterns().iter().zip(set.weights()) {
        out.push(p.triples().len() as u8);
        out.push(p.is_relative() as u8);
        out.extend_from_slice(&[0, 0]);
        for k in 0..MAX_PATTERN_SIZE {
            match p.triples().get(k) {
                Some(t) => {
                    out.extend_from_slice(&[t.color as u8, t.piece_type as u8, t.square.index() as u8])
                }
                None => out.extend_from_slice(&[0, 0, 0]),
            }
        }
        out.extend_from_slice(&w.to_le_bytes());
    }
    let sum = fnv1a64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Parses bytes written by `to_bytes`; `path` names the source in errors.
pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<PatternSet, PatternFileError> {
    let path_buf = || path.to_path_buf();
    if bytes.len() < HEADER_LEN + 8 || &bytes[..8] != MAGIC {
        return Err(PatternFileError::Magic { path: path_buf() });
    }
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
    let version = u32_at(8);
    if version != VERSION {
        return Err(PatternFileError::Version { path: path_buf(), found: version });
    }
    let count = u32_at(12);
    let expected = HEADER_LEN as u64 + count as u64 * RECORD_LEN as u64 + 8;
    if bytes.len() as u64 != expected {
        return Err(PatternFileError::Size { path: path_buf(), count, expected, actual: bytes.len() as u64 });
    }
    let body = &bytes[..bytes.len() - 8];
    let stored = u64::from_le_bytes(bytes[bytes.len() - 8..].try_into().expect("8 bytes"));
    if fnv1a64(body) != stored {
        return Err(PatternFileError::Checksum { path: path_buf() });
    }
    let mut patterns = Vec::with_capacity(count as usize);
    let mut weights = Vec::with_capacity(count as usize);
    for index in 0..count as usize {
        let r = &body[HEADER_LEN + index * RECORD_LEN..HEADER_LEN + (index + 1) * RECORD_LEN];
        let bad =
            |reason: &str| PatternFileError::Record { path: path_buf(), index, reason: reason.to_string() };
        let size = r[0] as usize;
        if r[1] > 1 || r[2] != 0 || r[3] != 0 {
            return Err(bad("bad flags"));
        }
        let mut triples = Vec::with_capacity(size);
        for k in 0..size.min(MAX_PATTERN_SIZE) {
            let t = &r[4 + 3 * k..7 + 3 * k];
            let color = match t[0] {
                0 => Color::Black,
                1 => Color::White,
                _ => return Err(bad("colour must be 0 or 1")),
            };
            let piece_type = PieceType::from_u8(t[1]).ok_or_else(|| bad("piece type must be 1..=14"))?;
            let square = Square::try_from_index(t[2] as usize).ok_or_else(|| bad("square must be 0..=80"))?;
            triples.push(Triple { color, piece_type, square });
        }
        let pattern = Pattern::new(triples, r[1] == 1)
            .ok_or_else(|| bad("a pattern has 2 to 4 triples on distinct squares"))?;
        patterns.push(pattern);
        weights.push(i32::from_le_bytes(r[16..20].try_into().expect("4 bytes")));
    }
    Ok(PatternSet::new(patterns, weights))
}

pub fn load(path: &Path) -> Result<PatternSet, PatternFileError> {
    let bytes =
        std::fs::read(path).map_err(|source| PatternFileError::Io { path: path.to_path_buf(), source })?;
    from_bytes(&bytes, path)
}

/// Writes atomically: temp file, fsync, rename.
pub fn save(set: &PatternSet, path: &Path) -> Result<(), PatternFileError> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| PatternFileError::Io { path: p, source }
    };
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(&to_bytes(set)).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}
