//! The learner: memory-mapped f32 weights with AdaGrad accumulators (`weights`), the
//! features of a position (`features`), gradients of teacher records (`gradient`), sparse
//! AdaGrad writing through to the quantized tables (`adagrad`), the data stream (`data`);
//! the configuration (`config`), a run's weight set-up (`init`), held-out metrics
//! (`validation`), the files of a run directory (`files`), checkpoints (`checkpoint`), the
//! training loop (`trainer`), bagging's phases (`bagging`) and its sample (`bag_sample`), KPPT
//! export (`export`), newbob's decay-and-rollback decision (`newbob`), and a worker's pool of
//! recent records that each shard's gradient batch is drawn from (`batch_pool`).

pub mod adagrad;
pub mod bag_sample;
pub mod bagging;
pub mod batch_pool;
pub mod checkpoint;
pub mod config;
pub mod data;
pub mod export;
pub mod factors;
pub mod features;
pub mod files;
pub mod gradient;
pub mod init;
pub mod newbob;
pub mod quantized;
pub mod trainer;
pub mod validation;
pub mod weights;

pub use config::LearnConfig;
pub use trainer::Trainer;
pub use weights::WeightFile;
