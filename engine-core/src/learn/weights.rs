//! The training weight file: f32 weights and f32 AdaGrad accumulators, memory-mapped.
//!
//! # Layout (little-endian)
//! A 4096-byte header, then one 16-byte record per feature: `[w_board, w_turn, G_board,
//! G_turn]` (f32 each; weights in FV_SCALE units, the same units as the KPPT tables). Keeping
//! a weight next to its accumulator puts both in one cache line, so a sparse update
//! touches one line per weight.
//!
//! Header fields (byte offset: type):
//! - 0: `[u8; 8]` magic `KEIMAWTS`; 8: u32 format version (1); 12: u32 layout id
//!   (1 = KPPT with triangular KPP); 16: u32 fe_end (1548); 20: u32 king squares (81);
//! - 24: u64 KK features; 32: u64 KKP features; 40: u64 KPP features; 48: u64 patterns;
//! - 56: u32 optimizer (1 = AdaGrad); 60: u32 f32s per record (4);
//! - 64: u64 updates applied; 72: u64 examples trained;
//! - 80: u64 FNV-1a 64 of the pattern definitions (0 = no patterns);
//! - 88: u64 data checksum (`data_checksum`, 0 = not recorded; written by `seal`);
//! - 96: u32 factorization bits (`Factorization`: 1 = mirror, 2 = KP, 4 = PP relative
//!   to the king; 0 = none,
//!   which is every file written before factors existed);
//! - 4088: u64 FNV-1a 64 of bytes 0..4088 (header checksum). Other bytes are zero.
//!
//! Feature order (the global feature index):
//! - KK: `bk * 81 + wk` (81 × 81 records);
//! - KKP: `KK + (bk * 81 + wk) * FE_END + p` (p = 0 is stored but never trained: it stays 0);
//! - KPP: `KK + KKP + k * KPP_TRI + tri(a, b)` with `a > b >= 1` and
//!   `tri(a, b) = (a - 1)(a - 2)/2 + (b - 1)`: each symmetric pair `[k][a][b] = [k][b][a]`
//!   is stored once; the diagonal and BonaPiece 0 are not stored (they are zero on export);
//!   `KPP_TRI = 1547 · 1546 / 2`;
//! - patterns: `KK + KKP + KPP + i`, only the board slot `[0]` is used (the pattern's
//!   weight) with its accumulator in `[2]`;
//! - factor parameters, when the file trains factors (`factors`): KP after the patterns
//!   (`k * FE_END + p`), then PP relative to the king (`tri(ra, rb)` over relative pieces,
//!   see `REL_END`).
//!
//! Without factors every KK/KKP/KPP entry is its own weight; with them the records are
//! parameters whose fold gives each feature's value (`factors::effective`).
//! A full file is about 1.7 GB; it is created sparse, so untouched pages cost nothing.
//!
//! # Disk space
//! Writes go through the map, and a write into a hole that the file system cannot allocate
//! kills the process with SIGBUS rather than returning an error. A trainer therefore calls
//! `check_disk_space` first: the unallocated rest of the file must fit in the free space.
//! (Allocating ahead with fallocate would guarantee it, but ext4 then reports every page
//! the trainer has read as data to SEEK_DATA, and checkpoints would copy the whole file.)

use crate::eval::bona_piece::{FE_END, FE_HAND_END};
use crate::eval::kppt::{KK_LEN, KKP_LEN};
use memmap2::MmapMut;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;

pub const MAGIC: [u8; 8] = *b"KEIMAWTS";
pub const FORMAT_VERSION: u32 = 1;
pub const LAYOUT_KPPT_TRIANGLE: u32 = 1;
pub const OPTIMIZER_ADAGRAD: u32 = 1;
pub const HEADER_LEN: usize = 4096;
pub const RECORD_F32S: usize = 4;
pub const RECORD_BYTES: usize = RECORD_F32S * 4;
/// Stored KPP pairs per king square.
pub const KPP_TRI: usize = (FE_END - 1) * (FE_END - 2) / 2;
pub const KPP_FEATURES: usize = 81 * KPP_TRI;
pub const KK_BASE: usize = 0;
pub const KKP_BASE: usize = KK_LEN;
pub const KPP_BASE: usize = KK_LEN + KKP_LEN;
pub const PATTERN_BASE: usize = KPP_BASE + KPP_FEATURES;

/// One feature's record: `[w_board, w_turn, G_board, G_turn]`.
pub type Record = [f32; RECORD_F32S];

#[inline]
pub fn kk_index(bk: usize, wk: usize) -> usize {
    KK_BASE + bk * 81 + wk
}

#[inline]
pub fn kkp_index(bk: usize, wk: usize, p: usize) -> usize {
    KKP_BASE + (bk * 81 + wk) * FE_END + p
}

/// Index of the pair within one king's triangle (`a != b`, both non-zero).
#[inline]
pub fn tri(a: usize, b: usize) -> usize {
    debug_assert!(a.max(b) < FE_END);
    pair_index(a, b)
}

/// Index of an unordered pair of distinct non-zero indices (`a`, `b` in either order):
/// `(a - 1)(a - 2)/2 + (b - 1)` with `a > b`, so pairs below `n` fill `0..(n-1)(n-2)/2`.
/// KPP's triangle (`tri`) and the PP factor's pairs use it; `untri` inverts it.
#[inline]
pub fn pair_index(a: usize, b: usize) -> usize {
    let (a, b) = if a > b { (a, b) } else { (b, a) };
    debug_assert!(b >= 1 && a != b);
    (a - 1) * (a - 2) / 2 + (b - 1)
}

/// Inverse of `pair_index` (and of `tri`): (a, b) with a > b.
pub fn untri(t: usize) -> (usize, usize) {
    // Largest a with (a-1)(a-2)/2 <= t. The value is positive, so the cast's truncation is
    // the floor (`f64::floor` is a library call on baseline x86-64, hot in merges and syncs).
    let mut a = (((8.0 * t as f64 + 1.0).sqrt() + 3.0) / 2.0) as usize;
    while (a - 1) * (a - 2) / 2 > t {
        a -= 1;
    }
    while a * (a - 1) / 2 <= t {
        a += 1;
    }
    (a, t - (a - 1) * (a - 2) / 2 + 1)
}

/// [`untri`] for triangle indices taken in increasing order: `a` carries the previous pair's
/// first piece (start at 2) and only steps up, so no square root is needed. A pass over a
/// sorted list of millions of KPP indices (merges, weight syncs) decodes them this way.
#[inline]
pub fn untri_ascending(a: &mut usize, t: usize) -> (usize, usize) {
    debug_assert!((*a - 1) * (*a - 2) / 2 <= t, "indices must not decrease");
    while *a * (*a - 1) / 2 <= t {
        *a += 1;
    }
    (*a, t - (*a - 1) * (*a - 2) / 2 + 1)
}

/// Decodes KPP feature indices given in increasing order into `(king, a, b)`: the
/// king's triangle is walked with [`untri_ascending`], restarting at each new king.
pub struct SortedKppDecoder {
    king: usize,
    first: usize,
}

impl Default for SortedKppDecoder {
    fn default() -> Self {
        SortedKppDecoder { king: usize::MAX, first: 2 }
    }
}

impl SortedKppDecoder {
    /// `(k, a, b)` of KPP feature `i` (`KPP_BASE <= i < PATTERN_BASE`), `i` not below the
    /// previous one.
    #[inline]
    pub fn decode(&mut self, i: usize) -> (usize, usize, usize) {
        let (k, t) = ((i - KPP_BASE) / KPP_TRI, (i - KPP_BASE) % KPP_TRI);
        if k != self.king {
            (self.king, self.first) = (k, 2);
        }
        let (a, b) = untri_ascending(&mut self.first, t);
        (k, a, b)
    }
}

#[inline]
pub fn kpp_index(k: usize, a: usize, b: usize) -> usize {
    KPP_BASE + k * KPP_TRI + tri(a, b)
}

#[inline]
pub fn pattern_index(i: usize) -> usize {
    PATTERN_BASE + i
}

/// What a feature index refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    Kk { bk: usize, wk: usize },
    Kkp { bk: usize, wk: usize, p: usize },
    Kpp { k: usize, a: usize, b: usize },
    Pattern(usize),
}

pub fn decode_index(i: usize) -> Feature {
    if i < KKP_BASE {
        Feature::Kk { bk: i / 81, wk: i % 81 }
    } else if i < KPP_BASE {
        let j = i - KKP_BASE;
        let kk = j / FE_END;
        Feature::Kkp { bk: kk / 81, wk: kk % 81, p: j % FE_END }
    } else if i < PATTERN_BASE {
        let j = i - KPP_BASE;
        let (a, b) = untri(j % KPP_TRI);
        Feature::Kpp { k: j / KPP_TRI, a, b }
    } else {
        Feature::Pattern(i - PATTERN_BASE)
    }
}

#[derive(Debug, Error)]
pub enum WeightsError {
    #[error("{path}: {what}: {source}")]
    Io { path: PathBuf, what: &'static str, source: std::io::Error },
    #[error("{path}: not a Keima weight file (bad magic); create one with `keima weights init`")]
    BadMagic { path: PathBuf },
    #[error("{path}: header checksum mismatch: the header is corrupt")]
    BadChecksum { path: PathBuf },
    #[error(
        "{path}: weight data checksum mismatch: the file is corrupt, or it is a training run's live weights.kw \
         (mid-run state; use a checkpoint's: <run>/checkpoints/ckpt-N/weights.kw)"
    )]
    BadDataChecksum { path: PathBuf },
    #[error("{path}: {what} is {found}, this build expects {expected}: a file of another layout or version")]
    Layout { path: PathBuf, what: &'static str, found: u64, expected: u64 },
    #[error("{path}: truncated: {actual} bytes, the header implies {expected}")]
    Truncated { path: PathBuf, expected: u64, actual: u64 },
    #[error("{path}: the file has {found} pattern weights but the pattern set has {expected}")]
    PatternCount { path: PathBuf, found: u64, expected: u64 },
    #[error(
        "{path}: not enough disk space for the weight file: it can grow by {needed} bytes \
         ({:.2} GB) as training writes weights, and the file system has {free} bytes ({:.2} GB) free. The file is memory-mapped, \
         so running out of space while training would crash the run. Free space there or put the \
         run directory on a larger file system (`check_disk_space = false` skips this check, at that risk)",
        *needed as f64 / 1e9,
        *free as f64 / 1e9
    )]
    NoSpace { path: PathBuf, needed: u64, free: u64 },
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A fast 64-bit checksum of the record data (8 bytes at a time; zero words contribute
/// nothing, so holes of a sparse file can be skipped: see `data_checksum_extents`).
pub fn data_checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15 ^ bytes.len() as u64;
    let (chunks, rest) = bytes.as_chunks::<8>();
    checksum_words(&mut h, chunks, 0);
    for &b in rest {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn checksum_words(h: &mut u64, words: &[[u8; 8]], first_index: usize) {
    for (i, c) in words.iter().enumerate() {
        let w = u64::from_le_bytes(*c);
        if w != 0 {
            *h ^= (w ^ (first_index + i) as u64).wrapping_mul(0xff51_afd7_ed55_8ccd).rotate_left(29);
            *h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        }
    }
}

/// `data_checksum(bytes)` reading only `extents` (byte ranges, 8-byte aligned, sorted,
/// covering every non-zero byte); `bytes.len()` must be a multiple of 8.
pub fn data_checksum_extents(bytes: &[u8], extents: &[(usize, usize)]) -> u64 {
    debug_assert!(bytes.len().is_multiple_of(8));
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15 ^ bytes.len() as u64;
    for &(start, end) in extents {
        let (start, end) = (start & !7, end.min(bytes.len()).next_multiple_of(8).min(bytes.len()));
        checksum_words(&mut h, bytes[start..end].as_chunks::<8>().0, start / 8);
    }
    h
}

/// The byte ranges of `file` that may hold data (not holes), from SEEK_DATA/SEEK_HOLE;
/// the whole file where the file system cannot tell.
pub fn file_extents(file: &File, len: u64) -> Vec<(u64, u64)> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    let mut out = Vec::new();
    let mut pos: i64 = 0;
    while (pos as u64) < len {
        // SAFETY: lseek on a file descriptor we own; no memory is passed.
        let data = unsafe { libc::lseek(fd, pos, libc::SEEK_DATA) };
        if data < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENXIO) {
                break; // no data after pos
            }
            return vec![(0, len)];
        }
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, data, libc::SEEK_HOLE) };
        let hole = if hole < 0 { len as i64 } else { hole };
        out.push((data as u64, (hole as u64).min(len)));
        pos = hole;
    }
    out
}

/// Checks that the file system can hold the rest of `file` (`len` bytes in all): the part
/// not yet allocated must fit in the free space, with a margin of 1/16.
pub fn check_file_space(file: &File, len: u64, path: &Path) -> Result<(), WeightsError> {
    use std::os::fd::AsRawFd;
    let io = |what| move |source| WeightsError::Io { path: path.to_path_buf(), what, source };
    let allocated = std::os::unix::fs::MetadataExt::blocks(&file.metadata().map_err(io("stat"))?) * 512;
    // SAFETY: statvfs is a plain C struct of integers, valid when zeroed.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: the fd is open for the whole call (we hold `file`) and `st` is a valid,
    // writable statvfs.
    if unsafe { libc::fstatvfs(file.as_raw_fd(), &mut st) } != 0 {
        return Err(io("statvfs")(std::io::Error::last_os_error()));
    }
    check_free_space(path, len.saturating_sub(allocated), st.f_bavail as u64 * st.f_frsize as u64)
}

/// `needed` bytes must fit in `free` with a margin of 1/16 (metadata, other writers).
pub fn check_free_space(path: &Path, needed: u64, free: u64) -> Result<(), WeightsError> {
    if needed.saturating_add(needed / 16) <= free {
        Ok(())
    } else {
        Err(WeightsError::NoSpace { path: path.to_path_buf(), needed, free })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub patterns: u64,
    pub updates: u64,
    pub examples: u64,
    pub pattern_hash: u64,
    pub data_checksum: u64,
    pub factors: Factorization,
}

impl Header {
    /// Records in the file (raw features and factor parameters).
    pub fn features(&self) -> usize {
        self.param_layout().params()
    }

    /// Where the parameters are (and which factors fold into the features).
    pub fn param_layout(&self) -> ParamLayout {
        ParamLayout { factors: self.factors, patterns: self.patterns as usize }
    }

    pub fn file_len(&self) -> u64 {
        HEADER_LEN as u64 + self.features() as u64 * RECORD_BYTES as u64
    }

    fn to_bytes(self) -> Vec<u8> {
        let mut b = vec![0u8; HEADER_LEN];
        let put32 = |b: &mut [u8], o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_le_bytes());
        let put64 = |b: &mut [u8], o: usize, v: u64| b[o..o + 8].copy_from_slice(&v.to_le_bytes());
        b[..8].copy_from_slice(&MAGIC);
        put32(&mut b, 8, FORMAT_VERSION);
        put32(&mut b, 12, LAYOUT_KPPT_TRIANGLE);
        put32(&mut b, 16, FE_END as u32);
        put32(&mut b, 20, 81);
        put64(&mut b, 24, KK_LEN as u64);
        put64(&mut b, 32, KKP_LEN as u64);
        put64(&mut b, 40, KPP_FEATURES as u64);
        put64(&mut b, 48, self.patterns);
        put32(&mut b, 56, OPTIMIZER_ADAGRAD);
        put32(&mut b, 60, RECORD_F32S as u32);
        put64(&mut b, 64, self.updates);
        put64(&mut b, 72, self.examples);
        put64(&mut b, 80, self.pattern_hash);
        put64(&mut b, 88, self.data_checksum);
        put32(&mut b, 96, self.factors.bits());
        let c = fnv1a64(&b[..HEADER_LEN - 8]);
        put64(&mut b, HEADER_LEN - 8, c);
        b
    }

    fn parse(b: &[u8], path: &Path, file_len: u64) -> Result<Header, WeightsError> {
        let p = || path.to_path_buf();
        if b.len() < HEADER_LEN {
            return Err(WeightsError::Truncated { path: p(), expected: HEADER_LEN as u64, actual: file_len });
        }
        if b[..8] != MAGIC {
            return Err(WeightsError::BadMagic { path: p() });
        }
        let g32 = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let g64 = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        if fnv1a64(&b[..HEADER_LEN - 8]) != g64(HEADER_LEN - 8) {
            return Err(WeightsError::BadChecksum { path: p() });
        }
        let checks: [(&'static str, u64, u64); 9] = [
            ("format version", g32(8) as u64, FORMAT_VERSION as u64),
            ("layout id", g32(12) as u64, LAYOUT_KPPT_TRIANGLE as u64),
            ("fe_end", g32(16) as u64, FE_END as u64),
            ("king squares", g32(20) as u64, 81),
            ("KK features", g64(24), KK_LEN as u64),
            ("KKP features", g64(32), KKP_LEN as u64),
            ("KPP features", g64(40), KPP_FEATURES as u64),
            ("optimizer kind", g32(56) as u64, OPTIMIZER_ADAGRAD as u64),
            ("record size", g32(60) as u64, RECORD_F32S as u64),
        ];
        for (what, found, expected) in checks {
            if found != expected {
                return Err(WeightsError::Layout { path: p(), what, found, expected });
            }
        }
        let h = Header {
            patterns: g64(48),
            updates: g64(64),
            examples: g64(72),
            pattern_hash: g64(80),
            data_checksum: g64(88),
            factors: Factorization::from_bits(g32(96)).ok_or_else(|| WeightsError::Layout {
                path: p(),
                what: "factorization bits",
                found: g32(96) as u64,
                expected: Factorization::ALL.bits() as u64,
            })?,
        };
        if file_len != h.file_len() {
            return Err(WeightsError::Truncated { path: p(), expected: h.file_len(), actual: file_len });
        }
        Ok(h)
    }
}

/// An open weight file.
pub struct WeightFile {
    path: PathBuf,
    file: File,
    map: MmapMut,
    pub header: Header,
}

impl std::fmt::Debug for WeightFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeightFile").field("path", &self.path).field("header", &self.header).finish()
    }
}

impl WeightFile {
    /// Creates a zeroed (sparse) file: all weights and accumulators 0.
    pub fn create(path: &Path, patterns: u64, pattern_hash: u64) -> Result<WeightFile, WeightsError> {
        Self::create_factored(path, patterns, pattern_hash, Factorization::NONE)
    }

    /// `create` for a file that trains `factors`.
    pub fn create_factored(
        path: &Path,
        patterns: u64,
        pattern_hash: u64,
        factors: Factorization,
    ) -> Result<WeightFile, WeightsError> {
        let io = |what| move |source| WeightsError::Io { path: path.to_path_buf(), what, source };
        let header = Header { patterns, updates: 0, examples: 0, pattern_hash, data_checksum: 0, factors };
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(io("cannot create"))?;
        f.write_all(&header.to_bytes()).map_err(io("write header"))?;
        f.set_len(header.file_len()).map_err(io("set length"))?;
        Self::map(path, f, header)
    }

    fn map(path: &Path, f: File, header: Header) -> Result<WeightFile, WeightsError> {
        // SAFETY: the file is opened read-write by this process; concurrent modification
        // by another process is not supported (documented: one trainer per file).
        let map = unsafe { MmapMut::map_mut(&f) }.map_err(|source| WeightsError::Io {
            path: path.to_path_buf(),
            what: "mmap",
            source,
        })?;
        Ok(WeightFile { path: path.to_path_buf(), file: f, map, header })
    }

    /// Checks that the disk can hold the whole file (see the module docs): one statvfs.
    pub fn check_disk_space(&self) -> Result<(), WeightsError> {
        check_file_space(&self.file, self.map.len() as u64, &self.path)
    }

    /// Opens and validates a file (layout, length, header checksum). With `verify_data`,
    /// also checks the recorded data checksum (if any).
    pub fn open(path: &Path, verify_data: bool) -> Result<WeightFile, WeightsError> {
        let io = |what| move |source| WeightsError::Io { path: path.to_path_buf(), what, source };
        let f = OpenOptions::new().read(true).write(true).open(path).map_err(io("cannot open"))?;
        let len = f.metadata().map_err(io("stat"))?.len();
        let mut head = vec![0u8; HEADER_LEN.min(len as usize)];
        {
            use std::io::Read;
            (&f).read_exact(&mut head).map_err(io("read header"))?;
        }
        let header = Header::parse(&head, path, len)?;
        let w = Self::map(path, f, header)?;
        if verify_data
            && header.data_checksum != 0
            && data_checksum_extents(w.data_bytes(), &w.data_extents()) != header.data_checksum
        {
            return Err(WeightsError::BadDataChecksum { path: path.to_path_buf() });
        }
        Ok(w)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the file to `to` (over whatever is there; the map stays valid) and fsyncs
    /// the directory.
    pub fn rename(&mut self, to: &Path) -> Result<(), WeightsError> {
        let io = |what| move |source| WeightsError::Io { path: to.to_path_buf(), what, source };
        std::fs::rename(&self.path, to).map_err(io("rename to"))?;
        self.path = to.to_path_buf();
        let dir = to.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        File::open(dir).and_then(|f| f.sync_all()).map_err(io("fsync the directory of"))
    }

    fn data_bytes(&self) -> &[u8] {
        &self.map[HEADER_LEN..]
    }

    pub fn records(&self) -> &[Record] {
        let bytes = self.data_bytes();
        // SAFETY: the map is page-aligned and HEADER_LEN is a multiple of 16, so the data
        // is aligned for f32; its length is a multiple of RECORD_BYTES (checked on open);
        // every bit pattern is a valid f32.
        unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const Record, bytes.len() / RECORD_BYTES) }
    }

    pub fn records_mut(&mut self) -> &mut [Record] {
        let bytes = &mut self.map[HEADER_LEN..];
        // SAFETY: as in `records`, with exclusive access through `&mut self`.
        unsafe {
            std::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut Record, bytes.len() / RECORD_BYTES)
        }
    }

    /// Rewrites the header (counters) in the map.
    pub fn write_header(&mut self) {
        let b = self.header.to_bytes();
        self.map[..HEADER_LEN].copy_from_slice(&b);
    }

    /// Data ranges of the file (relative to the start of the records): where it is not a
    /// hole. Pages that were only read stay holes, so this follows what was written.
    fn data_extents(&self) -> Vec<(usize, usize)> {
        let len = self.map.len() as u64;
        let ext = File::open(&self.path).map(|f| file_extents(&f, len)).unwrap_or_else(|_| vec![(0, len)]);
        ext.into_iter()
            .filter(|&(_, e)| e > HEADER_LEN as u64)
            .map(|(s, e)| ((s as usize).max(HEADER_LEN) - HEADER_LEN, e as usize - HEADER_LEN))
            .collect()
    }

    /// Records the data checksum in the header and flushes everything to disk.
    pub fn seal(&mut self) -> Result<(), WeightsError> {
        // Flush first so that written pages are data on disk, not holes.
        self.flush()?;
        let ext = self.data_extents();
        self.header.data_checksum = data_checksum_extents(self.data_bytes(), &ext);
        self.flush()
    }

    /// Writes the header and flushes the map.
    pub fn flush(&mut self) -> Result<(), WeightsError> {
        self.write_header();
        self.map.flush().map_err(|source| WeightsError::Io { path: self.path.clone(), what: "flush", source })
    }

    /// Copies the file to `dest` (sparse: holes and zero blocks stay holes), fsynced. Only
    /// the data ranges of the source are read.
    pub fn copy_sparse(&mut self, dest: &Path) -> Result<(), WeightsError> {
        use std::io::{Seek, SeekFrom};
        self.flush()?;
        let io = |what| move |source| WeightsError::Io { path: dest.to_path_buf(), what, source };
        let mut f = File::create(dest).map_err(io("cannot create"))?;
        const BLOCK: usize = 1 << 16;
        let total = self.map.len();
        let mut ranges = vec![(0usize, HEADER_LEN)];
        ranges.extend(self.data_extents().into_iter().map(|(s, e)| (s + HEADER_LEN, e + HEADER_LEN)));
        for (start, end) in ranges {
            let mut pos = start / BLOCK * BLOCK;
            while pos < end.min(total) {
                let stop = (pos + BLOCK).min(total);
                let block = &self.map[pos..stop];
                let zero = block.as_chunks::<8>().0.iter().all(|c| u64::from_le_bytes(*c) == 0)
                    && block.as_chunks::<8>().1.iter().all(|&b| b == 0);
                if !zero {
                    f.seek(SeekFrom::Start(pos as u64)).map_err(io("seek"))?;
                    f.write_all(block).map_err(io("write"))?;
                }
                pos = stop;
            }
        }
        f.set_len(total as u64).map_err(io("set length"))?;
        f.sync_all().map_err(io("fsync"))?;
        Ok(())
    }
}

/// Which factors a weight file trains (header field; all off = plain KPPT training).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Factorization {
    /// Share each KK/KKP/KPP weight with its left-right mirror image.
    pub mirror: bool,
    /// Train a KP (king, piece) factor folded into KKP.
    pub kp: bool,
    /// Train a PP factor relative to the king folded into KPP: every `KPP[k][a][b]` also
    /// reads the weight of its two pieces' places relative to the king `k` (hands as they
    /// are), shared by every king square where the same shape fits on the board.
    pub pp: bool,
}

const BIT_MIRROR: u32 = 1;
const BIT_KP: u32 = 2;
const BIT_PP: u32 = 4;

impl Factorization {
    pub const NONE: Factorization = Factorization { mirror: false, kp: false, pp: false };
    /// Every factor this build knows.
    pub const ALL: Factorization = Factorization { mirror: true, kp: true, pp: true };

    pub fn is_none(self) -> bool {
        self == Factorization::NONE
    }

    /// The header encoding.
    pub fn bits(self) -> u32 {
        (self.mirror as u32 * BIT_MIRROR) | (self.kp as u32 * BIT_KP) | (self.pp as u32 * BIT_PP)
    }

    /// `None` for bits this build does not know.
    pub fn from_bits(bits: u32) -> Option<Factorization> {
        if bits & !(BIT_MIRROR | BIT_KP | BIT_PP) != 0 {
            return None;
        }
        Some(Factorization { mirror: bits & BIT_MIRROR != 0, kp: bits & BIT_KP != 0, pp: bits & BIT_PP != 0 })
    }

    /// Parameters stored after the raw features (and patterns).
    pub fn extra_params(self) -> usize {
        (if self.kp { KP_PARAMS } else { 0 }) + if self.pp { PP_PARAMS } else { 0 }
    }
}

/// KP parameters: 81 king squares × FE_END pieces (`p = 0` is never used).
pub const KP_PARAMS: usize = 81 * FE_END;

/// Places relative to a king: file and rank offsets in −8..=8, `(df + 8) * 17 + (dr + 8)`.
pub const REL_PLACES: usize = 17 * 17;

/// Pieces relative to a king: the 90 hand indices as they are, then each of the 18 board
/// kinds (a BonaPiece's slots of 81 squares) at one of `REL_PLACES`.
pub const REL_END: usize = FE_HAND_END as usize + (FE_END - FE_HAND_END as usize) / 81 * REL_PLACES;

/// PP parameters: unordered pairs of distinct relative pieces (index 0 unused), stored as
/// KPP's pairs are (`pair_index`).
pub const PP_PARAMS: usize = (REL_END - 1) * (REL_END - 2) / 2;

/// Where the parameters are: the raw features (KK, KKP, KPP, patterns), then the factors
/// (`factors` folds them; `ParamLayout::kp_index` is there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamLayout {
    pub factors: Factorization,
    pub patterns: usize,
}

impl ParamLayout {
    /// Raw features: what the evaluator, the workers and the gradients address.
    pub fn raw_features(&self) -> usize {
        PATTERN_BASE + self.patterns
    }

    /// Records in the weight file.
    pub fn params(&self) -> usize {
        self.raw_features() + self.factors.extra_params()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tri_round_trips() {
        for a in 2..FE_END {
            for b in [1, a / 2 + 1, a - 1] {
                if b >= a || b == 0 {
                    continue;
                }
                assert_eq!(untri(tri(a, b)), (a, b));
                assert_eq!(tri(a, b), tri(b, a));
            }
        }
        assert_eq!(tri(FE_END - 1, FE_END - 2), KPP_TRI - 1);
        assert_eq!(tri(2, 1), 0);
        // Every pair index of KPP's triangle and of the PP factor's larger one inverts.
        for t in 0..pair_index(REL_END, REL_END - 1) {
            let (a, b) = untri(t);
            assert!(a > b && b >= 1, "{t}: ({a}, {b})");
            assert_eq!(pair_index(a, b), t);
        }
        // Stepping through increasing indices decodes the same pairs, with gaps too.
        let mut a = 2;
        for t in (0..KPP_TRI).step_by(7) {
            assert_eq!(untri_ascending(&mut a, t), untri(t), "{t}");
        }
    }

    #[test]
    fn sparse_copy_and_checksum_read_only_data_but_agree_with_full_scans() {
        let tmp = tempfile::Builder::new().prefix("keima-weights-sparse").tempdir().unwrap();
        let d = tmp.path();
        let (src, dst) = (d.join("a.kw"), d.join("b.kw"));
        let mut w = WeightFile::create(&src, 3, 7).unwrap();
        let n = w.records().len();
        for (k, i) in [0usize, 1, 4097, KPP_BASE + 12345, n / 2, n - 1].into_iter().enumerate() {
            w.records_mut()[i] = [k as f32 + 0.5, -1.0, 2.0, 0.25];
        }
        // Reading every page (as quantizing does) must not turn holes into data.
        let sum: f32 = w.records().iter().step_by(4096).map(|r| r[0]).sum();
        assert!(sum.is_finite());
        w.seal().unwrap();
        assert_eq!(w.header.data_checksum, data_checksum(w.data_bytes()));
        let ext = w.data_extents();
        let covered: usize = ext.iter().map(|(s, e)| e - s).sum();
        assert!(covered < w.data_bytes().len() / 100, "holes are skipped ({covered} bytes of data)");
        w.copy_sparse(&dst).unwrap();
        let c = WeightFile::open(&dst, true).unwrap();
        assert_eq!(data_checksum(c.data_bytes()), w.header.data_checksum, "the copy holds the same data");
        assert_eq!(c.header, w.header);
        assert_eq!(c.records()[n - 1], [5.5, -1.0, 2.0, 0.25]);
    }

    /// A small sparse file fits; a sparse file larger than the free space is refused with
    /// the file named; allocated blocks count as already held.
    #[test]
    fn disk_space_check_counts_only_unallocated_bytes() {
        let d = tempfile::Builder::new().prefix("keima-weights-space").tempdir().unwrap();
        let path = d.path().join("r.bin");
        let f = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        f.set_len(64 << 20).unwrap();
        check_file_space(&f, 64 << 20, &path).unwrap();
        // SAFETY: as in check_file_space.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: as in check_file_space.
        let status = unsafe { libc::fstatvfs(std::os::fd::AsRawFd::as_raw_fd(&f), &mut st) };
        assert_eq!(status, 0);
        let free = st.f_bavail as u64 * st.f_frsize as u64;
        let huge = free + (1 << 30);
        match check_file_space(&f, huge, &path) {
            Err(WeightsError::NoSpace { path: p, needed, .. }) => {
                assert_eq!(p, path);
                assert!(needed > free, "{needed} vs {free}");
            }
            other => panic!("{other:?}"),
        }
        // Written blocks are not needed again.
        std::os::unix::fs::FileExt::write_at(&f, &vec![1u8; 1 << 20], 0).unwrap();
        f.sync_all().unwrap();
        let Err(WeightsError::NoSpace { needed: after, .. }) = check_file_space(&f, huge, &path) else {
            panic!("still too large")
        };
        assert!(after <= huge - (1 << 20), "{after}");
    }

    #[test]
    fn free_space_check_names_the_file_and_the_sizes() {
        let p = Path::new("/runs/a/weights.kw");
        assert!(check_free_space(p, 1_000, 2_000).is_ok());
        assert!(check_free_space(p, 1_600_000_000, 1_700_000_000).is_ok());
        let e = check_free_space(p, 1_600_000_000, 1_650_000_000).unwrap_err();
        let m = e.to_string();
        assert!(m.contains("/runs/a/weights.kw") && m.contains("1.60 GB") && m.contains("1.65 GB"), "{m}");
        assert!(m.contains("check_disk_space = false"), "{m}");
    }

    #[test]
    fn decode_matches_encode() {
        assert_eq!(decode_index(kk_index(3, 77)), Feature::Kk { bk: 3, wk: 77 });
        assert_eq!(decode_index(kkp_index(80, 1, 1547)), Feature::Kkp { bk: 80, wk: 1, p: 1547 });
        assert_eq!(decode_index(kpp_index(40, 100, 1500)), Feature::Kpp { k: 40, a: 1500, b: 100 });
        assert_eq!(decode_index(pattern_index(7)), Feature::Pattern(7));
    }
}
