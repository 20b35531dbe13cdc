use super::{CommandResult, parse_position};
use clap::Args;
use engine_core::eval::Evaluator;
use engine_core::eval::kppt_file::load_kppt_dir;
use engine_core::eval::patterns::file as pattern_file;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args)]
pub struct EvalArgs {
    /// A position as the USI `position` command takes it: `startpos`, `sfen <SFEN>` or a
    /// bare SFEN, then optionally `moves 7g7f 3c3d ...`.
    #[arg(long, default_value = "startpos")]
    sfen: String,
    /// Directory with KK_synthesized.bin, KKP_synthesized.bin, KPP_synthesized.bin
    /// (memory-mapped). Without it the KPPT part is zero (material-only evaluation).
    #[arg(long)]
    eval: Option<PathBuf>,
    /// A pattern file (from `keima patterns extract` or the learner).
    #[arg(long)]
    patterns: Option<PathBuf>,
    /// Leave out the material term.
    #[arg(long)]
    no_material: bool,
    /// Print `{"eval":..,"material":..,"kppt":..,"patterns":..}`.
    #[arg(long)]
    json: bool,
}

pub fn run(args: EvalArgs) -> CommandResult {
    let pos = parse_position(&args.sfen)?;
    let mut evaluator = Evaluator::material_only();
    evaluator.use_material = !args.no_material;
    if let Some(dir) = &args.eval {
        evaluator.kppt = Some(Arc::new(load_kppt_dir(dir).map_err(|e| e.to_string())?));
    }
    if let Some(path) = &args.patterns {
        evaluator.patterns = Some(Arc::new(pattern_file::load(path).map_err(|e| e.to_string())?));
    }
    if pos.king_square(engine_core::rules::Color::Black).is_none()
        || pos.king_square(engine_core::rules::Color::White).is_none()
    {
        tracing::warn!("a king is missing: the KPPT part is left at zero");
    }
    let parts = evaluator.evaluate_full(&pos);
    if args.json {
        println!("{}", serde_json::to_string(&parts).map_err(|e| e.to_string())?);
    } else {
        println!(
            "eval {} (material {}, kppt {}, patterns {}) from the side to move's view",
            parts.eval, parts.material, parts.kppt, parts.patterns
        );
    }
    Ok(ExitCode::SUCCESS)
}
