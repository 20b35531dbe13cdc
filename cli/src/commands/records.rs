use super::CommandResult;
use clap::{Subcommand, ValueEnum};
use engine_core::records::{GameRecord, Outcome, load_file, record_files};
use engine_core::rules::Color;
use engine_core::teacher::{PackedSfenValue, ShardSettings, ShardWriter};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum RecordsCommand {
    /// Parse and replay record files (or directories, searched recursively); print a
    /// per-file summary; exit 1 if any file fails, naming the file, line and reason.
    Check {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Convert records to USI lines, or to a teacher shard (score 0, move = the move
    /// played, gamePly, game_result from the record; games without a result are skipped).
    Convert {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long, value_enum)]
        to: ConvertTo,
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ConvertTo {
    Usi,
    Psv,
}

fn outcome_label(r: &GameRecord) -> &'static str {
    match r.result.outcome {
        Outcome::BlackWin => "black wins",
        Outcome::WhiteWin => "white wins",
        Outcome::Draw => "draw",
        Outcome::Unknown => "unknown",
    }
}

fn check(paths: &[PathBuf]) -> CommandResult {
    let files = record_files(paths).map_err(|e| e.to_string())?;
    let (mut ok, mut failed, mut games, mut moves) = (0, 0, 0usize, 0usize);
    for file in &files {
        match load_file(file) {
            Ok(records) => {
                ok += 1;
                let n: usize = records.iter().map(|r| r.moves.len()).sum();
                games += records.len();
                moves += n;
                let results: Vec<&str> = records.iter().take(3).map(outcome_label).collect();
                let more = if records.len() > 3 { ", ..." } else { "" };
                println!(
                    "ok    {}: {} game(s), {n} moves ({}{more})",
                    file.display(),
                    records.len(),
                    results.join(", ")
                );
            }
            Err(e) => {
                failed += 1;
                println!("FAIL  {e}");
            }
        }
    }
    println!("{} files: {ok} ok, {failed} failed; {games} games, {moves} moves replayed", files.len());
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn convert(paths: &[PathBuf], to: ConvertTo, out: &Path) -> CommandResult {
    let files = record_files(paths).map_err(|e| e.to_string())?;
    let mut records = Vec::new();
    for file in &files {
        records.extend(load_file(file).map_err(|e| e.to_string())?);
    }
    match to {
        ConvertTo::Usi => {
            let tmp = out.with_extension("tmp");
            let mut f = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
            for r in &records {
                writeln!(f, "{}", r.to_usi_line()).map_err(|e| format!("{}: {e}", tmp.display()))?;
            }
            f.sync_all().map_err(|e| format!("{}: {e}", tmp.display()))?;
            std::fs::rename(&tmp, out).map_err(|e| format!("{}: {e}", out.display()))?;
            println!("wrote {} games to {}", records.len(), out.display());
        }
        ConvertTo::Psv => {
            let settings = ShardSettings {
                zstd_level: 3,
                eval_id: "records".to_string(),
                settings: serde_json::json!({
                    "source": "keima records convert",
                    "files": files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
                    "score": "0 (no teacher search)",
                }),
            };
            let mut w = ShardWriter::create(out, settings).map_err(|e| format!("{}: {e}", out.display()))?;
            let (mut written, mut skipped_games, mut unpackable) = (0u64, 0u64, 0u64);
            for r in &records {
                let winner = match r.result.outcome {
                    Outcome::BlackWin => Some(Color::Black),
                    Outcome::WhiteWin => Some(Color::White),
                    Outcome::Draw => None,
                    Outcome::Unknown => {
                        skipped_games += 1;
                        continue;
                    }
                };
                let mut pos = r.start;
                for m in &r.moves {
                    let result = match winner {
                        None => 0,
                        Some(c) if c == pos.side_to_move() => 1,
                        Some(_) => -1,
                    };
                    // Positions without both kings (mate problems) cannot be packed.
                    match PackedSfenValue::new(&pos, Some(m.mv), 0, result) {
                        Ok(psv) => {
                            if w.write(&psv).map_err(|e| format!("{}: {e}", out.display()))? {
                                written += 1;
                            }
                        }
                        Err(_) => unpackable += 1,
                    }
                    pos.do_move(m.mv);
                }
            }
            let manifest = w.finish().map_err(|e| format!("{}: {e}", out.display()))?;
            println!(
                "wrote {written} records ({} in the manifest) to {}; skipped {skipped_games} games without \
                 a result and {unpackable} positions without both kings",
                manifest.records,
                out.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(cmd: RecordsCommand) -> CommandResult {
    match cmd {
        RecordsCommand::Check { paths } => check(&paths),
        RecordsCommand::Convert { paths, to, out } => convert(&paths, to, &out),
    }
}
