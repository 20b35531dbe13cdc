//! Large tables (the transposition table, the histories, the evaluation tables) in anonymous
//! memory aligned to 2 MiB and marked for transparent huge pages. The search reads them at
//! random places, and with 4 KiB pages almost every read would also miss the TLB.

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

const HUGE_PAGE: usize = 2 << 20;

/// Types for which all-zero bytes are a valid value.
///
/// # Safety
/// Implement only for types whose every field is an integer, an atomic integer, or an
/// array or `repr(C)` struct of such.
pub unsafe trait ZeroValid {}

// SAFETY: integers and atomic integers are valid at zero.
unsafe impl ZeroValid for i16 {}
// SAFETY: as above.
unsafe impl ZeroValid for u32 {}
// SAFETY: as above.
unsafe impl ZeroValid for i32 {}
// SAFETY: an array of zero-valid items is zero-valid.
unsafe impl<T: ZeroValid, const N: usize> ZeroValid for [T; N] {}

/// A fixed-length, zero-initialised array on huge pages.
pub struct HugeArray<T: ZeroValid> {
    map: memmap2::MmapMut,
    offset: usize,
    len: usize,
    _items: PhantomData<T>,
}

impl<T: ZeroValid> HugeArray<T> {
    /// `len` zeroed items. Panics if the memory cannot be had (like `vec!` does).
    pub fn zeroed(len: usize) -> HugeArray<T> {
        assert!(std::mem::align_of::<T>() <= HUGE_PAGE);
        let bytes = len * std::mem::size_of::<T>();
        let map = memmap2::MmapOptions::new()
            .len(bytes + HUGE_PAGE)
            .map_anon()
            .unwrap_or_else(|e| panic!("allocating a {bytes}-byte search table: {e}"));
        let offset = (HUGE_PAGE - map.as_ptr() as usize % HUGE_PAGE) % HUGE_PAGE;
        #[cfg(target_os = "linux")]
        {
            // Only a hint: without transparent huge pages the table works the same.
            let _ = map.advise_range(memmap2::Advice::HugePage, offset, bytes.max(1));
        }
        HugeArray { map, offset, len, _items: PhantomData }
    }
}

impl<T: ZeroValid> Deref for HugeArray<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: the map holds at least `offset + len * size_of::<T>()` bytes; the start
        // is 2 MiB-aligned, so aligned for T; anonymous memory starts zeroed and zero is a
        // valid T (`ZeroValid`), and only valid Ts are written through `deref_mut`; the
        // slice borrows `self`, which owns the map.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(self.offset) as *const T, self.len) }
    }
}

impl<T: ZeroValid> DerefMut for HugeArray<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, with the unique borrow of `self` making the slice unique.
        unsafe { std::slice::from_raw_parts_mut(self.map.as_mut_ptr().add(self.offset) as *mut T, self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_aligned_and_writable() {
        let mut a: HugeArray<i16> = HugeArray::zeroed(3 << 20);
        assert_eq!(a.len(), 3 << 20);
        assert_eq!(a.as_ptr() as usize % HUGE_PAGE, 0);
        assert!(a.iter().all(|&x| x == 0));
        a[12345] = -7;
        a[(3 << 20) - 1] = 9;
        assert_eq!((a[12345], a[(3 << 20) - 1]), (-7, 9));
        a.fill(0);
        assert!(a.iter().all(|&x| x == 0));
        let empty: HugeArray<u32> = HugeArray::zeroed(0);
        assert!(empty.is_empty());
    }
}
