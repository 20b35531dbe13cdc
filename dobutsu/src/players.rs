//! The four players behind one enum, and a game between two of them.

use super::alphabeta;
use super::game::{Game, Outcome};
use super::mc_player::{FeatureTables, McKind, alpha_for, choose};
use super::rules::{Color, Move, Position};
use super::solver::{Value, move_values};
use super::table_file::Table;

#[derive(Clone, Copy)]
pub enum Player<'a> {
    Primitive {
        playouts: u64,
    },
    /// `alpha`: the sharpening; None = `alpha_for(playouts)`.
    Improved {
        playouts: u64,
        tables: &'a FeatureTables,
        alpha: Option<f32>,
    },
    AlphaBeta {
        depth: u32,
    },
    /// Plays a best move from the solved table: the quickest win, else a draw, else the
    /// slowest loss; ties broken at random.
    Perfect {
        table: &'a Table,
    },
}

impl Player<'_> {
    pub fn name(&self) -> String {
        match self {
            Player::Primitive { playouts } => format!("primitive-mc({playouts})"),
            Player::Improved { playouts, alpha: None, .. } => format!("improved-mc({playouts})"),
            Player::Improved { playouts, alpha: Some(a), .. } => {
                format!("improved-mc({playouts}, alpha {a})")
            }
            Player::AlphaBeta { depth } => format!("alphabeta(depth {depth})"),
            Player::Perfect { .. } => "perfect".into(),
        }
    }

    pub fn choose(&self, pos: &Position, seed: u64) -> Option<Move> {
        match *self {
            Player::Primitive { playouts } => choose(pos, McKind::Primitive, playouts, seed).map(|x| x.0),
            Player::Improved { playouts, tables, alpha } => {
                let alpha = alpha.unwrap_or_else(|| alpha_for(playouts));
                choose(pos, McKind::Improved { tables, alpha }, playouts, seed).map(|x| x.0)
            }
            Player::AlphaBeta { depth } => alphabeta::search(pos, depth, seed).best,
            Player::Perfect { table } => {
                let b = best_moves(pos, table);
                if b.is_empty() { None } else { Some(b[super::playout::Rng::new(seed).below(b.len())]) }
            }
        }
    }
}

/// All moves of best value according to the table (empty if the position has no moves).
pub fn best_moves(pos: &Position, table: &Table) -> Vec<Move> {
    let mv = move_values(pos, &|k| table.lookup(k));
    let best = mv.iter().filter_map(|(_, v)| v.map(Value::rank)).max();
    match best {
        None => mv.iter().map(|x| x.0).collect(),
        Some(b) => mv.iter().filter(|(_, v)| v.map(Value::rank) == Some(b)).map(|x| x.0).collect(),
    }
}

/// Plays one game from `start`; returns the outcome and the number of plies.
pub fn play_game(
    start: &Position,
    black: &Player,
    white: &Player,
    seed: u64,
    max_plies: usize,
) -> (Outcome, usize) {
    let mut g = Game::new(*start);
    g.max_plies = max_plies;
    let mut n = 0u64;
    while g.outcome().is_none() {
        let p = if g.pos.side == Color::Black { black } else { white };
        let s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ n;
        let Some(m) = p.choose(&g.pos, s) else { break };
        if g.play(m).is_err() {
            // A player returned an illegal move: it loses.
            return (Outcome::Win(g.pos.side.flip()), g.moves.len());
        }
        n += 1;
    }
    (g.outcome().unwrap_or(Outcome::Win(g.pos.side.flip())), g.moves.len())
}
