//! `keima bench coordinator`: the coordinator's merge capacity under load from many
//! concurrent simulated workers replaying a recorded real gradient, and the bytes on the
//! wire per training position and per weight sync. Everything runs on 127.0.0.1.

use super::CommandResult;
use engine_core::eval::Evaluator;
use engine_core::learn::factors::Factorization;
use engine_core::learn::gradient::{LossConfig, batch_gradient};
use engine_core::teacher::gensfen::{
    GensfenConfig, SearchLimit, SelfPlayGames, TeacherSearch, Worker, run_selfplay,
};
use engine_core::teacher::{ShardReader, ShardSettings, ShardWriter};
use keima_coordinator::TrainConfig;
use keima_coordinator::config::{StalePolicy, TeacherSection};
use keima_coordinator::core::Core;
use keima_coordinator::run::{RunOptions, run as run_coordinator};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn run(workers: usize, pushes: u64, positions: usize, factored: bool, json: bool) -> CommandResult {
    let dir = std::env::temp_dir().join(format!("keima-bench-coordinator-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = bench(&dir, workers, pushes, positions, factored, json);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn bench(
    dir: &std::path::Path,
    workers: usize,
    pushes: u64,
    positions: usize,
    factored: bool,
    json: bool,
) -> CommandResult {
    // Real teacher positions (self-play, material evaluation) and their real gradient.
    let ev = Arc::new(Evaluator::material_only());
    let cfg = GensfenConfig::selfplay(
        TeacherSearch { limit: SearchLimit::Nodes(300), ..TeacherSearch::default() },
        SelfPlayGames { random_moves: 8, ..SelfPlayGames::default() },
        11,
    );
    let mut searchers = vec![Worker::new(ev.clone(), 16)];
    let mut records = Vec::new();
    let mut games = 0;
    while records.len() < positions.max(pushes as usize) {
        let (batch, _) = run_selfplay(
            &mut searchers,
            &GensfenConfig { seed: cfg.seed + games, ..cfg.clone() },
            &[],
            4,
            Vec::new(),
            |_| {},
        )
        .map_err(|e| e.to_string())?;
        records.extend(batch);
        games += 4;
    }
    let shard = dir.join("data.psv.zst");
    let mut w = ShardWriter::create(&shard, ShardSettings::default()).map_err(|e| e.to_string())?;
    for r in &records[..pushes as usize] {
        w.write(r).map_err(|e| e.to_string())?;
    }
    w.finish().map_err(|e| e.to_string())?;
    let teacher: Vec<_> = ShardReader::open(&shard)
        .map_err(|e| e.to_string())?
        .take(positions.min(pushes as usize))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let mut teacher_all = teacher;
    let extra: Vec<_> = records[pushes as usize..]
        .iter()
        .filter_map(|p| {
            p.validate().ok().map(|(pos, mv)| engine_core::teacher::TeacherRecord {
                index: 0,
                psv: *p,
                pos,
                mv,
            })
        })
        .collect();
    teacher_all.extend(extra);
    teacher_all.truncate(positions);
    let grad = batch_gradient(&ev, &teacher_all, &LossConfig::default(), true);
    // The coordinator: one shard per push, checkpoints as in a real run.
    let mut tc = TrainConfig { run_dir: dir.join("run"), ..TrainConfig::default() };
    tc.teacher =
        Some(TeacherSection { paths: vec![shard.to_string_lossy().to_string()], records_per_shard: 1 });
    tc.coordinator.listen = "127.0.0.1:0".into();
    tc.coordinator.metrics_listen = String::new();
    tc.coordinator.export = false;
    tc.coordinator.keep_teacher_records = false;
    if factored {
        // Every merge then also recomputes each raw feature of every changed factor.
        tc.learn.init.factors = Factorization { mirror: true, kp: true, pp: true };
    }
    // As a large run would: checkpoints are rare, the journal covers the merges in between.
    tc.coordinator.checkpoint_every = 100;
    tc.coordinator.max_staleness = u64::MAX / 2;
    tc.coordinator.stale_policy = StalePolicy::Downweight;
    let run_dir = tc.run_dir.clone();
    let core = Core::create(tc)?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let coordinator = std::thread::spawn(move || {
        run_coordinator(
            core,
            RunOptions { worker_exe: exe, local_workers: 0, worker_threads: 1, progress: Box::new(|_| {}) },
        )
    });
    let url_file = run_dir.join("coordinator.url");
    let t = Instant::now();
    while !url_file.exists() {
        if t.elapsed() > Duration::from_secs(60) {
            return Err("the coordinator did not start within 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = std::fs::read_to_string(&url_file).map_err(|e| e.to_string())?;
    let token = std::fs::read_to_string(run_dir.join("token")).map_err(|e| e.to_string())?;
    let rep = keima_worker::simulate::run_load(&url, &token, workers, &grad.entries, positions as u64)?;
    let summary = coordinator.join().map_err(|_| "coordinator thread panicked")??;
    let s = &summary.status;
    let pushes_per_s = rep.merged as f64 / rep.seconds;
    let entries_per_s = s.gradient_entries_merged as f64 / rep.seconds;
    let fig = serde_json::json!({
        "bench": "coordinator",
        "workers": workers,
        "pushes": rep.pushes,
        "merged": rep.merged,
        "duplicates": rep.duplicates,
        "seconds": rep.seconds,
        "pushes_per_s": pushes_per_s,
        "gradient_entries_per_push": rep.entries_per_push,
        "gradient_entries_per_s": entries_per_s,
        "positions_per_push": positions,
        "positions_per_s": pushes_per_s * positions as f64,
        "push_latency_p50_ms": rep.percentile(0.5),
        "push_latency_p99_ms": rep.percentile(0.99),
        "bytes_per_push": rep.bytes_per_push,
        "bytes_per_position": rep.bytes_per_push as f64 / positions as f64,
        "full_sync_bytes": rep.full_sync_bytes,
        "full_sync_entries": rep.full_sync_entries,
        "delta_sync_bytes": rep.delta_sync_bytes,
        "delta_sync_versions": rep.delta_versions,
        "weights_version": s.weights_version,
    });
    if json {
        println!("{fig}");
    } else {
        println!(
            "{workers} simulated workers, {} pushes of {} entries ({} positions each) in {:.1} s",
            rep.pushes, rep.entries_per_push, positions, rep.seconds
        );
        println!(
            "merge capacity   {:.1} pushes/s, {:.2} M gradient entries/s, {:.0} positions/s",
            pushes_per_s,
            entries_per_s / 1e6,
            pushes_per_s * positions as f64
        );
        println!("push latency     p50 {:.1} ms, p99 {:.1} ms", rep.percentile(0.5), rep.percentile(0.99));
        println!(
            "wire             {} bytes per push = {:.0} bytes per position; weight sync: full {} bytes ({} entries), \
             delta over {} versions {} bytes",
            rep.bytes_per_push,
            rep.bytes_per_push as f64 / positions as f64,
            rep.full_sync_bytes,
            rep.full_sync_entries,
            rep.delta_versions,
            rep.delta_sync_bytes
        );
    }
    if rep.merged + rep.duplicates != pushes || s.weights_version != rep.merged {
        return Err(format!(
            "inconsistent: {} merged + {} duplicates for {pushes} shards, version {}",
            rep.merged, rep.duplicates, s.weights_version
        ));
    }
    Ok(ExitCode::SUCCESS)
}
