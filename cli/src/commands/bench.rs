use super::{CommandResult, parse_position};
use clap::{Args, Subcommand};
use engine_core::rules::perft::perft;
use engine_core::search::bench::DEFAULT_BENCH_DEPTH;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    cmd: Option<BenchCommand>,
    /// Signature: depth of every search.
    #[arg(long, default_value_t = DEFAULT_BENCH_DEPTH)]
    depth: i32,
    /// Signature: one JSON object instead of the lines.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Move generation: perft 5 and 6 from the start, perft 4 from "matsuri", one thread.
    Movegen {
        /// Also run perft 6 from the start (about 10 s) and perft 4 from matsuri.
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
        deep: bool,
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Fast mate knowledge (research §5): nodes and time to find the mate on a fixed
    /// suite of mating positions, with and without mate-in-1 at nodes and df-pn at the root.
    Mate {
        /// Positions in the (generated, seeded) suite.
        #[arg(long, default_value_t = 40)]
        positions: usize,
        /// Node budget per position and configuration.
        #[arg(long, default_value_t = 3_000_000)]
        max_nodes: u64,
        #[arg(long)]
        json: bool,
    },
    /// Fixed-depth search cost on positions from capture-heavy random games: mean, median,
    /// 99th percentile and maximum nodes per search, at depths 1..=max_depth.
    Search {
        #[arg(long, default_value_t = 300)]
        positions: usize,
        #[arg(long, default_value_t = 5)]
        max_depth: i32,
        /// Node cap per search (searches that reach it are counted as capped).
        #[arg(long, default_value_t = 20_000_000)]
        max_nodes: u64,
        #[arg(long)]
        json: bool,
    },
    /// Depth reached in a fixed time per move on middle-game positions (plies 40, 50, ...,
    /// 90 of the game records given), one search per position with a fresh table: mean
    /// completed depth, mean selective depth, nodes/s.
    Depth {
        /// Game records (files or directories); games shorter than 100 moves are skipped.
        #[arg(long, default_value = "../shared/data/records/pro")]
        records: std::path::PathBuf,
        /// Milliseconds per position.
        #[arg(long, default_value_t = 1000)]
        movetime: u64,
        /// Nodes per position instead of a time (deterministic with one thread; compares
        /// searches independently of the machine's speed and load).
        #[arg(long, conflicts_with = "movetime")]
        nodes: Option<u64>,
        /// KPPT directory; default: material only.
        #[arg(long)]
        eval: Option<std::path::PathBuf>,
        /// Transposition table, MiB.
        #[arg(long, default_value_t = 64)]
        hash: usize,
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// The search's parameters, as `keima usi`'s `SearchParams` takes them
        /// (`name=value,...`; see `keima tune --list`): the depth a tuned set reaches.
        #[arg(long, default_value = "")]
        search_params: String,
        #[arg(long)]
        json: bool,
        /// Print the positions as USI `position` arguments, one a line, and search
        /// nothing: the input of scripts/usi-depth.py, which measures any USI engine (or
        /// another Keima build) on the same positions.
        #[arg(long)]
        print_usi: bool,
    },
    /// Evaluation: ns per differential update and per full recompute along random games,
    /// with 0 patterns and with a pattern set (10,924 by default, the research's count).
    Eval {
        /// A pattern file; without it 10,924 size-3 patterns are extracted from the
        /// openings file (or from the random games if it is missing).
        #[arg(long)]
        patterns: Option<std::path::PathBuf>,
        /// Random games to replay (150 plies each).
        #[arg(long, default_value_t = 300)]
        games: usize,
        #[arg(long)]
        json: bool,
    },
    /// Coordinator capacity: many simulated workers (in this process) push a recorded real
    /// gradient for every shard; merges/s, entries/s, push latency, bytes on the wire.
    Coordinator {
        /// Concurrent simulated workers.
        #[arg(long, default_value_t = 64)]
        workers: usize,
        /// Pushes (= shards) in the run.
        #[arg(long, default_value_t = 640)]
        pushes: u64,
        /// Teacher positions behind the recorded gradient (one shard's worth).
        #[arg(long, default_value_t = 1000)]
        positions: usize,
        /// Weights with all three factors (mirror, KP, PP), as the strength recipes train.
        #[arg(long)]
        factors: bool,
        #[arg(long)]
        json: bool,
    },
    /// Learner throughput with full KPPT tables, one thread and all cores: gradient
    /// positions/s, end-to-end positions/s at a mini-batch size, peak memory (VmHWM).
    Learn {
        /// Teacher shard to read positions from; without it material-only self-play data
        /// (1,000 nodes a move) is generated first.
        #[arg(long)]
        shard: Option<std::path::PathBuf>,
        /// Mini-batch size.
        #[arg(long, default_value_t = 10_000)]
        batch: usize,
        /// Mini-batches timed end to end (per thread count).
        #[arg(long, default_value_t = 3)]
        batches: usize,
        #[arg(long)]
        json: bool,
    },
}

const MATSURI: &str = "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1";

pub fn run(args: BenchArgs) -> CommandResult {
    let Some(cmd) = args.cmd else {
        return signature(args.depth, args.json);
    };
    match cmd {
        BenchCommand::Movegen { deep, json } => {
            let mut cases = vec![("startpos", "startpos", 5u32, 19_861_490u64)];
            if deep {
                cases.push(("startpos", "startpos", 6, 547_581_517));
                cases.push(("matsuri", MATSURI, 4, 516_925_165));
            }
            for (name, sfen, depth, expected) in cases {
                let mut pos = parse_position(sfen)?;
                let start = Instant::now();
                let nodes = perft(&mut pos, depth);
                let secs = start.elapsed().as_secs_f64();
                if nodes != expected {
                    return Err(format!(
                        "perft {depth} of {name} gave {nodes}, expected {expected}: move generation is wrong"
                    ));
                }
                let rate = nodes as f64 / secs;
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"bench":"movegen","position":name,"depth":depth,"nodes":nodes,"seconds":secs,"leaves_per_second":rate})
                    );
                } else {
                    println!(
                        "perft {depth} {name:<8} {nodes:>12} leaves {secs:>8.3} s {:>7.1} M leaves/s",
                        rate / 1e6
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Depth { records, print_usi: true, .. } => super::bench_depth::print_usi(&records),
        BenchCommand::Depth {
            records,
            movetime,
            nodes,
            eval,
            hash,
            threads,
            search_params,
            json,
            print_usi: false,
        } => {
            let params = engine_core::search::SearchParams::parse(&search_params)
                .map_err(|e| format!("--search-params: {e}"))?;
            let budget = super::bench_depth::Budget { movetime, nodes, hash, threads };
            super::bench_depth::run(&records, budget, eval.as_deref(), params, json)
        }
        BenchCommand::Search { positions, max_depth, max_nodes, json } => {
            super::bench_search::run(positions, max_depth, max_nodes, json)
        }
        BenchCommand::Eval { patterns, games, json } => super::bench_eval::run(patterns, games, json),
        BenchCommand::Coordinator { workers, pushes, positions, factors, json } => {
            super::bench_coordinator::run(workers, pushes, positions, factors, json)
        }
        BenchCommand::Learn { shard, batch, batches, json } => {
            super::bench_learn::run(shard, batch, batches, json)
        }
        BenchCommand::Mate { positions, max_nodes, json } => {
            super::bench_mate::run(positions, max_nodes, json)
        }
    }
}

/// `keima bench`: the search signature (see `engine_core::search::bench`).
fn signature(depth: i32, json: bool) -> CommandResult {
    if !(1..=64).contains(&depth) {
        return Err(format!("--depth {depth}: must be 1..=64"));
    }
    let r = engine_core::search::bench::run(depth);
    if json {
        println!(
            "{}",
            serde_json::json!({"bench": "signature", "depth": depth, "positions": r.nodes.len(),
                "nodes": r.total_nodes(), "seconds": r.elapsed.as_secs_f64(), "nodes_per_second": r.nodes_per_second()})
        );
    } else {
        println!("positions        {}", r.nodes.len());
        println!("depth            {depth}");
        println!("total time (ms)  {}", r.elapsed.as_millis());
        println!("nodes searched   {}", r.total_nodes());
        println!("nodes/second     {}", r.nodes_per_second());
    }
    Ok(ExitCode::SUCCESS)
}
