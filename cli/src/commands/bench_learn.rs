//! `keima bench learn`: learner throughput with full KPPT tables, on one thread and on all
//! cores — gradient positions/s (qsearch + leaf + features + sparse accumulation, the merge
//! of the mini-batch's entries included), end-to-end positions/s at a mini-batch size
//! (gradient + sum + AdaGrad + quantized-table write-through, through `Trainer::train_batch`),
//! and the peak resident memory of the process (VmHWM).

use super::CommandResult;
use super::bench_openings::shared_openings;
use engine_core::cpu_time::process_cpu_seconds;
use engine_core::eval::Evaluator;
use engine_core::learn::gradient;
use engine_core::learn::{LearnConfig, Trainer};
use engine_core::teacher::gensfen::{
    GensfenConfig, SearchLimit, SelfPlayGames, TeacherSearch, Worker, run_selfplay,
};
use engine_core::teacher::{PackedSfenValue, ShardReader, ShardSettings, ShardWriter, TeacherRecord};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// Peak and current resident set size in bytes, from /proc/self/status (Linux).
pub fn memory_status() -> (Option<u64>, Option<u64>) {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Self-play teacher data with the material-only evaluation (1,000 nodes a move), written to
/// `path`, until at least `positions` records exist.
fn generate_shard(path: &Path, positions: usize, threads: usize) -> Result<(), String> {
    let openings = shared_openings()?.unwrap_or_default();
    let cfg = GensfenConfig::selfplay(
        TeacherSearch { limit: SearchLimit::Nodes(1000), write_minply: 25, ..TeacherSearch::default() },
        SelfPlayGames { random_moves: if openings.is_empty() { 8 } else { 0 }, ..SelfPlayGames::default() },
        7,
    );
    let evaluator = Arc::new(Evaluator::material_only());
    let mut workers: Vec<Worker> = (0..threads.max(1)).map(|_| Worker::new(evaluator.clone(), 4)).collect();
    let mut out: Vec<PackedSfenValue> = Vec::new();
    let mut round = 0u64;
    while out.len() < positions {
        let games = ((positions - out.len()) / 40 + 8) as u64;
        let c = GensfenConfig { seed: cfg.seed + round, ..cfg.clone() };
        let (v, _) = run_selfplay(&mut workers, &c, &openings, games, Vec::new(), |_| {})
            .map_err(|e| e.to_string())?;
        out.extend(v);
        round += 1;
    }
    let mut w = ShardWriter::create(path, ShardSettings::default()).map_err(|e| e.to_string())?;
    for psv in &out {
        w.write(psv).map_err(|e| e.to_string())?;
    }
    w.finish().map_err(|e| e.to_string())?;
    Ok(())
}

fn read_records(path: &Path, max: usize) -> Result<Vec<TeacherRecord>, String> {
    let mut r = ShardReader::open(path).map_err(|e| e.to_string())?;
    let mut v = Vec::new();
    while v.len() < max {
        match r.next_record().map_err(|e| e.to_string())? {
            Some(rec) => v.push(rec),
            None => break,
        }
    }
    Ok(v)
}

struct Figures {
    threads: usize,
    gradient_pos_s: f64,
    gradient_s: f64,
    gradient_cpu_s: f64,
    end_to_end_pos_s: f64,
    end_to_end_s: f64,
    end_to_end_cpu_s: f64,
    entries: usize,
    touched_per_batch: f64,
}

fn measure(
    shard: &Path,
    records: &[TeacherRecord],
    batch: usize,
    threads: usize,
    dir: &Path,
) -> Result<Figures, String> {
    let run_dir = dir.join(format!("run-{threads}"));
    let _ = std::fs::remove_dir_all(&run_dir);
    let cfg = LearnConfig {
        shards: vec![shard.display().to_string()],
        out_dir: run_dir.clone(),
        batch_size: batch,
        eval_every: 0,
        checkpoint_every: 0,
        threads,
        ..LearnConfig::default()
    };
    let mut trainer = Trainer::new(cfg.clone())?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| e.to_string())?;

    // Gradient phase alone, on the first batch with the initial weights.
    let first = &records[..batch.min(records.len())];
    let ev: Arc<Evaluator> = trainer.evaluator().clone();
    let loss = cfg.learn.loss;
    let (t, c) = (Instant::now(), process_cpu_seconds());
    let g = pool.install(|| gradient::batch_gradient(&ev, first, &loss, true));
    let gradient_s = t.elapsed().as_secs_f64();
    let gradient_cpu_s = process_cpu_seconds() - c;
    let entries = g.entries.len();
    drop((g, ev));

    // End to end: every full batch through Trainer::train_batch.
    let (t, c) = (Instant::now(), process_cpu_seconds());
    let mut done = 0usize;
    let mut touched = 0usize;
    let mut batches = 0usize;
    for b in records.chunks(batch).filter(|b| b.len() == batch) {
        let (_, n) = trainer.train_batch(b);
        touched += n;
        done += b.len();
        batches += 1;
    }
    let end_to_end_s = t.elapsed().as_secs_f64();
    let end_to_end_cpu_s = process_cpu_seconds() - c;
    drop(trainer);
    let _ = std::fs::remove_dir_all(&run_dir);
    Ok(Figures {
        threads,
        gradient_pos_s: first.len() as f64 / gradient_s,
        gradient_s,
        gradient_cpu_s,
        end_to_end_pos_s: done as f64 / end_to_end_s,
        end_to_end_s,
        end_to_end_cpu_s,
        entries,
        touched_per_batch: touched as f64 / batches.max(1) as f64,
    })
}

pub fn run(shard: Option<PathBuf>, batch: usize, batches: usize, json: bool) -> CommandResult {
    if batch == 0 || batches == 0 {
        return Err("--batch and --batches must be at least 1".into());
    }
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let dir = std::env::temp_dir().join(format!("keima-bench-learn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let need = batch * batches;
    let shard = match shard {
        Some(p) => p,
        None => {
            let p = dir.join("bench.psv.zst");
            eprintln!("generating {need} teacher positions (material-only self-play, 1,000 nodes a move)...");
            generate_shard(&p, need, cores)?;
            p
        }
    };
    let records = read_records(&shard, need)?;
    if records.len() < need {
        return Err(format!(
            "{}: {} records, the bench needs --batch × --batches = {need}: give a larger shard or fewer batches",
            shard.display(),
            records.len()
        ));
    }
    let mut rows = Vec::new();
    let mut thread_counts = vec![1];
    if cores > 1 {
        thread_counts.push(cores);
    }
    for &threads in &thread_counts {
        let f = measure(&shard, &records, batch, threads, &dir);
        let f = match f {
            Ok(f) => f,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        rows.push(f);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let (hwm, _) = memory_status();
    for f in &rows {
        if json {
            println!(
                "{}",
                serde_json::json!({
                    "bench": "learn", "threads": f.threads, "batch": batch, "batches": batches,
                    "shard": shard.display().to_string(),
                    "gradient_positions_per_s": f.gradient_pos_s, "gradient_seconds": f.gradient_s, "gradient_cpu_seconds": f.gradient_cpu_s,
                    "gradient_entries": f.entries,
                    "end_to_end_positions_per_s": f.end_to_end_pos_s, "end_to_end_seconds": f.end_to_end_s, "end_to_end_cpu_seconds": f.end_to_end_cpu_s,
                    "weights_touched_per_batch": f.touched_per_batch,
                    "peak_rss_bytes": hwm,
                })
            );
        } else {
            println!(
                "threads {:>2}  gradient {:>7.0} pos/s ({:.2} s wall, {:.2} s CPU, {} entries)  \
                 end-to-end {:>7.0} pos/s ({} × {batch} in {:.2} s wall, {:.2} s CPU, {:.0} weights a batch)",
                f.threads,
                f.gradient_pos_s,
                f.gradient_s,
                f.gradient_cpu_s,
                f.entries,
                f.end_to_end_pos_s,
                batches,
                f.end_to_end_s,
                f.end_to_end_cpu_s,
                f.touched_per_batch
            );
        }
    }
    if !json {
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "(CPU seconds below wall seconds × threads mean the machine was shared; load average {})",
            load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
        );
        match hwm {
            Some(b) => println!("peak memory (VmHWM) {:.2} GB with full KPPT tables", b as f64 / 1e9),
            None => println!("peak memory: /proc/self/status not available"),
        }
    }
    Ok(ExitCode::SUCCESS)
}
