//! Evaluation: BonaPiece features, the piece list, material, KPPT tables and files, and
//! the combined evaluator with differential update.

pub mod bona_piece;
pub mod evaluator;
pub mod kppt;
pub mod kppt_file;
pub mod material;
pub mod noise;
pub mod patterns;
pub mod piece_list;

pub use evaluator::{EvalParts, EvalState, Evaluator};
pub use kppt::{KingRefreshCache, KpptSum, KpptTables};
