//! `keima export`: round and clamp training weights to KPPT files (and the pattern file).

use super::CommandResult;
use clap::Args;
use engine_core::eval::patterns::file as pattern_file;
use engine_core::learn::WeightFile;
use engine_core::learn::export::export_kppt;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct ExportArgs {
    /// Training weight file (`weights.kw` of a run, or of a checkpoint).
    #[arg(long)]
    weights: PathBuf,
    /// Output format (only `kppt`).
    #[arg(long, default_value = "kppt")]
    format: String,
    /// Output directory for KK/KKP/KPP_synthesized.bin.
    #[arg(long)]
    out: PathBuf,
    /// The pattern file the weights were trained with (definitions).
    #[arg(long, requires = "patterns_out")]
    patterns: Option<PathBuf>,
    /// Where to write the pattern file with the trained weights.
    #[arg(long, requires = "patterns")]
    patterns_out: Option<PathBuf>,
}

pub fn run(a: ExportArgs) -> CommandResult {
    if a.format != "kppt" {
        return Err(format!("--format {}: only `kppt` is supported", a.format));
    }
    let w = WeightFile::open(&a.weights, true).map_err(|e| e.to_string())?;
    let set = a.patterns.as_ref().map(|p| pattern_file::load(p).map_err(|e| e.to_string())).transpose()?;
    if set.is_none() && w.header.patterns > 0 {
        eprintln!(
            "warning: the weights have {} pattern weights; give --patterns and --patterns-out to export them",
            w.header.patterns
        );
    }
    let pats = match (&set, &a.patterns_out) {
        (Some(s), Some(o)) => Some((s, o.as_path())),
        _ => None,
    };
    let c = export_kppt(&w, &a.out, pats)?;
    println!(
        "exported {} (updates {}, examples {}) to {}: clamped {} weights (KK {}, KKP {}, KPP {}, patterns {})",
        a.weights.display(),
        w.header.updates,
        w.header.examples,
        a.out.display(),
        c.total(),
        c.kk,
        c.kkp,
        c.kpp,
        c.patterns
    );
    Ok(ExitCode::SUCCESS)
}
