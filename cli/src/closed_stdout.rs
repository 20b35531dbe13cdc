//! What a printing command does when its reader goes away (`keima bench | head -1`): it
//! ends quietly, killed by SIGPIPE, as Unix tools do, instead of panicking in `println!`.
//! Commands that write to engines they started (`match`, `gensfen` against opponents) or
//! talk to peers (`train`, `worker`, `usi`) keep SIGPIPE ignored, so that an opponent
//! that died is an error they report, not the end of the whole process.

pub use engine_core::sigpipe::restore_default_sigpipe as end_quietly_when_stdout_closes;
