//! A cache prefetch hint: start loading a value's cache line that a read a little later
//! needs (the transposition table's cluster, the KPP rows of a move's evaluation).

/// Hints the CPU to bring `v`'s cache line into L1. Never changes what a program computes;
/// a no-op off x86_64.
#[inline(always)]
pub fn prefetch<T>(v: &T) {
    prefetch_at(std::slice::from_ref(v), 0);
}

/// Hints the CPU to bring element `i` of `slice` into L1, without a bounds check: hot loops
/// prefetch dozens of entries a node, and a prefetch past the end is harmless.
#[inline(always)]
pub fn prefetch_at<T>(slice: &[T], i: usize) {
    let p = slice.as_ptr().wrapping_add(i);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint and never faults, whatever the address (the
    // pointer is never read through). SSE, which has the instruction, is part of the x86_64
    // baseline.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::{prefetch, prefetch_at};

    #[test]
    fn prefetch_leaves_values_unchanged() {
        // Prefetching anything (the middle and the ends of a buffer) must not fault or write.
        let v: Vec<u64> = (0..4096).collect();
        for i in [0, 1, 2047, 4095] {
            prefetch(&v[i]);
        }
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    }

    #[test]
    fn prefetch_at_any_index_leaves_values_unchanged() {
        // Inside, at the end and far past it: a hint, never a read or a fault.
        let v: Vec<u64> = (0..4096).collect();
        for i in [0, 4095, 4096, 1 << 20, usize::MAX / 16] {
            prefetch_at(&v, i);
        }
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    }
}
