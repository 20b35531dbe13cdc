//! KPPT eval files (`KK_synthesized.bin`, `KKP_synthesized.bin`, `KPP_synthesized.bin`):
//! raw little-endian arrays without a header. Loading memory-maps them (no copy of the
//! ~860 MB; a search copies them onto huge pages with `KpptTables::into_owned`); saving
//! writes each file atomically (temp file, fsync, rename).

use super::kppt::{KK_LEN, KKP_LEN, KPP_LEN, KpptTables, Table};
use crate::mmap::map_read_only;
use std::fs::File;
use std::io::{BufWriter, Write};
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

fn map_table<T: crate::huge_pages::ZeroValid + Copy + 'static>(
    path: &Path,
    len: usize,
) -> Result<Table<T>, EvalFileError> {
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
    // Eval files are saved atomically (`write_atomic`), never written in place.
    let map = map_read_only(&file).map_err(io_err(path))?;
    assert_eq!(map.as_ptr() as usize % std::mem::align_of::<T>(), 0, "mmap is page-aligned");
    Ok(Table::Mapped { map, len })
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
