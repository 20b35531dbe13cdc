//! The layout of sparse payloads (weights and gradients) inside the `blob`/`gradient`
//! byte fields, and their checks.
//!
//! A blob is a zstd frame whose content is a sequence of entries sorted by strictly
//! increasing feature index:
//! - index: the first entry's index as a LEB128 varint, then each next index as the
//!   varint of (index − previous index), which is ≥ 1;
//! - weights (`WeightEntry`): two zigzag-LEB128 varints (board, turn) of the quantized
//!   values;
//! - gradients (`GradEntry`): two little-endian f32 (board, turn).
//!
//! Every blob starts its own delta chain, so chunks decode independently. Decoding never
//! panics and never allocates more than the caller's limit: the decompressed size is
//! bounded, indices must increase and stay below the layout's feature count, values must be
//! finite, and the entry count must equal what the message announced.

use thiserror::Error;

/// Uncompressed entries per chunk (about 1 MiB of gradient data).
pub const ENTRIES_PER_CHUNK: usize = 80_000;
/// Largest uncompressed blob accepted (a chunk of `ENTRIES_PER_CHUNK` is well below it).
pub const MAX_BLOB_BYTES: usize = 4 << 20;
/// zstd level for payloads: fast; the data is mostly varints and small floats.
pub const ZSTD_LEVEL: i32 = 1;

/// A quantized weight: feature index and [board, turn] values (patterns use only board).
pub type WeightEntry = (u32, [i32; 2]);
/// A gradient: feature index and [board, turn] components.
pub type GradEntry = (u32, [f32; 2]);

#[derive(Debug, Error, PartialEq)]
pub enum SparseError {
    #[error("payload is not a valid zstd frame: {0}")]
    Compression(String),
    #[error("payload decompresses to more than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("entry {entry}: truncated payload")]
    Truncated { entry: u64 },
    #[error("entry {entry}: index {index} is not above the previous index")]
    NotIncreasing { entry: u64, index: u64 },
    #[error("entry {entry}: index {index} is outside the layout's {features} features")]
    OutOfRange { entry: u64, index: u64, features: u64 },
    #[error("entry {entry}: value is NaN or infinite")]
    NotFinite { entry: u64 },
    #[error("entry {entry}: value {value} does not fit a 32-bit weight")]
    ValueRange { entry: u64, value: i64 },
    #[error("the message announced {announced} entries but the payload holds {found}")]
    Count { announced: u64, found: u64 },
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Compresses an uncompressed blob.
pub fn compress(raw: &[u8]) -> Vec<u8> {
    zstd::bulk::compress(raw, ZSTD_LEVEL).expect("zstd compression of an in-memory buffer cannot fail")
}

/// Decompresses at most `limit` bytes; a larger content is an error, not an allocation.
pub fn decompress(blob: &[u8], limit: usize) -> Result<Vec<u8>, SparseError> {
    use std::io::Read;
    let mut d =
        zstd::stream::read::Decoder::new(blob).map_err(|e| SparseError::Compression(e.to_string()))?;
    let mut out = Vec::new();
    (&mut d)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| SparseError::Compression(e.to_string()))?;
    if out.len() > limit {
        return Err(SparseError::TooLarge { limit });
    }
    Ok(out)
}

fn check_index(entry: u64, index: u64, prev: Option<u64>, features: u64) -> Result<(), SparseError> {
    if let Some(p) = prev
        && index <= p
    {
        return Err(SparseError::NotIncreasing { entry, index });
    }
    if index >= features {
        return Err(SparseError::OutOfRange { entry, index, features });
    }
    Ok(())
}

fn put_index(out: &mut Vec<u8>, index: u32, prev: &mut Option<u32>) {
    let d = match *prev {
        Some(p) => {
            debug_assert!(index > p, "entries must be sorted by strictly increasing index");
            (index - p) as u64
        }
        None => index as u64,
    };
    put_varint(out, d);
    *prev = Some(index);
}

fn get_index(b: &[u8], pos: &mut usize, entry: u64, prev: Option<u64>) -> Result<u64, SparseError> {
    let d = get_varint(b, pos).ok_or(SparseError::Truncated { entry })?;
    match prev {
        Some(p) => {
            if d == 0 {
                return Err(SparseError::NotIncreasing { entry, index: p });
            }
            p.checked_add(d).ok_or(SparseError::OutOfRange { entry, index: u64::MAX, features: 0 })
        }
        None => Ok(d),
    }
}

/// Uncompressed encoding of weight entries (sorted by increasing index).
pub fn encode_weights(entries: &[WeightEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * 5);
    let mut prev = None;
    for &(i, v) in entries {
        put_index(&mut out, i, &mut prev);
        put_varint(&mut out, zigzag(v[0] as i64));
        put_varint(&mut out, zigzag(v[1] as i64));
    }
    out
}

/// Decodes and checks weight entries; `announced` is the count the message gave.
pub fn decode_weights(raw: &[u8], features: u64, announced: u64) -> Result<Vec<WeightEntry>, SparseError> {
    let mut out = Vec::with_capacity(announced.min(ENTRIES_PER_CHUNK as u64 * 2) as usize);
    let mut pos = 0;
    let mut prev: Option<u64> = None;
    while pos < raw.len() {
        let entry = out.len() as u64;
        let index = get_index(raw, &mut pos, entry, prev)?;
        check_index(entry, index, prev, features)?;
        let mut v = [0i32; 2];
        for slot in &mut v {
            let z = unzigzag(get_varint(raw, &mut pos).ok_or(SparseError::Truncated { entry })?);
            *slot = i32::try_from(z).map_err(|_| SparseError::ValueRange { entry, value: z })?;
        }
        out.push((index as u32, v));
        prev = Some(index);
    }
    if out.len() as u64 != announced {
        return Err(SparseError::Count { announced, found: out.len() as u64 });
    }
    Ok(out)
}

/// Uncompressed encoding of gradient entries (sorted by increasing index).
pub fn encode_gradient(entries: &[GradEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * 11);
    let mut prev = None;
    for &(i, g) in entries {
        put_index(&mut out, i, &mut prev);
        out.extend_from_slice(&g[0].to_le_bytes());
        out.extend_from_slice(&g[1].to_le_bytes());
    }
    out
}

/// Decodes and checks gradient entries (finite values, increasing in-range indices),
/// appending to `out`. Returns the number decoded. `prev` is the last index of the
/// previous chunk, so indices increase across a whole push.
pub fn decode_gradient(
    raw: &[u8],
    features: u64,
    prev_chunk_last: Option<u32>,
    out: &mut Vec<GradEntry>,
) -> Result<u64, SparseError> {
    let mut pos = 0;
    let mut prev: Option<u64> = None;
    let mut n = 0u64;
    while pos < raw.len() {
        let entry = n;
        let index = get_index(raw, &mut pos, entry, prev)?;
        check_index(entry, index, prev.or(prev_chunk_last.map(u64::from)), features)?;
        let b = raw.get(pos..pos + 8).ok_or(SparseError::Truncated { entry })?;
        pos += 8;
        let g =
            [f32::from_le_bytes(b[..4].try_into().unwrap()), f32::from_le_bytes(b[4..].try_into().unwrap())];
        if !g[0].is_finite() || !g[1].is_finite() {
            return Err(SparseError::NotFinite { entry });
        }
        out.push((index as u32, g));
        prev = Some(index);
        n += 1;
    }
    Ok(n)
}

/// FNV-1a 64, used as the end-to-end checksum of a push (see `seal`).
#[derive(Clone, Copy, Debug)]
pub struct Fnv64(pub u64);

impl Default for Fnv64 {
    fn default() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv64 {
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_round_trip_extremes() {
        let e = vec![(0, [i32::MIN, i32::MAX]), (1, [-1, 0]), (300, [7, -32767]), (u32::MAX - 1, [1, 1])];
        let raw = encode_weights(&e);
        assert_eq!(decode_weights(&raw, u32::MAX as u64, 4).unwrap(), e);
        assert_eq!(
            decode_weights(&raw, 301, 4),
            Err(SparseError::OutOfRange { entry: 3, index: u32::MAX as u64 - 1, features: 301 })
        );
        assert_eq!(
            decode_weights(&raw, u32::MAX as u64, 5),
            Err(SparseError::Count { announced: 5, found: 4 })
        );
        assert_eq!(
            decode_weights(&raw[..raw.len() - 1], u32::MAX as u64, 4),
            Err(SparseError::Truncated { entry: 3 })
        );
    }

    #[test]
    fn gradient_rejects_nan_and_disorder() {
        let raw = encode_gradient(&[(5, [1.0, -2.5]), (9, [0.0, 3.0])]);
        let mut out = Vec::new();
        assert_eq!(decode_gradient(&raw, 10, None, &mut out), Ok(2));
        assert_eq!(out, vec![(5, [1.0, -2.5]), (9, [0.0, 3.0])]);
        // The next chunk must continue above index 9.
        assert_eq!(
            decode_gradient(&raw, 10, Some(9), &mut Vec::new()),
            Err(SparseError::NotIncreasing { entry: 0, index: 5 })
        );
        let mut bad = raw.clone();
        bad[1..5].copy_from_slice(&f32::NAN.to_le_bytes());
        assert_eq!(
            decode_gradient(&bad, 10, None, &mut Vec::new()),
            Err(SparseError::NotFinite { entry: 0 })
        );
        let mut inf = raw.clone();
        inf[5..9].copy_from_slice(&f32::INFINITY.to_le_bytes());
        assert_eq!(
            decode_gradient(&inf, 10, None, &mut Vec::new()),
            Err(SparseError::NotFinite { entry: 0 })
        );
    }

    #[test]
    fn decompress_is_bounded() {
        let big = vec![0u8; 1 << 20];
        let z = compress(&big);
        assert!(z.len() < 1000, "zeros compress well");
        assert_eq!(decompress(&z, 1000), Err(SparseError::TooLarge { limit: 1000 }));
        assert_eq!(decompress(&z, 1 << 20).unwrap().len(), 1 << 20);
        assert!(decompress(b"not zstd", 100).is_err());
    }

    proptest::proptest! {
        #[test]
        fn decoders_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = decode_weights(&bytes, 1 << 30, 3);
            let _ = decode_gradient(&bytes, 1 << 30, None, &mut Vec::new());
            let _ = decompress(&bytes, 1 << 16);
        }

        #[test]
        fn gradients_round_trip(mut idx in proptest::collection::vec(0u32..1_000_000, 0..300), seed in 0u32..1000) {
            idx.sort_unstable();
            idx.dedup();
            let e: Vec<GradEntry> = idx.iter().map(|&i| (i, [(i ^ seed) as f32 * 0.25 - 7.0, -(seed as f32)])).collect();
            let raw = decompress(&compress(&encode_gradient(&e)), MAX_BLOB_BYTES).unwrap();
            let mut out = Vec::new();
            proptest::prop_assert_eq!(decode_gradient(&raw, 1_000_000, None, &mut out).unwrap(), e.len() as u64);
            proptest::prop_assert_eq!(out, e);
        }
    }
}
