//! `keima weights init`: create a training weight file (see engine_core::learn::weights).

use super::CommandResult;
use clap::{Args, Subcommand};
use engine_core::eval::kppt_file::load_kppt_dir;
use engine_core::eval::patterns::file as pattern_file;
use engine_core::learn::factors::Factorization;
use engine_core::learn::init::init_weights;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum WeightsCommand {
    /// Create a training weight file: material-only (all KPPT weights zero) or from KPPT files.
    Init(InitArgs),
}

#[derive(Args)]
pub struct InitArgs {
    /// Start from material only (every KPPT weight zero).
    #[arg(long, conflicts_with = "from_kppt", required_unless_present = "from_kppt")]
    material: bool,
    /// Start from the KPPT files in this directory.
    #[arg(long)]
    from_kppt: Option<PathBuf>,
    /// Pattern file whose patterns (and weights) the file will train.
    #[arg(long)]
    patterns: Option<PathBuf>,
    /// Output weight file (about 1.7 GB, created sparse).
    #[arg(long)]
    out: PathBuf,
    /// Dimension reduction: share each weight with its left-right mirror image.
    #[arg(long)]
    mirror: bool,
    /// Dimension reduction: train a KP (king, piece) factor folded into KKP.
    #[arg(long)]
    kp: bool,
    /// Dimension reduction: train a PP factor relative to the king folded into KPP.
    #[arg(long)]
    pp: bool,
}

pub fn run(cmd: WeightsCommand) -> CommandResult {
    match cmd {
        WeightsCommand::Init(a) => {
            let _ = a.material;
            let patterns =
                a.patterns.as_ref().map(|p| pattern_file::load(p).map_err(|e| e.to_string())).transpose()?;
            let kppt =
                a.from_kppt.as_ref().map(|d| load_kppt_dir(d).map_err(|e| e.to_string())).transpose()?;
            let factors = Factorization { mirror: a.mirror, kp: a.kp, pp: a.pp };
            let w = init_weights(&a.out, kppt.as_ref(), patterns.as_ref(), factors)?;
            println!(
                "{}: {} features ({} patterns), {} bytes, from {}",
                a.out.display(),
                w.header.features(),
                w.header.patterns,
                w.header.file_len(),
                a.from_kppt.as_ref().map_or("material only".to_string(), |d| d.display().to_string())
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
