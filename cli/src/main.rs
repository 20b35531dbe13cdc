//! The `keima` command. Each subcommand lives in `commands/`; this file only parses the
//! command line and reports errors.

mod commands;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "keima", version, about = "Keima: cluster-scale training of shogi evaluation functions")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Count the leaves of the legal-move tree (move-generation check and speed).
    Perft(commands::perft::PerftArgs),
    /// List the legal moves of a position in USI notation.
    Moves(commands::moves::MovesArgs),
    /// Game records: check and convert CSA, KIF/KIFU, KI2 and USI-line files.
    #[command(subcommand)]
    Records(commands::records::RecordsCommand),
    /// Evaluate a position: material + KPPT + patterns, from the side to move's view.
    Eval(commands::eval::EvalArgs),
    /// Pattern features: extraction by random counting over game records.
    #[command(subcommand)]
    Patterns(commands::patterns::PatternsCommand),
    /// Benchmarks that print figures (see BENCHMARKS.md); without a subcommand, the
    /// search signature (node count at a fixed depth) and nodes/s.
    Bench(commands::bench::BenchArgs),
    /// Run the engine with the USI protocol on stdin/stdout.
    Usi(commands::usi::UsiArgs),
    /// Diversity of consulting players on held-out records: move agreement, distinct
    /// candidate moves, GogiScat(C).
    ConsultStats(commands::consult_stats::ConsultStatsArgs),
    /// Play a match between two USI engines; CSA records, W/D/L and Elo.
    Match(commands::match_cmd::MatchArgs),
    /// Add up the batches of a match (several `keima match --out` directories): W/D/L,
    /// pentanomial, score and Elo with their 95% intervals.
    MatchStats(commands::match_stats::MatchStatsArgs),
    /// Tune the search's numbers (margins, reductions, windows) by SPSA over game pairs at
    /// a node budget; resumable. `keima tune --list` shows them.
    Tune(commands::tune::TuneArgs),
    /// Generate teacher data (a PackedSfenValue shard) by self-play or from game records.
    Gensfen(commands::gensfen::GensfenArgs),
    /// Training weight files (memory-mapped f32 weights and AdaGrad state).
    #[command(subcommand)]
    Weights(commands::weights::WeightsCommand),
    /// Train an evaluation function from teacher shards (single process).
    Learn(commands::learn::LearnArgs),
    /// Round and clamp training weights to KPPT files (and a pattern file).
    Export(commands::export::ExportArgs),
    /// Draw learning curves from a metrics JSONL file as SVG.
    Plot(commands::plot::PlotArgs),
    /// Distributed training: the coordinator (with local workers) for a config.
    Train(commands::train::TrainArgs),
    /// A training worker for a coordinator.
    Worker(commands::worker::WorkerArgs),
    /// A running coordinator's counters.
    Status(commands::status::StatusArgs),
    /// Dobutsu shogi: perft, exact solution, Monte Carlo players, matches, teacher quality.
    #[command(subcommand)]
    Dobutsu(commands::dobutsu::DobutsuCommand),
}

impl Command {
    /// Commands that write only to stdout, stderr and files (and, for `bench coordinator`,
    /// to its own clients over local sockets, whose writes never raise SIGPIPE: Rust sends
    /// with MSG_NOSIGNAL). They end quietly, killed by
    /// SIGPIPE as Unix tools are, when their reader goes away (`keima bench | head -1`),
    /// instead of panicking in `println!`. The others keep SIGPIPE ignored: `match` and the
    /// workers' match jobs write to engines they started, whose death must be an error
    /// they report, not the end of the match; `train`, `worker` and `status` talk to peers;
    /// `usi`, `gensfen` and `learn` are left as they were; `tune` only for `--list` and
    /// `--status`.
    fn only_prints(&self) -> bool {
        if let Command::Tune(args) = self {
            return args.only_prints();
        }
        matches!(
            self,
            Command::Perft(_)
                | Command::Moves(_)
                | Command::Records(_)
                | Command::Eval(_)
                | Command::Patterns(_)
                | Command::Bench(_)
                | Command::ConsultStats(_)
                | Command::MatchStats(_)
                | Command::Weights(_)
                | Command::Export(_)
                | Command::Plot(_)
                | Command::Dobutsu(_)
        )
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            // `--quiet` keeps the default log to warnings (workers print a line per shard).
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                if std::env::args_os().any(|a| a == "--quiet") { "warn".into() } else { "info".into() }
            }),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    if cli.command.only_prints() {
        engine_core::sigpipe::restore_default_sigpipe();
    }
    let result = match cli.command {
        Command::Perft(args) => commands::perft::run(args),
        Command::Moves(args) => commands::moves::run(args),
        Command::Records(cmd) => commands::records::run(cmd),
        Command::Eval(args) => commands::eval::run(args),
        Command::Patterns(cmd) => commands::patterns::run(cmd),
        Command::Bench(cmd) => commands::bench::run(cmd),
        Command::Usi(args) => commands::usi::run(args),
        Command::ConsultStats(args) => commands::consult_stats::run(args),
        Command::Match(args) => commands::match_cmd::run(args),
        Command::MatchStats(args) => commands::match_stats::run(args),
        Command::Tune(args) => commands::tune::run(args),
        Command::Gensfen(args) => commands::gensfen::run(args),
        Command::Weights(cmd) => commands::weights::run(cmd),
        Command::Learn(args) => commands::learn::run(args),
        Command::Export(args) => commands::export::run(args),
        Command::Plot(args) => commands::plot::run(args),
        Command::Train(args) => commands::train::run_cmd(args),
        Command::Worker(args) => commands::worker::run_cmd(args),
        Command::Status(args) => commands::status::run(args),
        Command::Dobutsu(cmd) => commands::dobutsu::run(cmd),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
