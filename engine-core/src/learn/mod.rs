//! The learner: memory-mapped f32 weights with AdaGrad accumulators (`weights`), the
//! features of a position (`features`), gradients of teacher records (`gradient`), sparse
//! AdaGrad writing through to the quantized tables (`adagrad`), the data stream (`data`),
//! checkpoints (`checkpoint`), the training loop (`trainer`) and KPPT export (`export`).

pub mod adagrad;
pub mod checkpoint;
pub mod data;
pub mod export;
pub mod factors;
pub mod features;
pub mod gradient;
pub mod quantized;
pub mod trainer;
pub mod weights;

pub use trainer::{LearnConfig, Trainer};
pub use weights::WeightFile;
