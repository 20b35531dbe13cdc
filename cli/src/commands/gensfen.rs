//! `keima gensfen`: teacher generation into one shard (+ manifest), by self-play or by
//! searching the positions of game records. The logic is `engine_core::teacher::gensfen`.

use super::CommandResult;
use clap::{ArgGroup, Args, ValueEnum};
use engine_core::eval::Evaluator;
use engine_core::eval::kppt_file::read_kppt_dir;
use engine_core::eval::patterns::file as pattern_file;
use engine_core::records::{GameRecord, RECORD_EXTENSIONS, load_file, record_files};
use engine_core::teacher::gensfen::{
    GensfenConfig, GensfenStats, SearchLimit, SelfPlayGames, TeacherSearch, UnknownResult, Worker,
    run_records, run_selfplay,
};
use engine_core::teacher::{ShardSettings, ShardWriter, load_openings, manifest_path};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum UnknownArg {
    /// Skip the game (counted).
    Skip,
    /// Write its positions with result 0.
    Draw,
    /// The side that made the last move won (human records end at the resignation).
    LastMoverWins,
}

#[derive(Args)]
#[command(group(ArgGroup::new("limit").required(true).args(["depth", "nodes"])))]
pub struct GensfenArgs {
    /// The shard to write (`.psv.zst`); the manifest goes to `<out>.manifest.json`.
    #[arg(long)]
    out: PathBuf,
    /// Self-play openings: a record file (CSA, KIF, KI2) or one USI position a line (what
    /// the USI `position` command takes, e.g. `startpos moves ...`); each game starts from
    /// the end of a uniformly drawn opening.
    #[arg(long, conflicts_with = "records")]
    openings: Option<PathBuf>,
    /// Self-play: uniformly random legal moves played per game ...
    #[arg(long, default_value_t = 0, conflicts_with = "records")]
    random_moves: u32,
    /// ... at distinct plies (SFEN move numbers, 1 = the first move) from this ...
    #[arg(long, default_value_t = 1)]
    random_min_ply: u32,
    /// ... to this (inclusive). Plies an opening has already played are never reached: with
    /// 24-move openings draw from 25 on (a range inside every opening is refused).
    #[arg(long, default_value_t = 24)]
    random_max_ply: u32,
    /// Teacher from game records instead of self-play: files or directories (searched
    /// recursively for .csa/.kif/.kifu/.ki2/.ki2u/.sfen/.usi).
    #[arg(long, num_args = 1..)]
    records: Vec<PathBuf>,
    /// Self-play: number of games (required). Records: use at most this many games.
    #[arg(long)]
    games: Option<u64>,
    /// Search every position to this depth.
    #[arg(long)]
    depth: Option<i32>,
    /// Search every position for this many nodes.
    #[arg(long)]
    nodes: Option<u64>,
    /// Scores are clamped to ±this; in self-play |score| >= this ends the game, won by the
    /// side the score favours.
    #[arg(long, default_value_t = 3000)]
    eval_limit: i32,
    /// Positions before this ply (SFEN move number) are not written.
    #[arg(long, default_value_t = 16)]
    write_minply: u32,
    /// Self-play: a game reaching this many moves is a draw.
    #[arg(long, default_value_t = 256)]
    max_ply: u32,
    /// Seed of the run (game i uses a seed derived from it and i).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// KPPT directory (KK/KKP/KPP_synthesized.bin); default: material only.
    #[arg(long)]
    eval: Option<PathBuf>,
    /// A pattern file added to the evaluation.
    #[arg(long)]
    patterns: Option<PathBuf>,
    /// Games played at once (one worker thread each); the output does not depend on it.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Threads per search (Lazy SMP over the worker's table), for deep teachers with few
    /// games; above 1 the output is no longer reproducible.
    #[arg(long, default_value_t = 1)]
    search_threads: usize,
    /// Transposition table per thread, MiB (part of the reproducibility key).
    #[arg(long, default_value_t = 16)]
    hash: usize,
    /// Records: what to do with a game whose result is unknown (a final position without
    /// legal moves is always a loss for the side to move).
    #[arg(long, value_enum, default_value_t = UnknownArg::Skip)]
    unknown_result: UnknownArg,
    /// log2 of the slots of the per-run duplicate filter (8 bytes per slot).
    #[arg(long, default_value_t = 22)]
    dedupe_bits: u32,
    /// zstd level of the shard.
    #[arg(long, default_value_t = 3)]
    zstd_level: i32,
    /// Print the final statistics as JSON on stdout (instead of the summary line).
    #[arg(long)]
    json: bool,
}

fn load_games(paths: &[PathBuf]) -> Result<Vec<GameRecord>, String> {
    let files = record_files(paths).map_err(|e| e.to_string())?;
    if files.is_empty() {
        let extensions: Vec<String> = RECORD_EXTENSIONS.iter().map(|(e, _)| format!(".{e}")).collect();
        return Err(format!("no record files found (extensions {})", extensions.join(" ")));
    }
    let mut games = Vec::new();
    for f in &files {
        games.extend(load_file(f).map_err(|e| e.to_string())?);
    }
    Ok(games)
}

pub fn run(args: GensfenArgs) -> CommandResult {
    let limit = match (args.depth, args.nodes) {
        (Some(d), _) if d >= 1 => SearchLimit::Depth(d),
        (Some(d), _) => return Err(format!("--depth {d}: give a depth of at least 1")),
        (None, Some(n)) if n >= 1 => SearchLimit::Nodes(n),
        _ => return Err("--nodes: give at least 1 node".into()),
    };
    if args.eval_limit < 1 {
        return Err(format!("--eval-limit {}: give a positive limit (e.g. 3000)", args.eval_limit));
    }
    if args.threads == 0 || args.search_threads == 0 {
        return Err("--threads and --search-threads: give at least 1".into());
    }
    if args.random_max_ply > SelfPlayGames::MAX_RANDOM_PLY {
        return Err(format!(
            "--random-max-ply {} is beyond any game: at most {}",
            args.random_max_ply,
            SelfPlayGames::MAX_RANDOM_PLY
        ));
    }
    if args.random_moves > 0 && args.random_min_ply > args.random_max_ply {
        return Err(format!(
            "--random-min-ply {} is above --random-max-ply {}",
            args.random_min_ply, args.random_max_ply
        ));
    }
    let records_mode = !args.records.is_empty();
    if !records_mode && args.games.is_none() {
        return Err("self-play needs --games N (or give --records PATH... to replay game records)".into());
    }
    if !records_mode && args.openings.is_none() && args.random_moves == 0 && args.games.unwrap_or(0) > 1 {
        return Err("self-play from the start position without --openings FILE or --random-moves N \
                    would play the same game every time: give one of them"
            .into());
    }

    let mut evaluator = Evaluator::material_only();
    let mut eval_id = "material".to_string();
    if let Some(dir) = &args.eval {
        evaluator.kppt = Some(Arc::new(read_kppt_dir(dir).map_err(|e| e.to_string())?));
        eval_id = dir.display().to_string();
    }
    if let Some(path) = &args.patterns {
        evaluator.patterns = Some(Arc::new(pattern_file::load(path).map_err(|e| e.to_string())?));
        eval_id = format!("{eval_id}+patterns:{}", path.display());
    }
    let evaluator = Arc::new(evaluator);

    let cfg = GensfenConfig {
        search: TeacherSearch {
            limit,
            eval_limit: args.eval_limit,
            write_minply: args.write_minply,
            dedupe_bits: args.dedupe_bits,
        },
        play: SelfPlayGames {
            max_ply: args.max_ply,
            random_moves: args.random_moves,
            random_min_ply: args.random_min_ply,
            random_max_ply: args.random_max_ply,
        },
        unknown_result: match args.unknown_result {
            UnknownArg::Skip => UnknownResult::Skip,
            UnknownArg::Draw => UnknownResult::Draw,
            UnknownArg::LastMoverWins => UnknownResult::LastMoverWins,
        },
        seed: args.seed,
    };

    let mut openings = Vec::new();
    let mut records = Vec::new();
    if records_mode {
        records = load_games(&args.records)?;
        if let Some(n) = args.games {
            records.truncate(n.min(usize::MAX as u64) as usize);
        }
    } else if let Some(path) = &args.openings {
        openings = load_openings(path).map_err(|e| format!("--openings {e}"))?;
        let per_game = cfg
            .play
            .check_openings("", &openings)
            .map_err(|e| format!("--random-moves with --openings {}: {e}", path.display()))?;
        if let Some(warning) = cfg.play.lost_random_moves("--random-moves ", per_game) {
            tracing::warn!("{warning}");
        }
    }
    let games = if records_mode { records.len() as u64 } else { args.games.unwrap_or(0) };

    let settings = serde_json::json!({
        "generator": "keima gensfen",
        "mode": if records_mode { "records" } else { "selfplay" },
        "config": cfg,
        "games": games,
        "openings": args.openings.as_ref().map(|p| p.display().to_string()),
        "openings_count": openings.len(),
        "records": args.records.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "eval": args.eval.as_ref().map(|p| p.display().to_string()),
        "patterns": args.patterns.as_ref().map(|p| p.display().to_string()),
        "hash_mib": args.hash,
        "threads": args.threads,
        "search_threads": args.search_threads,
    });
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("--out: cannot create {}: {e}", dir.display()))?;
    }
    let writer =
        ShardWriter::create(&args.out, ShardSettings { zstd_level: args.zstd_level, eval_id, settings })
            .map_err(|e| e.to_string())?;

    let mut workers: Vec<Worker> = (0..args.threads)
        .map(|_| Worker::with_search_threads(evaluator.clone(), args.hash, args.search_threads))
        .collect();
    let bar = ProgressBar::new(games).with_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} games {elapsed_precise} {msg}")
            .expect("valid template"),
    );
    let started = Instant::now();
    let progress = |s: &GensfenStats| {
        bar.set_position(s.games + s.skipped_unknown_result_games);
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        bar.set_message(format!(
            "{} positions, {:.0} pos/s",
            s.positions_written,
            s.positions_written as f64 / secs
        ));
    };
    let result = if records_mode {
        run_records(&mut workers, &cfg, &records, writer, progress)
    } else {
        run_selfplay(&mut workers, &cfg, &openings, games, writer, progress)
    };
    bar.finish_and_clear();
    let (writer, stats) = result.map_err(|e| e.to_string())?;
    let manifest = writer.finish().map_err(|e| e.to_string())?;
    let secs = started.elapsed().as_secs_f64();
    if records_mode && stats.skipped_unknown_result_games > 0 {
        tracing::warn!(
            "{} games have no result and were skipped (--unknown-result draw|last-mover-wins keeps them)",
            stats.skipped_unknown_result_games
        );
    }
    if args.json {
        let mut v = serde_json::to_value(&stats).map_err(|e| e.to_string())?;
        v["out"] = args.out.display().to_string().into();
        v["manifest"] = manifest_path(&args.out).display().to_string().into();
        v["records"] = manifest.records.into();
        v["seconds"] = secs.into();
        v["positions_per_second"] = (stats.positions_written as f64 / secs.max(1e-9)).into();
        v["average_plies"] = stats.average_plies().into();
        println!("{v}");
    } else {
        println!(
            "gensfen: {} records to {} in {:.1}s ({:.0} positions/s, {:.0} nodes/s); {stats}",
            manifest.records,
            args.out.display(),
            secs,
            stats.positions_written as f64 / secs.max(1e-9),
            stats.nodes as f64 / secs.max(1e-9),
        );
    }
    Ok(ExitCode::SUCCESS)
}
