//! Shogi rules: squares and pieces, bitboards and attacks, the position with do/undo,
//! legal move generation, SFEN/USI notation, perft, and game-end rules.

pub mod attacks;
pub mod bitboard;
pub mod game;
pub mod movegen;
pub mod perft;
pub mod position;
pub mod random_walk;
pub mod sfen;
pub mod types;
pub mod zobrist;

pub use bitboard::Bitboard;
pub use game::{Game, GameEnd, GameOutcome};
pub use movegen::{CheckInfo, MAX_MOVES, MoveList, MoveSink};
pub use position::{MoveDelta, Position};
pub use sfen::{HANDICAPS, STARTPOS_SFEN, SfenError, UsiMoveError, UsiPosition, UsiPositionError};
pub use types::{Color, Hand, Move, Piece, PieceType, Square};
