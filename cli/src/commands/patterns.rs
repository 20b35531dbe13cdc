use super::CommandResult;
use clap::{Args, Subcommand};
use engine_core::eval::patterns::{Band, ExtractConfig, PatternCounter, PatternSet, file as pattern_file};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum PatternsCommand {
    /// Extract piece combinations by random counting over game records (research §2).
    Extract(ExtractArgs),
}

#[derive(Args)]
pub struct ExtractArgs {
    /// Record files or directories (CSA, KIF/KIFU, KI2, USI lines such as the openings file).
    #[arg(long, num_args = 1.., required = true)]
    records: Vec<PathBuf>,
    /// Pieces per pattern (2..=4).
    #[arg(long, default_value_t = 3)]
    size: usize,
    /// How many patterns to keep (the most frequent inside the band).
    #[arg(long, default_value_t = 10_924)]
    keep: usize,
    /// Drop combinations seen in more than this share of positions (immobile pieces).
    #[arg(long, default_value_t = 0.05)]
    max_share: f64,
    /// Drop the N most frequent combinations (immobile pieces such as corner lances).
    #[arg(long, default_value_t = 1000)]
    drop_top: usize,
    /// Drop combinations seen fewer times than this (noise).
    #[arg(long, default_value_t = 3)]
    min_count: u64,
    /// Random combinations drawn per position.
    #[arg(long, default_value_t = 16)]
    samples: usize,
    /// Count combinations from the side to move's view.
    #[arg(long)]
    relative: bool,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How many of the kept patterns to print.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Output pattern file (weights start at zero).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(cmd: PatternsCommand) -> CommandResult {
    let PatternsCommand::Extract(args) = cmd;
    if !(2..=4).contains(&args.size) {
        return Err(format!("--size {}: a pattern has 2 to 4 pieces", args.size));
    }
    let files = engine_core::records::record_files(&args.records).map_err(|e| e.to_string())?;
    let mut counter = PatternCounter::new(ExtractConfig {
        size: args.size,
        relative: args.relative,
        samples_per_position: args.samples,
        seed: args.seed,
    });
    let bar = ProgressBar::new(files.len() as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} files {msg}").expect("valid template"),
    );
    let mut games = 0u64;
    let mut skipped_files = 0u64;
    for file in &files {
        // A broken file is reported and skipped; it must not end a long extraction.
        let records = match engine_core::records::load_file(file) {
            Ok(r) => r,
            Err(e) => {
                bar.suspend(|| tracing::warn!("skipped: {e}"));
                skipped_files += 1;
                bar.inc(1);
                continue;
            }
        };
        for record in &records {
            games += 1;
            let mut pos = record.start;
            counter.observe(&pos);
            for m in &record.moves {
                pos.do_move(m.mv);
                counter.observe(&pos);
            }
        }
        bar.inc(1);
        bar.set_message(format!("{games} games"));
    }
    bar.finish_and_clear();
    let ex = counter.finish(Band {
        max_share: args.max_share,
        drop_top: args.drop_top,
        min_count: args.min_count,
        keep: args.keep,
    });
    println!(
        "{} games from {} files ({skipped_files} unreadable files skipped), {} positions, {} distinct \
         combinations of {} pieces",
        games,
        files.len(),
        ex.positions,
        ex.distinct,
        args.size
    );
    println!(
        "band: kept {} with counts {}..={} (dropped the {} most frequent (--drop-top / > {:.1}% of \
         positions) and {} seen < {} times)",
        ex.kept.len(),
        ex.lower,
        ex.upper,
        ex.dropped_frequent,
        args.max_share * 100.0,
        ex.dropped_rare,
        args.min_count
    );
    println!("{:>5} {:>8} {:>8}  pattern", "rank", "count", "per 10k");
    for (i, (p, c)) in ex.kept.iter().take(args.top).enumerate() {
        let per10k = *c as f64 * 10_000.0 / ex.positions.max(1) as f64;
        println!("{:>5} {:>8} {:>8.1}  {p}", i + 1, c, per10k);
    }
    let n = ex.kept.len();
    let set = PatternSet::new(ex.kept.into_iter().map(|(p, _)| p).collect(), vec![0; n]);
    pattern_file::save(&set, &args.out).map_err(|e| e.to_string())?;
    println!("wrote {n} patterns to {}", args.out.display());
    Ok(ExitCode::SUCCESS)
}
