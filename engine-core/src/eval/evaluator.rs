//! The evaluation Keima searches with and trains: material + KPPT (+ patterns), each part
//! switchable, with a differential update driven by `MoveDelta`s.

use super::kppt::{FV_SCALE, KpptSum, KpptTables};
use super::material::{material, material_delta};
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    kppt: KpptSum,
    material: i32,
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
        Evaluator {
            use_material: true,
            kppt: None,
        }
    }

    pub fn with_kppt(tables: Arc<KpptTables>) -> Evaluator {
        Evaluator {
            use_material: true,
            kppt: Some(tables),
        }
    }

    fn full_entry(&self, pos: &Position, list: &PieceList) -> Entry {
        let kppt = match (
            &self.kppt,
            pos.king_square(Color::Black),
            pos.king_square(Color::White),
        ) {
            (Some(t), Some(bk), Some(wk)) => t.compute(bk, wk, list),
            _ => KpptSum::default(),
        };
        Entry {
            kppt,
            material: material(pos),
            changed: ChangedPieces::default(),
        }
    }

    pub fn new_state(&self, pos: &Position) -> EvalState {
        let list = PieceList::new(pos);
        let entry = self.full_entry(pos, &list);
        EvalState {
            list,
            stack: vec![entry],
        }
    }

    /// Updates `state` after `delta` was played; `after` is the new position.
    pub fn do_move(&self, state: &mut EvalState, delta: &MoveDelta, after: &Position) {
        let changed = state.list.apply(delta, after);
        let prev = *state.stack.last().expect("state has a root entry");
        let mut entry = Entry {
            kppt: prev.kppt,
            material: prev.material + material_delta(delta),
            changed,
        };
        if let (Some(t), Some(bk), Some(wk)) = (
            &self.kppt,
            after.king_square(Color::Black),
            after.king_square(Color::White),
        ) {
            t.update(&mut entry.kppt, delta, &changed, bk, wk, &state.list);
        }
        state.stack.push(entry);
        #[cfg(debug_assertions)]
        {
            let full = self.full_entry(after, &state.list);
            debug_assert_eq!(
                entry.kppt, full.kppt,
                "incremental KPPT differs after {}",
                delta.mv
            );
            debug_assert_eq!(
                entry.material, full.material,
                "incremental material differs after {}",
                delta.mv
            );
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
        let raw = sign * material * FV_SCALE + kppt_raw;
        EvalParts {
            eval: raw / FV_SCALE,
            material: sign * material,
            kppt: kppt_raw / FV_SCALE,
            patterns: 0,
        }
    }

    /// The raw KPPT sums of the current entry (for tests and the learner).
    pub fn kppt_sum(state: &EvalState) -> KpptSum {
        state.stack.last().expect("root entry").kppt
    }
}
