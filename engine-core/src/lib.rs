//! Keima's engine core. Data flows rules → records/teacher formats → (later) features/eval
//! → search → teacher → gradient → merge. Nothing here knows about networks, and no module
//! decides where files live: callers pass paths or readers.

pub mod config;
pub mod cpu_time;
pub mod eval;
pub mod fsutil;
pub mod huge_pages;
pub mod learn;
pub mod mmap;
pub mod play;
pub mod prefetch;
pub mod records;
pub mod rng;
pub mod rules;
pub mod search;
pub mod sigpipe;
pub mod teacher;
