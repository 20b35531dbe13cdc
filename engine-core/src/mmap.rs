//! Read-only memory maps of the files Keima reads in place (KPPT eval files, the dobutsu
//! solved table), in one place so that crates without `unsafe` can map them too.

use memmap2::Mmap;
use std::fs::File;

/// Maps `file` read-only. For files that Keima never writes in place: every writer of
/// such a file writes a temp file, fsyncs it and renames it over the old one.
pub fn map_read_only(file: &File) -> std::io::Result<Mmap> {
    // SAFETY: the mapping is read-only and private to this process, and the files mapped
    // here are never written in place by Keima (saves go to a temp file that is renamed
    // over), so the mapped bytes do not change underneath us when Keima is the only writer.
    unsafe { Mmap::map(file) }
}
