//! The evaluation Keima searches with and trains: material + KPPT (+ patterns), each part
//! switchable, with a differential update driven by `MoveDelta`s.

use super::kppt::{FV_SCALE, KpptSum, KpptTables};
use super::material::{material, material_delta};
use super::patterns::{PatternSet, PatternSums};
use super::piece_list::{ChangedPieces, PieceList};
use crate::rules::{Color, MoveDelta, Position};
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
    material: i32,
    patterns: PatternSums,
    changed: ChangedPieces,
}

/// Per-game incremental state: the piece list and one entry per ply.
#[derive(Clone)]
pub struct EvalState {
    list: PieceList,
    stack: Vec<Entry>,
}

impl Evaluator {
    /// Material only: the usual starting point of training.
    pub fn material_only() -> Evaluator {
        Evaluator { use_material: true, kppt: None, patterns: None }
    }

    pub fn with_kppt(tables: Arc<KpptTables>) -> Evaluator {
        Evaluator { use_material: true, kppt: Some(tables), patterns: None }
    }

    fn full_entry(&self, pos: &Position, list: &PieceList) -> Entry {
        let kings = (pos.king_square(Color::Black), pos.king_square(Color::White));
        let kppt = match (&self.kppt, kings) {
            (Some(t), (Some(bk), Some(wk))) => t.compute(bk, wk, list),
            _ => KpptSum::default(),
        };
        let patterns = self.patterns.as_ref().map_or(PatternSums::default(), |p| p.compute(pos));
        Entry { kppt, material: material(pos), patterns, changed: ChangedPieces::default() }
    }

    pub fn new_state(&self, pos: &Position) -> EvalState {
        let list = PieceList::new(pos);
        let entry = self.full_entry(pos, &list);
        EvalState { list, stack: vec![entry] }
    }

    /// Updates `state` after `delta` was played; `after` is the new position. Debug
    /// builds check the result against a full recomputation.
    pub fn do_move(&self, state: &mut EvalState, delta: &MoveDelta, after: &Position) {
        let changed = state.list.apply(delta, after);
        let prev = *state.stack.last().expect("state has a root entry");
        let mut entry = Entry {
            kppt: prev.kppt,
            material: prev.material + material_delta(delta),
            patterns: prev.patterns,
            changed,
        };
        let kings = (after.king_square(Color::Black), after.king_square(Color::White));
        if let (Some(t), (Some(bk), Some(wk))) = (&self.kppt, kings) {
            t.update(&mut entry.kppt, delta, &changed, bk, wk, &state.list);
        }
        if let Some(p) = &self.patterns {
            p.update(&mut entry.patterns, delta, after);
        }
        state.stack.push(entry);
        #[cfg(debug_assertions)]
        {
            let full = self.full_entry(after, &state.list);
            debug_assert_eq!(entry.kppt, full.kppt, "incremental KPPT differs after {}", delta.mv);
            debug_assert_eq!(entry.material, full.material, "material differs after {}", delta.mv);
            debug_assert_eq!(entry.patterns, full.patterns, "patterns differ after {}", delta.mv);
        }
    }

    pub fn undo_move(&self, state: &mut EvalState, delta: &MoveDelta) {
        let entry = state.stack.pop().expect("undo without do");
        state.list.revert(delta, &entry.changed);
    }

    /// Value of the current position of `state` (whose side to move is `pos`'s).
    pub fn evaluate(&self, state: &EvalState, pos: &Position) -> EvalParts {
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
    pub fn kppt_sum(state: &EvalState) -> KpptSum {
        state.stack.last().expect("root entry").kppt
    }
}
