//! KPPT eval files (`KK_synthesized.bin`, `KKP_synthesized.bin`, `KPP_synthesized.bin`):
//! raw little-endian arrays without a header. `load_kppt_dir` memory-maps them (no copy of
//! the ~860 MB); `read_kppt_dir` reads them onto huge pages, which a long search pays back;
//! saving writes each file atomically (temp file, fsync, rename).

use super::kppt::{KK_LEN, KKP_LEN, KPP_LEN, KpptTables, Table};
use crate::huge_pages::{HugeArray, ZeroValid};
use crate::mmap::map_read_only;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

pub const KK_FILE: &str = "KK_synthesized.bin";
pub const KKP_FILE: &str = "KKP_synthesized.bin";
pub const KPP_FILE: &str = "KPP_synthesized.bin";

#[derive(Debug, Error)]
pub enum EvalFileError {
    #[error("{path}: missing; an eval directory must hold {KK_FILE}, {KKP_FILE} and {KPP_FILE}")]
    Missing { path: PathBuf },
    #[error(
        "{path}: {actual} bytes, expected {expected}; this is not a KPPT file of this layout (fe_end 1548)"
    )]
    WrongSize { path: PathBuf, expected: u64, actual: u64 },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("KPPT files are little-endian; this host is big-endian")]
    BigEndian,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> EvalFileError + '_ {
    move |source| EvalFileError::Io { path: path.to_path_buf(), source }
}

/// Table entries of the eval files: pairs of integers, so every bit pattern is a value.
trait IntPair: ZeroValid + Copy + 'static {}
impl IntPair for [i16; 2] {}
impl IntPair for [i32; 2] {}

/// Opens `path` and checks that it holds `len` entries of T.
fn open_table<T: IntPair>(path: &Path, len: usize) -> Result<File, EvalFileError> {
    if cfg!(target_endian = "big") {
        return Err(EvalFileError::BigEndian);
    }
    let file = File::open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            EvalFileError::Missing { path: path.to_path_buf() }
        } else {
            EvalFileError::Io { path: path.to_path_buf(), source: e }
        }
    })?;
    let expected = (len * std::mem::size_of::<T>()) as u64;
    let actual = file.metadata().map_err(io_err(path))?.len();
    if actual != expected {
        return Err(EvalFileError::WrongSize { path: path.to_path_buf(), expected, actual });
    }
    Ok(file)
}

fn map_table<T: IntPair>(path: &Path, len: usize) -> Result<Table<T>, EvalFileError> {
    let file = open_table::<T>(path, len)?;
    // Eval files are saved atomically (`write_atomic`), never written in place.
    let map = map_read_only(&file).map_err(io_err(path))?;
    assert_eq!(map.as_ptr() as usize % std::mem::align_of::<T>(), 0, "mmap is page-aligned");
    Ok(Table::Mapped { map, len })
}

fn read_table<T: IntPair>(path: &Path, len: usize) -> Result<Table<T>, EvalFileError> {
    let mut file = open_table::<T>(path, len)?;
    let mut table = HugeArray::<T>::zeroed(len);
    // SAFETY: the byte slice covers exactly the table's `len` entries and borrows it
    // uniquely; T is a pair of integers (`IntPair`), so any bytes read are valid entries,
    // little-endian as the file is (checked by `open_table`).
    let bytes = unsafe {
        std::slice::from_raw_parts_mut(table.as_mut_ptr() as *mut u8, len * std::mem::size_of::<T>())
    };
    file.read_exact(bytes).map_err(io_err(path))?;
    Ok(Table::Owned(table))
}

/// Reads the three files of `dir` into owned tables on huge pages: what a search should
/// use. It reads KPP rows at random places of ~780 MB, and through a map's 4 KiB pages
/// nearly every row also misses the TLB (~5% more nodes/s in BENCHMARKS.md); the read
/// costs about 2 s of system time once (the kernel zeroes the pages, then the read copies).
pub fn read_kppt_dir(dir: &Path) -> Result<KpptTables, EvalFileError> {
    Ok(KpptTables {
        kk: read_table(&dir.join(KK_FILE), KK_LEN)?,
        kkp: read_table(&dir.join(KKP_FILE), KKP_LEN)?,
        kpp: read_table(&dir.join(KPP_FILE), KPP_LEN)?,
    })
}

/// Memory-maps the three files of `dir`.
pub fn load_kppt_dir(dir: &Path) -> Result<KpptTables, EvalFileError> {
    Ok(KpptTables {
        kk: map_table(&dir.join(KK_FILE), KK_LEN)?,
        kkp: map_table(&dir.join(KKP_FILE), KKP_LEN)?,
        kpp: map_table(&dir.join(KPP_FILE), KPP_LEN)?,
    })
}

/// Writes `bytes` of each element to `path` atomically.
fn write_atomic<T: Copy>(
    path: &Path,
    data: &[T],
    to_le: impl Fn(&T, &mut Vec<u8>),
) -> Result<(), EvalFileError> {
    let tmp = path.with_extension("bin.tmp");
    let file = File::create(&tmp).map_err(io_err(&tmp))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let mut buf = Vec::with_capacity(1 << 16);
    for chunk in data.chunks(4096) {
        buf.clear();
        for x in chunk {
            to_le(x, &mut buf);
        }
        w.write_all(&buf).map_err(io_err(&tmp))?;
    }
    let file = w.into_inner().map_err(|e| EvalFileError::Io { path: tmp.clone(), source: e.into_error() })?;
    file.sync_all().map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))?;
    Ok(())
}

/// Writes the three files into `dir` (created if needed), each atomically.
pub fn save_kppt_dir(tables: &KpptTables, dir: &Path) -> Result<(), EvalFileError> {
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let i32x2 = |v: &[i32; 2], b: &mut Vec<u8>| {
        b.extend_from_slice(&v[0].to_le_bytes());
        b.extend_from_slice(&v[1].to_le_bytes());
    };
    write_atomic(&dir.join(KK_FILE), tables.kk.as_slice(), i32x2)?;
    write_atomic(&dir.join(KKP_FILE), tables.kkp.as_slice(), i32x2)?;
    write_atomic(&dir.join(KPP_FILE), tables.kpp.as_slice(), |v: &[i16; 2], b: &mut Vec<u8>| {
        b.extend_from_slice(&v[0].to_le_bytes());
        b.extend_from_slice(&v[1].to_le_bytes());
    })?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
