//! KPPT evaluation: KK, KKP and KPP tables, each with a board and a side-to-move (turn)
//! part, summed over the piece list (formula in shared/spec/formats.md, FV_SCALE 32).
//!
//! The sum is kept in three parts so that a move changes only what it must: the KPP sum
//! seen from Black's king, the KPP sum seen from White's (inverted) king, and KK + KKP.

use super::bona_piece::{BonaPiece, FE_END};
use super::piece_list::{ChangedPieces, PIECE_LIST_LEN, PieceList};
use crate::rules::{Color, MoveDelta, PieceType, Square};

pub const FV_SCALE: i32 = 32;
pub const KK_LEN: usize = 81 * 81;
pub const KKP_LEN: usize = 81 * 81 * FE_END;
pub const KPP_LEN: usize = 81 * FE_END * FE_END;

/// Table storage: owned (training, tests) or borrowed from a memory map (eval files).
pub enum Table<T: 'static> {
    Owned(Vec<T>),
    Mapped { map: memmap2::Mmap, len: usize },
}

impl<T: Copy + 'static> Table<T> {
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
            *self = Table::Owned(self.as_slice().to_vec());
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

impl KpptTables {
    /// All-zero tables (material-only evaluation). The KPP table's pages are allocated
    /// lazily by the OS, so this costs little until written.
    pub fn zeros() -> KpptTables {
        KpptTables {
            kk: Table::Owned(vec![[0; 2]; KK_LEN]),
            kkp: Table::Owned(vec![[0; 2]; KKP_LEN]),
            kpp: Table::Owned(vec![[0; 2]; KPP_LEN]),
        }
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

    /// Change of one half's KPP sum when the pieces in `changed` moved from their old
    /// indices to those now in `list`.
    ///
    /// Each changed piece's row is summed over the whole list without a branch (so the
    /// loads can overlap), then the terms against the changed pieces themselves are taken
    /// out and the pair of changed pieces is counted once.
    fn half_delta(
        &self,
        k: Square,
        list: &[BonaPiece; PIECE_LIST_LEN],
        changed: &ChangedPieces,
        old: &[BonaPiece; 2],
    ) -> [i32; 2] {
        let n = changed.count;
        let mut acc = [0i32; 2];
        for c in 0..n {
            let new_row = self.kpp_row(k, list[changed.ids[c] as usize]);
            let old_row = self.kpp_row(k, old[c]);
            let (mut a0, mut a1, mut b0, mut b1) = (0i32, 0i32, 0i32, 0i32);
            for pair in list.chunks_exact(2) {
                let (x, y) = (pair[0] as usize, pair[1] as usize);
                a0 += new_row[x][0] as i32 - old_row[x][0] as i32;
                a1 += new_row[x][1] as i32 - old_row[x][1] as i32;
                b0 += new_row[y][0] as i32 - old_row[y][0] as i32;
                b1 += new_row[y][1] as i32 - old_row[y][1] as i32;
            }
            if PIECE_LIST_LEN % 2 == 1 {
                let x = list[PIECE_LIST_LEN - 1] as usize;
                a0 += new_row[x][0] as i32 - old_row[x][0] as i32;
                a1 += new_row[x][1] as i32 - old_row[x][1] as i32;
            }
            acc[0] += a0 + b0;
            acc[1] += a1 + b1;
            for d in 0..n {
                let x = list[changed.ids[d] as usize] as usize;
                acc[0] -= new_row[x][0] as i32 - old_row[x][0] as i32;
                acc[1] -= new_row[x][1] as i32 - old_row[x][1] as i32;
            }
        }
        if n == 2 {
            let (a, b) = (changed.ids[0] as usize, changed.ids[1] as usize);
            add(&mut acc, self.kpp(k, list[a], list[b]));
            sub(&mut acc, self.kpp(k, old[0], old[1]));
        }
        acc
    }

    /// Updates `sum` after a move. `list` is already updated; `bk`/`wk` are the kings
    /// after the move. A king move recomputes that king's half and KK/KKP; any other move
    /// touches only the changed pieces' terms.
    pub fn update(
        &self,
        sum: &mut KpptSum,
        delta: &MoveDelta,
        changed: &ChangedPieces,
        bk: Square,
        wk: Square,
        list: &PieceList,
    ) {
        let moved_king = (delta.moved.piece_type() == PieceType::King).then(|| delta.moved.color());
        self.update_after(sum, moved_king, changed, bk, wk, list);
    }

    /// `update` for a move described by whose king it moved (if any) and the pieces it
    /// changed.
    pub fn update_after(
        &self,
        sum: &mut KpptSum,
        moved_king: Option<Color>,
        changed: &ChangedPieces,
        bk: Square,
        wk: Square,
        list: &PieceList,
    ) {
        let king_moved = moved_king.is_some();
        let mover = moved_king.unwrap_or(Color::Black);
        if king_moved && mover == Color::Black {
            sum.black_kpp = self.half_sum(bk, list.black_view());
        } else {
            let d = self.half_delta(bk, list.black_view(), changed, &changed.old_fb);
            add(&mut sum.black_kpp, d);
        }
        if king_moved && mover == Color::White {
            sum.white_kpp = self.half_sum(wk.inverse(), list.white_view());
        } else {
            let d = self.half_delta(wk.inverse(), list.white_view(), changed, &changed.old_fw);
            add(&mut sum.white_kpp, d);
        }
        if king_moved {
            sum.kk_kkp = self.kk_kkp_sum(bk, wk, list.black_view());
        } else {
            for c in 0..changed.count {
                add(&mut sum.kk_kkp, self.kkp(bk, wk, list.black_view()[changed.ids[c] as usize]));
                sub(&mut sum.kk_kkp, self.kkp(bk, wk, changed.old_fb[c]));
            }
        }
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
