//! Teacher shards: a zstd stream of raw 40-byte `PackedSfenValue` records plus a JSON
//! manifest beside it.
//!
//! Files for a shard at `PATH` (any name; `*.psv.zst` is the convention):
//! - `PATH`: one zstd frame whose content is the records back to back, so `zstd -d PATH`
//!   yields a plain `.bin` that other tools read;
//! - `PATH.manifest.json`: [`ShardManifest`] (format name and version, record count,
//!   zstd level, caller settings and eval id, writer-side reject counts, and an FNV-1a
//!   64-bit checksum of the uncompressed record bytes).
//!
//! Writing is atomic: both files are written to `*.tmp`, fsynced and renamed, the shard
//! first and the manifest last, so a manifest always describes a complete shard. A writer
//! dropped without `finish` removes its temporary file.
//!
//! Reading ([`ShardReader`]) accepts a zstd shard or a plain uncompressed `.bin` (detected
//! by the zstd magic number). If `PATH.manifest.json` exists the record count and checksum
//! are checked when the stream ends; without a manifest nothing can be checked beyond the
//! records themselves. Every record is validated; rejected records are counted by reason
//! and skipped.

use super::psv::{PackedSfenValue, RejectCounts};
use crate::rules::{Move, Position};
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// `format` field of every manifest.
pub const SHARD_FORMAT: &str = "keima-teacher-shard";
/// `version` field written by this code.
pub const SHARD_VERSION: u32 = 1;
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// 64-bit FNV-1a, streaming. Used as the manifest checksum of the uncompressed bytes.
#[derive(Debug, Clone, Copy)]
pub struct Fnv1a64(u64);

impl Default for Fnv1a64 {
    fn default() -> Self {
        Fnv1a64(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a64 {
    pub fn update(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        for &b in bytes {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }

    pub fn value(&self) -> u64 {
        self.0
    }

    /// The manifest form: `fnv1a64:` and 16 lowercase hex digits.
    pub fn to_manifest_string(&self) -> String {
        format!("fnv1a64:{:016x}", self.0)
    }
}

/// `<shard path>.manifest.json`.
pub fn manifest_path(shard: &Path) -> PathBuf {
    let mut s = shard.as_os_str().to_owned();
    s.push(".manifest.json");
    PathBuf::from(s)
}

fn tmp_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// What the caller records about how a shard was made.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardSettings {
    /// zstd compression level (1..=22; 3 is zstd's default).
    pub zstd_level: i32,
    /// Identifier of the evaluation function that produced the scores.
    pub eval_id: String,
    /// Free-form generation settings (depth, nodes, opening book, ...).
    pub settings: serde_json::Value,
}

impl Default for ShardSettings {
    fn default() -> Self {
        ShardSettings { zstd_level: 3, eval_id: String::new(), settings: serde_json::Value::Null }
    }
}

/// The JSON manifest beside a shard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardManifest {
    /// Always [`SHARD_FORMAT`].
    pub format: String,
    pub version: u32,
    /// Always "PackedSfenValue".
    pub record_format: String,
    /// Always 40.
    pub record_size: u32,
    /// Always "zstd".
    pub compression: String,
    pub zstd_level: i32,
    /// Records in the shard (rejected ones were not written and are not counted here).
    pub records: u64,
    /// `fnv1a64:<16 hex digits>` of the uncompressed record bytes.
    pub checksum: String,
    pub eval_id: String,
    pub settings: serde_json::Value,
    /// Records the writer refused (`ShardWriter::write` validates).
    #[serde(default)]
    pub rejects: RejectCounts,
    /// Seconds since the Unix epoch when the shard was finished.
    #[serde(default)]
    pub created_unix: u64,
}

fn io_err(path: &Path, what: &str, e: io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        format!(
            "teacher shard {}: {what}: {e} (check the path, permissions and free disk space)",
            path.display()
        ),
    )
}

/// Writes one shard. See the module documentation.
pub struct ShardWriter {
    path: PathBuf,
    tmp: PathBuf,
    encoder: Option<zstd::stream::write::Encoder<'static, BufWriter<File>>>,
    settings: ShardSettings,
    records: u64,
    checksum: Fnv1a64,
    rejects: RejectCounts,
}

impl ShardWriter {
    /// Starts writing `path` (through `path.tmp`). Any existing `path.tmp` is replaced.
    pub fn create(path: impl AsRef<Path>, settings: ShardSettings) -> io::Result<ShardWriter> {
        let path = path.as_ref().to_path_buf();
        let tmp = tmp_path(&path);
        let file = File::create(&tmp).map_err(|e| io_err(&tmp, "cannot create", e))?;
        let encoder =
            zstd::stream::write::Encoder::new(BufWriter::with_capacity(1 << 20, file), settings.zstd_level)
                .map_err(|e| io_err(&tmp, &format!("zstd level {}", settings.zstd_level), e))?;
        Ok(ShardWriter {
            path,
            tmp,
            encoder: Some(encoder),
            settings,
            records: 0,
            checksum: Fnv1a64::default(),
            rejects: RejectCounts::default(),
        })
    }

    /// Validates and writes a record. Returns `Ok(false)` (and counts the reason in the
    /// manifest's `rejects`) when the record is invalid; it is then not written.
    pub fn write(&mut self, psv: &PackedSfenValue) -> io::Result<bool> {
        match psv.validate() {
            Ok(_) => {
                if psv.has_padding_warning() {
                    self.rejects.nonzero_padding += 1;
                }
                self.write_raw(&psv.to_bytes())?;
                Ok(true)
            }
            Err(reason) => {
                self.rejects.add(&reason);
                Ok(false)
            }
        }
    }

    /// Writes 40 bytes without validation (for records validated elsewhere, and tests).
    pub fn write_raw(&mut self, bytes: &[u8; 40]) -> io::Result<()> {
        let enc = self.encoder.as_mut().expect("ShardWriter used after finish");
        enc.write_all(bytes).map_err(|e| io_err(&self.tmp, "write", e))?;
        self.checksum.update(bytes);
        self.records += 1;
        Ok(())
    }

    pub fn records(&self) -> u64 {
        self.records
    }

    pub fn rejects(&self) -> &RejectCounts {
        &self.rejects
    }

    /// Finishes the zstd frame, fsyncs, renames `path.tmp` to `path`, then writes the
    /// manifest the same way, and returns it.
    pub fn finish(mut self) -> io::Result<ShardManifest> {
        let enc = self.encoder.take().expect("ShardWriter finished twice");
        let buf = enc.finish().map_err(|e| io_err(&self.tmp, "finishing the zstd stream", e))?;
        let file = buf.into_inner().map_err(|e| io_err(&self.tmp, "flush", e.into_error()))?;
        file.sync_all().map_err(|e| io_err(&self.tmp, "fsync", e))?;
        drop(file);
        fs::rename(&self.tmp, &self.path).map_err(|e| io_err(&self.path, "rename from .tmp", e))?;
        sync_parent(&self.path);
        let manifest = ShardManifest {
            format: SHARD_FORMAT.to_string(),
            version: SHARD_VERSION,
            record_format: "PackedSfenValue".to_string(),
            record_size: PackedSfenValue::SIZE as u32,
            compression: "zstd".to_string(),
            zstd_level: self.settings.zstd_level,
            records: self.records,
            checksum: self.checksum.to_manifest_string(),
            eval_id: self.settings.eval_id.clone(),
            settings: self.settings.settings.clone(),
            rejects: self.rejects,
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        };
        let mpath = manifest_path(&self.path);
        let mtmp = tmp_path(&mpath);
        let json = serde_json::to_vec_pretty(&manifest).map_err(io::Error::other)?;
        {
            let mut f = File::create(&mtmp).map_err(|e| io_err(&mtmp, "cannot create", e))?;
            f.write_all(&json).map_err(|e| io_err(&mtmp, "write", e))?;
            f.write_all(b"\n").map_err(|e| io_err(&mtmp, "write", e))?;
            f.sync_all().map_err(|e| io_err(&mtmp, "fsync", e))?;
        }
        fs::rename(&mtmp, &mpath).map_err(|e| io_err(&mpath, "rename from .tmp", e))?;
        sync_parent(&mpath);
        Ok(manifest)
    }
}

impl Drop for ShardWriter {
    fn drop(&mut self) {
        if self.encoder.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Best effort: makes the rename durable on filesystems that need a directory fsync.
fn sync_parent(path: &Path) {
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// Errors reading a shard or `.bin`. Rejected records are not errors (see `RejectCounts`).
#[derive(Debug, Error)]
pub enum ShardError {
    #[error("teacher file {path}: {what}: {source} (check the path and permissions)")]
    Io {
        path: PathBuf,
        what: &'static str,
        #[source]
        source: io::Error,
    },
    #[error(
        "teacher shard {path}: zstd decompression failed at record {record}: {source}; the file \
         is truncated or corrupt: regenerate it or drop it from the data set"
    )]
    Decompress {
        path: PathBuf,
        record: u64,
        #[source]
        source: io::Error,
    },
    #[error(
        "teacher file {path}: truncated: record {record} has only {bytes} of 40 bytes (file length \
         not a multiple of 40); the file was cut short: regenerate it or drop it"
    )]
    Truncated { path: PathBuf, record: u64, bytes: usize },
    #[error("teacher manifest {path}: {message}")]
    Manifest { path: PathBuf, message: String },
    #[error(
        "teacher shard {path}: holds {actual} records but its manifest says {expected}; the shard \
         or manifest was modified or cut short: regenerate the shard"
    )]
    CountMismatch { path: PathBuf, expected: u64, actual: u64 },
    #[error(
        "teacher shard {path}: checksum of the records is {actual} but the manifest says \
         {expected}; the shard is corrupt or was modified: regenerate it"
    )]
    ChecksumMismatch { path: PathBuf, expected: String, actual: String },
}

/// A validated record.
#[derive(Debug, Clone, Copy)]
pub struct TeacherRecord {
    /// Index of the record in the file (rejected records included).
    pub index: u64,
    pub psv: PackedSfenValue,
    /// The decoded position, ply = max(game_ply, 1).
    pub pos: Position,
    /// `None` when the record has no move (Move16 0).
    pub mv: Option<Move>,
}

/// Streams validated records from a shard or a plain `.bin`. Also an `Iterator` of
/// `Result<TeacherRecord, ShardError>`; after an error it yields nothing more.
pub struct ShardReader {
    path: PathBuf,
    source: Box<dyn Read + Send>,
    compressed: bool,
    manifest: Option<ShardManifest>,
    index: u64,
    checksum: Fnv1a64,
    rejects: RejectCounts,
    done: bool,
}

impl ShardReader {
    /// Opens a zstd shard or plain `.bin`, with its manifest if `path.manifest.json` exists.
    pub fn open(path: impl AsRef<Path>) -> Result<ShardReader, ShardError> {
        let path = path.as_ref().to_path_buf();
        let io = |what, source| ShardError::Io { path: path.clone(), what, source };
        let mut file = File::open(&path).map_err(|e| io("cannot open", e))?;
        let mut magic = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match file.read(&mut magic[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io("read", e)),
            }
        }
        let compressed = got == 4 && magic == ZSTD_MAGIC;
        let file = File::open(&path).map_err(|e| io("cannot open", e))?;
        let source: Box<dyn Read + Send> = if compressed {
            let dec = zstd::stream::read::Decoder::new(file).map_err(|e| ShardError::Decompress {
                path: path.clone(),
                record: 0,
                source: e,
            })?;
            Box::new(dec)
        } else {
            Box::new(BufReader::with_capacity(1 << 20, file))
        };
        let mpath = manifest_path(&path);
        let manifest = match fs::read(&mpath) {
            Ok(bytes) => Some(parse_manifest(&mpath, &bytes)?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(ShardError::Io { path: mpath, what: "cannot read manifest", source: e }),
        };
        Ok(ShardReader {
            path,
            source,
            compressed,
            manifest,
            index: 0,
            checksum: Fnv1a64::default(),
            rejects: RejectCounts::default(),
            done: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_compressed(&self) -> bool {
        self.compressed
    }

    pub fn manifest(&self) -> Option<&ShardManifest> {
        self.manifest.as_ref()
    }

    /// Rejected records so far (and padding warnings).
    pub fn rejects(&self) -> &RejectCounts {
        &self.rejects
    }

    /// Records read so far, rejected ones included.
    pub fn records_read(&self) -> u64 {
        self.index
    }

    /// Reads one 40-byte record; `None` at a clean end of stream.
    fn read_raw(&mut self) -> Result<Option<[u8; 40]>, ShardError> {
        let mut buf = [0u8; 40];
        let mut got = 0;
        while got < 40 {
            match self.source.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if self.compressed => {
                    return Err(ShardError::Decompress {
                        path: self.path.clone(),
                        record: self.index,
                        source: e,
                    });
                }
                Err(e) => return Err(ShardError::Io { path: self.path.clone(), what: "read", source: e }),
            }
        }
        match got {
            0 => Ok(None),
            40 => Ok(Some(buf)),
            n => Err(ShardError::Truncated { path: self.path.clone(), record: self.index, bytes: n }),
        }
    }

    fn finish_checks(&self) -> Result<(), ShardError> {
        let Some(m) = &self.manifest else { return Ok(()) };
        if m.records != self.index {
            return Err(ShardError::CountMismatch {
                path: self.path.clone(),
                expected: m.records,
                actual: self.index,
            });
        }
        let actual = self.checksum.to_manifest_string();
        if m.checksum != actual {
            return Err(ShardError::ChecksumMismatch {
                path: self.path.clone(),
                expected: m.checksum.clone(),
                actual,
            });
        }
        Ok(())
    }

    /// The next valid record, skipping (and counting) rejected ones; `Ok(None)` at the end,
    /// after the manifest's count and checksum were verified.
    pub fn next_record(&mut self) -> Result<Option<TeacherRecord>, ShardError> {
        if self.done {
            return Ok(None);
        }
        let r = self.next_inner();
        if !matches!(r, Ok(Some(_))) {
            self.done = true;
        }
        r
    }

    fn next_inner(&mut self) -> Result<Option<TeacherRecord>, ShardError> {
        loop {
            let Some(bytes) = self.read_raw()? else {
                self.finish_checks()?;
                return Ok(None);
            };
            self.checksum.update(&bytes);
            let index = self.index;
            self.index += 1;
            let psv = PackedSfenValue::from_bytes(&bytes);
            match psv.validate() {
                Ok((pos, mv)) => {
                    if psv.has_padding_warning() {
                        self.rejects.nonzero_padding += 1;
                    }
                    return Ok(Some(TeacherRecord { index, psv, pos, mv }));
                }
                Err(reason) => self.rejects.add(&reason),
            }
        }
    }

    /// Reads the whole file: valid records and the reject counts.
    pub fn read_all(path: impl AsRef<Path>) -> Result<(Vec<TeacherRecord>, RejectCounts), ShardError> {
        let mut r = ShardReader::open(path)?;
        let mut out = Vec::new();
        while let Some(rec) = r.next_record()? {
            out.push(rec);
        }
        Ok((out, r.rejects))
    }
}

impl Iterator for ShardReader {
    type Item = Result<TeacherRecord, ShardError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

fn parse_manifest(path: &Path, bytes: &[u8]) -> Result<ShardManifest, ShardError> {
    let err = |message: String| ShardError::Manifest { path: path.to_path_buf(), message };
    let m: ShardManifest = serde_json::from_slice(bytes).map_err(|e| {
        err(format!("not a valid manifest ({e}); restore or delete it and regenerate the shard"))
    })?;
    if m.format != SHARD_FORMAT {
        return Err(err(format!(
            "field format is {:?}, expected {SHARD_FORMAT:?}; this is not a Keima teacher manifest",
            m.format
        )));
    }
    if m.version != SHARD_VERSION {
        return Err(err(format!(
            "field version is {}, this build reads version {SHARD_VERSION}; use a matching Keima \
             build or regenerate the shard",
            m.version
        )));
    }
    if m.record_size != PackedSfenValue::SIZE as u32 {
        return Err(err(format!(
            "field record_size is {}, expected 40; the shard is not PackedSfenValue records",
            m.record_size
        )));
    }
    Ok(m)
}
