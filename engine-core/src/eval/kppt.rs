//! KPPT evaluation: KK, KKP and KPP tables, each with a board and a side-to-move (turn)
//! part, summed over the piece list (formula in shared/spec/formats.md, FV_SCALE 32).
//!
//! The sum is kept in three parts so that a move changes only what it must: the KPP sum
//! seen from Black's king, the KPP sum seen from White's (inverted) king, and KK + KKP.

use super::bona_piece::{BonaPiece, FE_END};
use super::piece_list::{PIECE_LIST_LEN, PieceList};
use crate::huge_pages::{HugeArray, ZeroValid};
use crate::prefetch::prefetch_at;
use crate::rules::{Color, Square};

pub const FV_SCALE: i32 = 32;
pub const KK_LEN: usize = 81 * 81;
pub const KKP_LEN: usize = 81 * 81 * FE_END;
pub const KPP_LEN: usize = 81 * FE_END * FE_END;

/// Table storage: owned on huge pages (training; eval files read for a search), or
/// borrowed from a memory map (eval files as `load_kppt_dir` maps them).
pub enum Table<T: ZeroValid + 'static> {
    Owned(HugeArray<T>),
    Mapped { map: memmap2::Mmap, len: usize },
}

impl<T: ZeroValid + Copy + 'static> Table<T> {
    /// `len` zeroed entries on huge pages.
    pub fn zeroed(len: usize) -> Table<T> {
        Table::Owned(HugeArray::zeroed(len))
    }

    #[inline]
    pub fn as_slice(&self) -> &[T] {
        match self {
            Table::Owned(v) => v,
            Table::Mapped { map, len } => {
                // SAFETY: the map is page-aligned (checked for T's alignment when created),
                // exactly `len * size_of::<T>()` bytes long (checked by the loader), read-only
                // and alive as long as `self`; T is a plain array of integers, so every bit
                // pattern is a valid value. Little-endian hosts only (checked by the loader).
                unsafe { std::slice::from_raw_parts(map.as_ptr() as *const T, *len) }
            }
        }
    }

    /// Mutable access; converts a mapped table to an owned copy first.
    pub fn make_mut(&mut self) -> &mut [T] {
        if let Table::Mapped { .. } = self {
            let src = self.as_slice();
            let mut owned = HugeArray::zeroed(src.len());
            owned.copy_from_slice(src);
            *self = Table::Owned(owned);
        }
        match self {
            Table::Owned(v) => v,
            Table::Mapped { .. } => unreachable!(),
        }
    }
}

pub struct KpptTables {
    pub kk: Table<[i32; 2]>,
    pub kkp: Table<[i32; 2]>,
    pub kpp: Table<[i16; 2]>,
}

/// The three partial sums of a position (FV_SCALE units, before the material term).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KpptSum {
    pub black_kpp: [i32; 2],
    pub white_kpp: [i32; 2],
    pub kk_kkp: [i32; 2],
}

impl KpptSum {
    /// Board part from Black's view (without material).
    #[inline]
    pub fn board(&self) -> i32 {
        self.black_kpp[0] - self.white_kpp[0] + self.kk_kkp[0]
    }

    /// Side-to-move part (added from the side to move's view).
    #[inline]
    pub fn turn(&self) -> i32 {
        self.black_kpp[1] + self.white_kpp[1] + self.kk_kkp[1]
    }
}

#[inline]
fn add(acc: &mut [i32; 2], v: [i32; 2]) {
    acc[0] += v[0];
    acc[1] += v[1];
}

#[inline]
fn sub(acc: &mut [i32; 2], v: [i32; 2]) {
    acc[0] -= v[0];
    acc[1] -= v[1];
}

/// One entry's change, `new − old`, each half widened to 32 bits.
#[inline(always)]
fn entry_difference(new: [i16; 2], old: [i16; 2]) -> [i32; 2] {
    [new[0] as i32 - old[0] as i32, new[1] as i32 - old[1] as i32]
}

/// `Σ new_row[p] − old_row[p]` over the list's pieces `p`, each half on its own: the
/// inner loop of every KPP update.
#[inline]
fn row_difference(
    new_row: &[[i16; 2]],
    old_row: &[[i16; 2]],
    list: &[BonaPiece; PIECE_LIST_LEN],
) -> [i32; 2] {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of the x86-64 baseline: every CPU this target runs on has
        // it (and the build enables it by default). Tested against the scalar sum.
        unsafe { row_difference_sse2(new_row, old_row, list) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        row_difference_scalar(new_row, old_row, list)
    }
}

/// The reference: two sums kept apart (the loads of one do not wait on the other).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn row_difference_scalar(
    new_row: &[[i16; 2]],
    old_row: &[[i16; 2]],
    list: &[BonaPiece; PIECE_LIST_LEN],
) -> [i32; 2] {
    let (mut a, mut b) = ([0i32; 2], [0i32; 2]);
    for pair in list.chunks_exact(2) {
        let (x, y) = (pair[0] as usize, pair[1] as usize);
        add(&mut a, entry_difference(new_row[x], old_row[x]));
        add(&mut b, entry_difference(new_row[y], old_row[y]));
    }
    if PIECE_LIST_LEN % 2 == 1 {
        let x = list[PIECE_LIST_LEN - 1] as usize;
        add(&mut a, entry_difference(new_row[x], old_row[x]));
    }
    [a[0] + b[0], a[1] + b[1]]
}

/// Four entries at a time in SSE2 (every x86-64 CPU has it): each entry's two halves
/// loaded as one 32-bit lane, and `madd` with the pair (1, 0) or (0, 1) widens one half
/// to 32 bits exactly, so sums of any i16 values cannot overflow. Half the instructions
/// of the scalar loop.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn row_difference_sse2(
    new_row: &[[i16; 2]],
    old_row: &[[i16; 2]],
    list: &[BonaPiece; PIECE_LIST_LEN],
) -> [i32; 2] {
    use std::arch::x86_64::{
        _mm_add_epi32, _mm_cvtsi128_si32, _mm_madd_epi16, _mm_set_epi32, _mm_set1_epi32, _mm_shuffle_epi32,
        _mm_sub_epi32,
    };
    #[inline(always)]
    fn lane(row: &[[i16; 2]], p: BonaPiece) -> i32 {
        let [board, turn] = row[p as usize];
        (board as u16 as u32 | (turn as u16 as u32) << 16) as i32
    }
    let board_half = _mm_set1_epi32(1);
    let turn_half = _mm_set1_epi32(1 << 16);
    let (mut board, mut turn) = (_mm_set1_epi32(0), _mm_set1_epi32(0));
    let quads = list.chunks_exact(4);
    let rest = quads.remainder();
    for q in quads {
        let n =
            _mm_set_epi32(lane(new_row, q[3]), lane(new_row, q[2]), lane(new_row, q[1]), lane(new_row, q[0]));
        let o =
            _mm_set_epi32(lane(old_row, q[3]), lane(old_row, q[2]), lane(old_row, q[1]), lane(old_row, q[0]));
        board =
            _mm_add_epi32(board, _mm_sub_epi32(_mm_madd_epi16(n, board_half), _mm_madd_epi16(o, board_half)));
        turn = _mm_add_epi32(turn, _mm_sub_epi32(_mm_madd_epi16(n, turn_half), _mm_madd_epi16(o, turn_half)));
    }
    // Horizontal sums: lanes 2-3 onto 0-1, then lane 1 onto 0.
    let fold = |v| {
        let v = _mm_add_epi32(v, _mm_shuffle_epi32::<0b01_00_11_10>(v));
        _mm_cvtsi128_si32(_mm_add_epi32(v, _mm_shuffle_epi32::<0b10_11_00_01>(v)))
    };
    let mut acc = [fold(board), fold(turn)];
    // (Written out: through `entry_difference` this tail compiled to 2% more instructions
    // in `half_delta`, by callgrind.)
    for &p in rest {
        let (n, o) = (new_row[p as usize], old_row[p as usize]);
        acc[0] += n[0] as i32 - o[0] as i32;
        acc[1] += n[1] as i32 - o[1] as i32;
    }
    acc
}

impl KpptTables {
    /// All-zero tables (material-only evaluation). The KPP table's pages are allocated
    /// lazily by the OS, so this costs little until written.
    pub fn zeros() -> KpptTables {
        KpptTables { kk: Table::zeroed(KK_LEN), kkp: Table::zeroed(KKP_LEN), kpp: Table::zeroed(KPP_LEN) }
    }

    #[inline]
    pub fn kk(&self, bk: Square, wk: Square) -> [i32; 2] {
        self.kk.as_slice()[bk.index() * 81 + wk.index()]
    }

    #[inline]
    pub fn kkp(&self, bk: Square, wk: Square, p: BonaPiece) -> [i32; 2] {
        self.kkp.as_slice()[(bk.index() * 81 + wk.index()) * FE_END + p as usize]
    }

    #[inline]
    pub fn kpp(&self, k: Square, a: BonaPiece, b: BonaPiece) -> [i32; 2] {
        let v = self.kpp.as_slice()[(k.index() * FE_END + a as usize) * FE_END + b as usize];
        [v[0] as i32, v[1] as i32]
    }

    /// The KPP row of king square `k` and piece `a`, indexed by the other piece.
    #[inline]
    fn kpp_row(&self, k: Square, a: BonaPiece) -> &[[i16; 2]] {
        let start = (k.index() * FE_END + a as usize) * FE_END;
        &self.kpp.as_slice()[start..start + FE_END]
    }

    fn half_sum(&self, k: Square, list: &[BonaPiece; PIECE_LIST_LEN]) -> [i32; 2] {
        let mut acc = [0i32; 2];
        for i in 1..PIECE_LIST_LEN {
            let row = self.kpp_row(k, list[i]);
            for &b in &list[..i] {
                let v = row[b as usize];
                acc[0] += v[0] as i32;
                acc[1] += v[1] as i32;
            }
        }
        acc
    }

    fn kk_kkp_sum(&self, bk: Square, wk: Square, fb: &[BonaPiece; PIECE_LIST_LEN]) -> [i32; 2] {
        let mut acc = self.kk(bk, wk);
        for &p in fb {
            add(&mut acc, self.kkp(bk, wk, p));
        }
        acc
    }

    /// Full computation over the piece list.
    pub fn compute(&self, bk: Square, wk: Square, list: &PieceList) -> KpptSum {
        KpptSum {
            black_kpp: self.half_sum(bk, list.black_view()),
            white_kpp: self.half_sum(wk.inverse(), list.white_view()),
            kk_kkp: self.kk_kkp_sum(bk, wk, list.black_view()),
        }
    }

    /// Change of one half's KPP sum when the pieces `ids` moved from the indices `old`
    /// (one per id) to those now in `list`.
    ///
    /// Each changed piece's row is summed over the whole list without a branch (so the
    /// loads can overlap), then the terms against the changed pieces themselves are taken
    /// out and each pair of changed pieces is counted once.
    #[inline]
    fn half_delta(
        &self,
        k: Square,
        list: &[BonaPiece; PIECE_LIST_LEN],
        ids: &[u8],
        old: &[BonaPiece],
        prefetched: bool,
    ) -> [i32; 2] {
        // The rows are at random places of a table far larger than the caches: ask for
        // every entry the sums below read before reading any, so the misses overlap
        // (unless `prefetch_rows` already asked, when the move was made).
        if !prefetched {
            for (c, &id) in ids.iter().enumerate() {
                let new_row = self.kpp_row(k, list[id as usize]);
                let old_row = self.kpp_row(k, old[c]);
                for &p in list {
                    prefetch_at(new_row, p as usize);
                    prefetch_at(old_row, p as usize);
                }
            }
        }
        let mut acc = [0i32; 2];
        for (c, &id) in ids.iter().enumerate() {
            let new_row = self.kpp_row(k, list[id as usize]);
            let old_row = self.kpp_row(k, old[c]);
            add(&mut acc, row_difference(new_row, old_row, list));
            for (d, &other) in ids.iter().enumerate() {
                let x = list[other as usize] as usize;
                sub(&mut acc, entry_difference(new_row[x], old_row[x]));
                if d > c {
                    add(&mut acc, self.kpp(k, list[id as usize], list[other as usize]));
                    sub(&mut acc, self.kpp(k, old[c], old[d]));
                }
            }
        }
        acc
    }

    /// Starts loading every KPP entry that updating the sums for a move of the pieces
    /// `ids` (not a king) will read: their rows before (`old_fb`/`old_fw`) and after the
    /// move, at the new list `fb`/`fw`, so that the update a little later finds them in
    /// the cache.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn prefetch_rows(
        &self,
        bk: Square,
        wk_inv: Square,
        fb: &[BonaPiece; PIECE_LIST_LEN],
        fw: &[BonaPiece; PIECE_LIST_LEN],
        ids: &[u8],
        old_fb: &[BonaPiece],
        old_fw: &[BonaPiece],
    ) {
        for (c, &id) in ids.iter().enumerate() {
            let (rb, rw) = (self.kpp_row(bk, fb[id as usize]), self.kpp_row(wk_inv, fw[id as usize]));
            let (ob, ow) = (self.kpp_row(bk, old_fb[c]), self.kpp_row(wk_inv, old_fw[c]));
            for (&pb, &pw) in fb.iter().zip(fw) {
                prefetch_at(rb, pb as usize);
                prefetch_at(rw, pw as usize);
                prefetch_at(ob, pb as usize);
                prefetch_at(ow, pw as usize);
            }
        }
    }

    /// The KPP half of king square `k` after a move of that king: from the sum last
    /// computed for `k` (in `entry`) when few pieces changed since, else from scratch.
    ///
    /// A king move changes every KPP index of its half (741 pairs to sum); in a search
    /// tree the king goes back and forth between a few squares while the other pieces
    /// change little, so updating the sum cached for the square is several times cheaper.
    fn half_after_king_move(
        &self,
        k: Square,
        list: &[BonaPiece; PIECE_LIST_LEN],
        entry: &mut KingSquareHalf,
    ) -> [i32; 2] {
        /// Above this many changed pieces the full sum is cheaper (each changed piece
        /// costs two rows over the whole list).
        const MAX_CHANGED: usize = 8;
        if entry.valid {
            let mut ids = [0u8; MAX_CHANGED];
            let mut old = [0 as BonaPiece; MAX_CHANGED];
            let mut n = 0;
            for (i, (&was, &now)) in entry.list.iter().zip(list).enumerate() {
                if was != now {
                    if n == MAX_CHANGED {
                        n = MAX_CHANGED + 1;
                        break;
                    }
                    ids[n] = i as u8;
                    old[n] = was;
                    n += 1;
                }
            }
            if n <= MAX_CHANGED {
                let d = self.half_delta(k, list, &ids[..n], &old[..n], false);
                add(&mut entry.sum, d);
                entry.list = *list;
                return entry.sum;
            }
        }
        let sum = self.half_sum(k, list);
        *entry = KingSquareHalf { list: *list, sum, valid: true };
        sum
    }

    /// Updates `sum` after a move: `fb`/`fw` are the piece list after it (Black's and
    /// White's view), `bk`/`wk` the kings, `ids` the list entries it changed with their
    /// BonaPieces before it (`old_fb`, `old_fw`). A king move recomputes that king's half
    /// (see [`KpptTables::half_after_king_move`]) and KK/KKP; any other move touches only
    /// the changed pieces' terms; `prefetched` says whether `prefetch_rows` was called for
    /// this move.
    #[allow(clippy::too_many_arguments)]
    pub fn update_after(
        &self,
        sum: &mut KpptSum,
        moved_king: Option<Color>,
        prefetched: bool,
        ids: &[u8],
        old_fb: &[BonaPiece],
        old_fw: &[BonaPiece],
        bk: Square,
        wk: Square,
        fb: &[BonaPiece; PIECE_LIST_LEN],
        fw: &[BonaPiece; PIECE_LIST_LEN],
        cache: &mut KingRefreshCache,
    ) {
        if moved_king == Some(Color::Black) {
            sum.black_kpp = self.half_after_king_move(bk, fb, &mut cache.halves[0][bk.index()]);
        } else {
            add(&mut sum.black_kpp, self.half_delta(bk, fb, ids, old_fb, prefetched));
        }
        let wk_inv = wk.inverse();
        if moved_king == Some(Color::White) {
            sum.white_kpp = self.half_after_king_move(wk_inv, fw, &mut cache.halves[1][wk_inv.index()]);
        } else {
            add(&mut sum.white_kpp, self.half_delta(wk_inv, fw, ids, old_fw, prefetched));
        }
        if moved_king.is_some() {
            sum.kk_kkp = self.kk_kkp_sum(bk, wk, fb);
        } else {
            for (c, &id) in ids.iter().enumerate() {
                add(&mut sum.kk_kkp, self.kkp(bk, wk, fb[id as usize]));
                sub(&mut sum.kk_kkp, self.kkp(bk, wk, old_fb[c]));
            }
        }
    }
}

/// The KPP half last computed for one king square, and the list it was computed for.
#[derive(Clone, Copy)]
pub struct KingSquareHalf {
    list: [BonaPiece; PIECE_LIST_LEN],
    sum: [i32; 2],
    valid: bool,
}

/// Per-game cache of KPP halves by king square (`[Black, White][king square as the
/// half sees it]`), which makes king moves cheap to evaluate. Valid for one set of
/// tables only: start a new cache with new tables.
#[derive(Clone)]
pub struct KingRefreshCache {
    halves: Box<[[KingSquareHalf; 81]; 2]>,
}

impl Default for KingRefreshCache {
    fn default() -> Self {
        let empty = KingSquareHalf { list: [0; PIECE_LIST_LEN], sum: [0; 2], valid: false };
        KingRefreshCache { halves: Box::new([[empty; 81]; 2]) }
    }
}

impl KpptTables {
    /// Random tables that obey the file invariants (KPP symmetric with a zero diagonal,
    /// rows and columns of BonaPiece 0 zero): for tests and benchmarks.
    pub fn random(seed: u64, magnitude: i32) -> KpptTables {
        let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let m = magnitude.max(1) as u64;
        let mut value = move || ((next() % (2 * m + 1)) as i64 - m as i64) as i32;
        let mut t = KpptTables::zeros();
        for v in t.kk.make_mut() {
            *v = [value(), value()];
        }
        for (i, v) in t.kkp.make_mut().iter_mut().enumerate() {
            *v = if i % FE_END == 0 { [0, 0] } else { [value(), value()] };
        }
        let kpp = t.kpp.make_mut();
        for k in 0..81 {
            let base = k * FE_END * FE_END;
            for a in 1..FE_END {
                for b in 1..a {
                    let v = [value().clamp(-32767, 32767) as i16, value().clamp(-32767, 32767) as i16];
                    kpp[base + a * FE_END + b] = v;
                    kpp[base + b * FE_END + a] = v;
                }
            }
        }
        t
    }

    /// The first (king, a, b) where KPP is not symmetric or the diagonal / BonaPiece 0 row
    /// is not zero, if any.
    pub fn kpp_invariant_violation(&self) -> Option<(usize, usize, usize)> {
        let kpp = self.kpp.as_slice();
        for k in 0..81 {
            let base = k * FE_END * FE_END;
            for a in 0..FE_END {
                if kpp[base + a * FE_END + a] != [0, 0] || kpp[base + a] != [0, 0] {
                    return Some((k, a, a));
                }
                for b in 0..a {
                    if kpp[base + a * FE_END + b] != kpp[base + b * FE_END + a] {
                        return Some((k, a, b));
                    }
                }
            }
        }
        None
    }
}

impl KpptTables {
    /// Makes KK and KKP respect the colour-flip symmetry that ecosystem tables have: the
    /// flipped entry (kings swapped and inverted, piece flipped) has the negated board part
    /// and the same turn part. KPP needs no change: flipping swaps its two halves.
    pub fn symmetrize_flip(&mut self) {
        use super::bona_piece::flip;
        let kk = self.kk.make_mut();
        for bk in 0..81 {
            for wk in 0..81 {
                let (a, b) = (bk * 81 + wk, (80 - wk) * 81 + (80 - bk));
                if a < b {
                    kk[b] = [-kk[a][0], kk[a][1]];
                } else if a == b {
                    kk[a][0] = 0;
                }
            }
        }
        let kkp = self.kkp.make_mut();
        for bk in 0..81 {
            for wk in 0..81 {
                for p in 1..FE_END {
                    let a = (bk * 81 + wk) * FE_END + p;
                    let b = ((80 - wk) * 81 + (80 - bk)) * FE_END + flip(p as BonaPiece) as usize;
                    if a < b {
                        kkp[b] = [-kkp[a][0], kkp[a][1]];
                    } else if a == b {
                        kkp[a][0] = 0;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::bona_piece::FE_END;

    /// After a king move the half equals the full sum whether it came from the square's
    /// cached sum (0-8 pieces changed since) or from scratch (more), and the cache then
    /// holds the new list.
    #[test]
    fn king_move_half_equals_full_sum_through_the_cache() {
        let tables = KpptTables::random(3, 3000);
        let mut rng = crate::rng::SplitMix64::new(0x2545_F491_4F6C_DD1D);
        let mut random_piece = || (1 + rng.below(FE_END - 1)) as BonaPiece;
        let mut list = [0 as BonaPiece; PIECE_LIST_LEN];
        for p in &mut list {
            *p = random_piece();
        }
        let mut entry = KingSquareHalf { list: [0; PIECE_LIST_LEN], sum: [0; 2], valid: false };
        let k = Square::from_index(40);
        for round in 0..400 {
            let changes = round % 14;
            for c in 0..changes {
                list[(c * 7 + round) % PIECE_LIST_LEN] = random_piece();
            }
            let got = tables.half_after_king_move(k, &list, &mut entry);
            assert_eq!(got, tables.half_sum(k, &list), "round {round}, {changes} changes");
            assert!(entry.valid && entry.list == list && entry.sum == got);
        }
    }

    /// The vector row difference equals the scalar one, with the i16 extremes in the
    /// rows (a widening mistake, or lanes summed across the halves, would show) and with
    /// repeated pieces in the list.
    #[test]
    fn row_difference_equals_the_scalar_sum() {
        let mut rng = crate::rng::SplitMix64::new(0x9E37_79B9_7F4A_7C15);
        let random_value = |rng: &mut crate::rng::SplitMix64| match rng.below(4) {
            0 => i16::MIN,
            1 => i16::MAX,
            _ => rng.next_u64() as i16,
        };
        for round in 0..300 {
            let new_row: Vec<[i16; 2]> =
                (0..FE_END).map(|_| [random_value(&mut rng), random_value(&mut rng)]).collect();
            let old_row: Vec<[i16; 2]> =
                (0..FE_END).map(|_| [random_value(&mut rng), random_value(&mut rng)]).collect();
            let mut list = [0 as BonaPiece; PIECE_LIST_LEN];
            for p in &mut list {
                // Round 0 repeats one piece throughout: the extremes add up to ±1.2 M.
                *p = if round == 0 { 7 } else { rng.below(FE_END) as BonaPiece };
            }
            let scalar = row_difference_scalar(&new_row, &old_row, &list);
            assert_eq!(row_difference(&new_row, &old_row, &list), scalar, "round {round}");
        }
    }
}
