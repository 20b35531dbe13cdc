//! Dobutsu shogi ("let's catch the lion"), a 3×4 shogi small enough to solve completely:
//! rules and notation, move generation, an exact retrograde solution with a memory-mapped
//! table, Monte Carlo players (research §4), alpha-beta, and teacher-quality measurement
//! against the exact values. A separate game: no code is shared with engine-core's
//! `rules`; engine-core only lends the read-only memory map of the table (`engine_core::mmap`).

// Squares and hand slots are small fixed index ranges used across parallel arrays.
#![allow(clippy::needless_range_loop)]

pub mod alphabeta;
pub mod game;
pub mod mc_player;
pub mod movegen;
pub mod notation;
pub mod players;
pub mod playout;
pub mod rules;
pub mod solver;
pub mod table_file;
pub mod teacher_quality;

pub use movegen::{MAX_MOVES, MoveList, legal_moves, perft};
pub use notation::STARTPOS;
pub use rules::{Color, Move, Position, Status};
