//! What bounds a search, and which techniques it uses.

use super::params::SearchParams;
use crate::eval::Evaluator;
use std::time::Duration;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub depth: Option<i32>,
    pub nodes: Option<u64>,
    /// Hard limit: the search stops when this much time has passed.
    pub time: Option<Duration>,
    /// Time a move should take on average: the search stops after an iteration once it
    /// used this much, scaled up when the best move is unsettled, down when it is not.
    pub soft_time: Option<Duration>,
    /// Time that is lost if not used (byoyomi): the search never stops before it.
    pub free_time: Option<Duration>,
}

impl Limits {
    pub fn depth(d: i32) -> Limits {
        Limits { depth: Some(d), ..Limits::default() }
    }

    pub fn nodes(n: u64) -> Limits {
        Limits { nodes: Some(n), ..Limits::default() }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchOptions {
    pub null_move: bool,
    pub lmr: bool,
    /// Forward pruning (reverse futility, futility, move-count, SEE and history pruning,
    /// internal iterative reduction, quiescence pruning). Off, with `null_move` and `lmr`
    /// off too, the search is plain alpha-beta: exact to its depth.
    pub pruning: bool,
    /// Static evaluations corrected by the errors the search found in positions sharing
    /// their pawns, hands or kings' guards (see `correction.rs`). Applies only with
    /// `pruning`, so that a plain alpha-beta search stays exact to the evaluation.
    /// Off by default, as teachers search: evals trained on teacher values without it were
    /// as strong (+6 Elo [−7, +20] over three one-CPU-hour runs) from a little more data
    /// (BENCHMARKS.md, "The teacher without the correction history"). Games are played
    /// with it where it pays (`SearchOptions::for_play`).
    pub correction_history: bool,
    /// Mate-in-1 detection at nodes near the horizon (off by default: `keima bench mate`
    /// shows it costs more than it saves).
    pub mate1: bool,
    /// Entering-king declaration (27-point rule) counts as a win.
    pub declaration: bool,
    /// Before deepening, run a df-pn mate search of this many nodes at the root (0: off).
    pub root_mate_nodes: u64,
    /// Noise added to every static evaluation (random consultation; `None` in play).
    pub eval_noise: Option<crate::eval::noise::EvalNoise>,
    /// What the side to move at the root gives up to avoid a draw by repetition, in eval
    /// units: such a draw scores −`contempt` for it and +`contempt` for its opponent. Keeps
    /// a stronger engine from repeating a level position it could still win; 0 (a draw is
    /// worth 0 to both) for teacher values, which must not depend on who searched.
    pub contempt: i32,
    /// The search's margins, reductions and windows (`params.rs`).
    pub params: SearchParams,
    /// Root moves searched with a full principal variation each iteration (USI
    /// `MultiPV`): the best, then the best of the rest, and so on. 1 (the default) is the
    /// ordinary search; more lines cost time and are for analysis, not play.
    pub multi_pv: usize,
}

impl SearchOptions {
    /// The options a game is played with (`keima usi` with `CorrectionHistory` `auto`,
    /// matches between evaluations): the defaults, with the correction history on unless
    /// the evaluation is material only. With a trained eval it gains at a node budget
    /// (+14 Elo at 20,000 nodes, +37 at 5,000); with material only it gains nothing against
    /// the same engine and, larger than a small contempt, brings back repetition draws
    /// against weaker ones (BENCHMARKS.md, "Strength and SPRTs").
    pub fn for_play(evaluator: &Evaluator) -> SearchOptions {
        SearchOptions { correction_history: !evaluator.is_material_only(), ..SearchOptions::default() }
    }
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            null_move: true,
            lmr: true,
            pruning: true,
            correction_history: false,
            mate1: false,
            declaration: true,
            root_mate_nodes: 0,
            eval_noise: None,
            contempt: 0,
            params: SearchParams::default(),
            multi_pv: 1,
        }
    }
}
