//! The evaluation Keima searches with and trains: material + KPPT (+ patterns), each part
//! switchable, with a differential update driven by `MoveDelta`s.

use super::bona_piece::BonaPiece;
use super::kppt::{FV_SCALE, KingRefreshCache, KpptSum, KpptTables};
use super::material::{material, material_delta};
use super::patterns::{PatternSet, PatternSums};
use super::piece_list::{ChangedPieces, PIECE_LIST_LEN, PieceList};
use crate::rules::{Color, MoveDelta, Position, Square};
use std::sync::Arc;

/// An evaluation's value and its parts, each from the side to move's view. `eval` is
/// computed from the unrounded sum, so the parts may differ from it by rounding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EvalParts {
    pub eval: i32,
    pub material: i32,
    pub kppt: i32,
    pub patterns: i32,
}

#[derive(Clone, Default)]
pub struct Evaluator {
    pub use_material: bool,
    pub kppt: Option<Arc<KpptTables>>,
    pub patterns: Option<Arc<PatternSet>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    kppt: KpptSum,
    /// `kppt` is computed lazily, when this position or one after it is evaluated (see
    /// [`Evaluator::prepare`]).
    kppt_ready: bool,
    material: i32,
    patterns: PatternSums,
    changed: ChangedPieces,
    /// The colour whose king the move that led here moved, if any.
    moved_king: Option<Color>,
    /// Both kings' squares here (a lazy update of this entry may come plies later).
    kings: [Option<Square>; 2],
    /// The KPP entries the update of `kppt` reads were prefetched (see
    /// [`Evaluator::prefetch`]).
    rows_prefetched: bool,
}

/// Computes the sums of `stack[j]` from those of `stack[j - 1]` (which must have them);
/// `fb`/`fw` are the piece list at `j`. `just_prefetched`: the rows the update reads were
/// prefetched since the last updates (so they are likely still cached).
#[inline]
fn update_entry(
    t: &KpptTables,
    stack: &mut [Entry],
    j: usize,
    fb: &[BonaPiece; PIECE_LIST_LEN],
    fw: &[BonaPiece; PIECE_LIST_LEN],
    king_cache: &mut KingRefreshCache,
    just_prefetched: bool,
) {
    let e = stack[j];
    let mut sum = stack[j - 1].kppt;
    match e.kings {
        [Some(bk), Some(wk)] => {
            let c = &e.changed;
            t.update_after(
                &mut sum,
                e.moved_king,
                just_prefetched && e.rows_prefetched,
                &c.ids[..c.count],
                &c.old_fb[..c.count],
                &c.old_fw[..c.count],
                bk,
                wk,
                fb,
                fw,
                king_cache,
            );
        }
        _ => sum = KpptSum::default(),
    }
    stack[j].kppt = sum;
    stack[j].kppt_ready = true;
}

/// Per-game incremental state: the piece list (kept up to date only with KPPT tables) and
/// one entry per ply.
#[derive(Clone)]
pub struct EvalState {
    list: PieceList,
    stack: Vec<Entry>,
    king_cache: KingRefreshCache,
}

impl EvalState {
    /// Whether the state is at its root (no move made since it was set or advanced).
    pub fn at_root(&self) -> bool {
        self.stack.len() == 1
    }
}

impl Evaluator {
    /// Material only: the usual starting point of training.
    pub fn material_only() -> Evaluator {
        Evaluator { use_material: true, kppt: None, patterns: None }
    }

    pub fn with_kppt(tables: Arc<KpptTables>) -> Evaluator {
        Evaluator { use_material: true, kppt: Some(tables), patterns: None }
    }

    /// True when nothing but material is evaluated (no KPPT tables, no patterns).
    pub fn is_material_only(&self) -> bool {
        self.kppt.is_none() && self.patterns.is_none()
    }

    fn full_entry(&self, pos: &Position, list: &PieceList) -> Entry {
        let kings = (pos.king_square(Color::Black), pos.king_square(Color::White));
        let kppt = match (&self.kppt, kings) {
            (Some(t), (Some(bk), Some(wk))) => t.compute(bk, wk, list),
            _ => KpptSum::default(),
        };
        let patterns = self.patterns.as_ref().map_or(PatternSums::default(), |p| p.compute(pos));
        Entry {
            kppt,
            kppt_ready: true,
            material: material(pos),
            patterns,
            changed: ChangedPieces::default(),
            moved_king: None,
            kings: [pos.king_square(Color::Black), pos.king_square(Color::White)],
            rows_prefetched: false,
        }
    }

    pub fn new_state(&self, pos: &Position) -> EvalState {
        let list = PieceList::new(pos);
        let entry = self.full_entry(pos, &list);
        EvalState { list, stack: vec![entry], king_cache: KingRefreshCache::default() }
    }

    /// Sets `state` to `pos`, as [`Evaluator::new_state`] does, but keeps the state's
    /// allocations and its king-square cache, whose halves stay exact for these tables
    /// whatever position they were computed for (a state belongs to one evaluator).
    pub fn reset_state(&self, state: &mut EvalState, pos: &Position) {
        state.list = PieceList::new(pos);
        let entry = self.full_entry(pos, &state.list);
        state.stack.clear();
        state.stack.push(entry);
    }

    /// Makes the position after `delta` (`after`) the root of `state`, from the root
    /// before it: one move's update instead of a full computation, and the piece list
    /// keeps its ids, so the king-square cache keeps serving the game's later searches.
    pub fn advance_root(&self, state: &mut EvalState, delta: &MoveDelta, after: &Position) {
        debug_assert!(state.at_root(), "advance_root needs a state at its root");
        self.do_move(state, delta, after);
        self.prepare(state);
        let n = state.stack.len();
        state.stack.drain(..n - 1);
    }

    /// Updates `state` after `delta` was played; `after` is the new position. Material and
    /// patterns are updated now, KPPT when needed (see [`Evaluator::prepare`]).
    pub fn do_move(&self, state: &mut EvalState, delta: &MoveDelta, after: &Position) {
        let moved_king =
            (delta.moved.piece_type() == crate::rules::PieceType::King).then(|| delta.moved.color());
        // Only the KPPT sums read the piece list: without tables it is left as it is (at
        // the state's root).
        let changed =
            if self.kppt.is_some() { state.list.apply(delta, after) } else { ChangedPieces::default() };
        let prev = *state.stack.last().expect("state has a root entry");
        let mut entry = Entry {
            kppt: prev.kppt,
            kppt_ready: self.kppt.is_none(),
            material: prev.material + material_delta(delta),
            patterns: prev.patterns,
            changed,
            moved_king,
            kings: [after.king_square(Color::Black), after.king_square(Color::White)],
            rows_prefetched: false,
        };
        if let Some(p) = &self.patterns {
            p.update(&mut entry.patterns, delta, after);
        }
        state.stack.push(entry);
        #[cfg(debug_assertions)]
        {
            let full = self.full_entry(after, &state.list);
            debug_assert_eq!(entry.material, full.material, "material differs after {}", delta.mv);
            debug_assert_eq!(entry.patterns, full.patterns, "patterns differ after {}", delta.mv);
            self.prepare(state);
            let top = state.stack.last().expect("pushed");
            debug_assert_eq!(top.kppt, full.kppt, "incremental KPPT differs after {}", delta.mv);
        }
    }

    /// Starts loading what computing the current position's KPPT sums from its parent's
    /// will read (see [`KpptTables::prefetch_rows`]); a no-op where that is not the case.
    #[inline]
    pub fn prefetch(&self, state: &mut EvalState) {
        let Some(t) = &self.kppt else { return };
        let n = state.stack.len();
        let e = &state.stack[n - 1];
        if n < 2 || e.kppt_ready || e.moved_king.is_some() || !state.stack[n - 2].kppt_ready {
            return;
        }
        if let [Some(bk), Some(wk)] = e.kings {
            let c = &e.changed;
            t.prefetch_rows(
                bk,
                wk.inverse(),
                state.list.black_view(),
                state.list.white_view(),
                &c.ids[..c.count],
                &c.old_fb[..c.count],
                &c.old_fw[..c.count],
            );
            state.stack[n - 1].rows_prefetched = true;
        }
    }

    pub fn undo_move(&self, state: &mut EvalState, delta: &MoveDelta) {
        let entry = state.stack.pop().expect("undo without do");
        if self.kppt.is_some() {
            state.list.revert(delta, &entry.changed);
        }
    }

    /// Computes the KPPT sums of the current position of `state` if they are not yet.
    ///
    /// Sums are computed only when a position, or one after it, is evaluated: a node whose
    /// static evaluation came from the transposition table and whose children were all
    /// cut off before evaluating costs no KPPT work. When they are needed, every position
    /// back to the nearest one with sums is updated in turn (one move's change each, on
    /// the piece list as it was there), so that later siblings find their parent ready.
    #[inline]
    pub fn prepare(&self, state: &mut EvalState) {
        let n = state.stack.len();
        if state.stack[n - 1].kppt_ready {
            return;
        }
        let Some(t) = &self.kppt else {
            state.stack[n - 1].kppt_ready = true;
            return;
        };
        let EvalState { list, stack, king_cache } = state;
        // The root entry always has its sums.
        let mut base = n - 2;
        while !stack[base].kppt_ready {
            base -= 1;
        }
        if base == n - 2 {
            update_entry(t, stack, n - 1, list.black_view(), list.white_view(), king_cache, true);
            return;
        }
        // The list as it was at `base`, then forward one move at a time. Rows prefetched
        // plies ago may have left the cache since: each update prefetches its own.
        let (mut fb, mut fw) = (*list.black_view(), *list.white_view());
        for e in stack[base + 1..].iter().rev() {
            e.changed.revert_views(&mut fb, &mut fw);
        }
        for j in base + 1..n {
            stack[j].changed.apply_views(&mut fb, &mut fw);
            update_entry(t, stack, j, &fb, &fw, king_cache, false);
        }
    }

    /// Value of the current position of `state` (whose side to move is `pos`'s).
    pub fn evaluate(&self, state: &mut EvalState, pos: &Position) -> EvalParts {
        self.prepare(state);
        let e = state.stack.last().expect("state has a root entry");
        self.parts(e, pos.side_to_move())
    }

    /// Value computed from scratch.
    pub fn evaluate_full(&self, pos: &Position) -> EvalParts {
        let list = PieceList::new(pos);
        self.parts(&self.full_entry(pos, &list), pos.side_to_move())
    }

    fn parts(&self, e: &Entry, stm: Color) -> EvalParts {
        let sign = if stm == Color::Black { 1 } else { -1 };
        let material = if self.use_material { e.material } else { 0 };
        let kppt_raw = sign * e.kppt.board() + e.kppt.turn();
        let patterns_raw = e.patterns.value(stm);
        let raw = sign * material * FV_SCALE + kppt_raw + patterns_raw;
        EvalParts {
            eval: raw / FV_SCALE,
            material: sign * material,
            kppt: kppt_raw / FV_SCALE,
            patterns: patterns_raw / FV_SCALE,
        }
    }

    /// The raw KPPT sums of the current entry (for tests and the learner).
    pub fn kppt_sum(&self, state: &mut EvalState) -> KpptSum {
        self.prepare(state);
        state.stack.last().expect("root entry").kppt
    }
}
