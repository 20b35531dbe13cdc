pub mod bench;
mod bench_coordinator;
pub mod bench_depth;
mod bench_eval;
mod bench_learn;
mod bench_mate;
mod bench_openings;
mod bench_search;
pub mod consult_stats;
pub mod dobutsu;
pub mod eval;
pub mod export;
pub mod gensfen;
pub mod learn;
pub mod match_cmd;
pub mod match_stats;
pub mod moves;
pub mod patterns;
pub mod perft;
pub mod plot;
pub mod records;
pub mod status;
pub mod train;
pub mod tune;
pub mod usi;
pub mod weights;
pub mod worker;

/// Errors of a subcommand, already phrased for a person.
pub type CommandResult = Result<std::process::ExitCode, String>;

/// Parses a position as the USI `position` command gives it (`startpos`, `sfen <SFEN>`
/// or a bare SFEN, then optionally `moves ...`) and returns the position after the moves,
/// with an error that says what to fix.
pub fn parse_position(text: &str) -> Result<engine_core::rules::Position, String> {
    engine_core::rules::UsiPosition::parse(text).map(|u| u.current()).map_err(|e| {
        format!(
            "--sfen {text:?}: {e} (give what the USI `position` command takes, e.g. `startpos moves 7g7f` \
             or a full SFEN such as \"{}\")",
            engine_core::rules::STARTPOS_SFEN
        )
    })
}
