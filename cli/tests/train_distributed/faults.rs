//! Killed workers and coordinators, and injected aborts: nothing lost, nothing merged twice.

use super::*;

fn records_config(d: &Path, run: &Path, port: u16, lease_seconds: u32) -> PathBuf {
    let cfg = d.join(format!("records-{port}.toml"));
    let records = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/records/pro");
    std::fs::write(
        &cfg,
        format!(
            "run_dir = {run:?}\n[records]\npaths = [{records:?}]\nfiles_per_shard = 3\nlimit = {{ nodes = 1000 }}\n\
             unknown_result = \"draw\"\n[coordinator]\nlisten = \"127.0.0.1:{port}\"\nmetrics_listen = \"127.0.0.1:0\"\n\
             lease_seconds = {lease_seconds}\nheartbeat_ms = 300\ncheckpoint_every = 2\nexport = false\n\
             [local_workers]\ncount = 0\n"
        ),
    )
    .unwrap();
    cfg
}

/// Records kept in the run's teacher shards (one file per merged shard), from the manifests.
fn kept_records(run: &Path) -> (u64, usize) {
    let mut n = 0;
    let mut files = 0;
    for e in std::fs::read_dir(run.join("teacher")).unwrap() {
        let p = e.unwrap().path();
        if p.to_string_lossy().ends_with(".manifest.json") {
            let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            n += m["records"].as_u64().unwrap();
            files += 1;
        }
    }
    (n, files)
}

#[test]
fn killed_worker_and_killed_coordinator_lose_and_repeat_nothing() {
    let tmp = tmp("faults");
    let d = tmp.path();
    // Reference: no faults.
    let ref_run = d.join("ref");
    let coordinator = spawn(&["train", "--config", s(&records_config(d, &ref_run, 0, 30)), "--quiet"]);
    wait_for("coordinator", Duration::from_secs(60), || ref_run.join("coordinator.url").exists());
    let _w = worker(&ref_run, "ref");
    let (_, ref_state) = finish(coordinator, &ref_run);
    let shards = ref_state["queue"]["shards"].as_array().unwrap().len() as u64;
    let ref_positions = ref_state["totals"]["positions_merged"].as_u64().unwrap();
    assert!(shards >= 3 && ref_positions > 100, "{shards} shards, {ref_positions} positions");
    assert_eq!(ref_state["weights_version"].as_u64().unwrap(), shards);

    // Fault 1: kill -9 a worker in the middle of its shard; another worker finishes.
    let run = d.join("worker_killed");
    let cfg = records_config(d, &run, 0, 2);
    let coordinator = spawn(&["train", "--config", s(&cfg), "--quiet"]);
    wait_for("coordinator", Duration::from_secs(60), || run.join("coordinator.url").exists());
    let mut victim = worker(&run, "victim");
    wait_for("a lease", Duration::from_secs(60), || status(&run)["shards_leased"].as_u64().unwrap() >= 1);
    victim.0.kill().unwrap(); // SIGKILL, in the middle of its shard
    let _ = victim.0.wait();
    let _survivor = worker(&run, "survivor");
    let (out, state) = finish(coordinator, &run);
    assert!(out.starts_with("done:"), "{out}");
    assert_eq!(state["weights_version"].as_u64().unwrap(), shards, "each shard merged once: {out}");
    assert_eq!(state["totals"]["positions_merged"].as_u64().unwrap(), ref_positions);
    assert_eq!(kept_records(&run), kept_records(&ref_run));
    let leases: u64 =
        state["queue"]["shards"].as_array().unwrap().iter().map(|s| s["leases"].as_u64().unwrap()).sum();
    assert_eq!(leases, shards + 1, "exactly the killed worker's shard was leased again");

    // Fault 2: kill -9 the coordinator mid-run, then resume on the same port; the workers
    // reconnect and register again.
    let run = d.join("coordinator_killed");
    let cfg = records_config(d, &run, free_port(), 30);
    let mut coordinator = spawn(&["train", "--config", s(&cfg), "--quiet"]);
    wait_for("coordinator", Duration::from_secs(60), || run.join("coordinator.url").exists());
    let _w1 = worker(&run, "one");
    let _w2 = worker(&run, "two");
    wait_for("two merges", Duration::from_secs(120), || {
        status(&run)["weights_version"].as_u64().unwrap() >= 2
    });
    let seen = status(&run)["weights_version"].as_u64().unwrap();
    coordinator.0.kill().unwrap();
    let _ = coordinator.0.wait();
    drop(coordinator);
    let resumed = spawn(&["train", "--resume", s(&run), "--quiet"]);
    let (out, state) = finish(resumed, &run);
    assert!(out.starts_with("done:"), "{out}");
    // Every shard merged exactly once (the version counts merges), nothing acknowledged
    // before the kill was lost, and the positions reconcile with the fault-free run.
    assert_eq!(state["weights_version"].as_u64().unwrap(), shards, "{out}");
    assert!(state["weights_version"].as_u64().unwrap() >= seen);
    assert_eq!(state["totals"]["merges"].as_u64().unwrap(), shards);
    assert_eq!(state["totals"]["positions_merged"].as_u64().unwrap(), ref_positions);
    assert_eq!(kept_records(&run), kept_records(&ref_run));
}

/// A deterministic self-play run (one shard leased at a time, one thread per worker, so the
/// result does not depend on who computes what or how often).
fn deterministic_config(d: &Path, run: &Path, port: u16) -> PathBuf {
    let cfg = d.join(format!("det-{port}.toml"));
    std::fs::write(
        &cfg,
        format!(
            "run_dir = {run:?}\ndeterministic = true\nseed = 7\n{LEARN_KEYS}\n[selfplay]\nshards = 10\n\
             games_per_shard = 2\nlimit = {{ nodes = 300 }}\nrandom_moves = 8\nmax_ply = 80\n[coordinator]\n\
             listen = \"127.0.0.1:{port}\"\nmetrics_listen = \"\"\nlease_seconds = 3\nheartbeat_ms = 300\n\
             checkpoint_every = 2\nkeep_checkpoints = 2\nkeep_teacher_records = true\nexport = false\n\
             [local_workers]\ncount = 0\n"
        ),
    )
    .unwrap();
    cfg
}

fn worker_with_threads(run: &Path, name: &str, threads: &str) -> Proc {
    spawn_worker(run, name, &["--threads", threads, "--give-up-after", "120"])
}

/// Waits for a coordinator process to stop on an injected fault and checks that it did.
fn expect_abort(mut p: Proc, point: &str) {
    let (ok, out, err) = wait_exit(&mut p, Duration::from_secs(240));
    assert!(!ok, "the coordinator finished instead of aborting at {point}: {out}\n{err}");
    assert!(err.contains(&format!("KEIMA_FAULT: aborting at {point}")), "{point}: {err}");
}

/// The counters a merge changes, from a checkpoint's state.json, plus the shards done.
fn merge_counters(state: &serde_json::Value) -> serde_json::Value {
    let t = &state["totals"];
    let done = state["queue"]["shards"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["state"].get("done").is_some())
        .count();
    serde_json::json!({
        "weights_version": state["weights_version"],
        "shards_done": done,
        "merges": t["merges"],
        "positions_merged": t["positions_merged"],
        "positions_used": t["positions_used"],
        "gradient_entries_merged": t["gradient_entries_merged"],
        "loss_sum": t["loss_sum"],
        "staleness_sum": t["staleness_sum"],
        "teacher_records_kept": t["teacher_records_kept"],
    })
}

#[test]
fn deterministic_run_killed_at_every_step_equals_the_run_without_faults() {
    let tmp = tmp("detkill");
    let d = tmp.path();
    // Reference: no faults.
    let ref_run = d.join("ref");
    let coordinator = spawn(&["train", "--config", s(&deterministic_config(d, &ref_run, 0)), "--quiet"]);
    wait_for("coordinator", Duration::from_secs(60), || ref_run.join("coordinator.url").exists());
    let _w = worker_with_threads(&ref_run, "ref", "1");
    let (_, ref_state) = finish(coordinator, &ref_run);
    let expected = merge_counters(&ref_state);
    assert_eq!(expected["shards_done"], 10, "{expected}");
    assert!(expected["teacher_records_kept"].as_u64().unwrap() > 100, "{expected}");

    let run = d.join("faults");
    let cfg = deterministic_config(d, &run, free_port());
    let resume =
        |fault: &str| spawn_env(&["train", "--resume", s(&run), "--quiet"], &[("KEIMA_FAULT", fault)]);
    // 1. Abort while writing the checkpoint of version 2 (ckpt-2.tmp is left behind).
    let c = spawn_env(&["train", "--config", s(&cfg), "--quiet"], &[("KEIMA_FAULT", "checkpoint:weights@2")]);
    wait_for("coordinator", Duration::from_secs(60), || run.join("coordinator.url").exists());
    let w1 = worker_with_threads(&run, "one", "1");
    let w2 = worker_with_threads(&run, "two", "1");
    expect_abort(c, "checkpoint:weights");
    // 2. Abort after ckpt-4 is complete and older ones are pruned, before the journal is.
    expect_abort(resume("checkpoint:pruned@4"), "checkpoint:pruned");
    // 3. Workers killed (maybe mid-shard); the resumed coordinator, stopped by SIGTERM
    //    before any merge, rewrites ckpt-4 and aborts with the old one moved aside.
    drop((w1, w2));
    let c = resume("checkpoint:aside");
    wait_for("resumed coordinator", Duration::from_secs(60), || try_status(&run).is_some());
    // The SIGTERM handler is installed right after the server starts answering.
    std::thread::sleep(Duration::from_millis(300));
    assert!(Command::new("kill").args(["-TERM", &c.0.id().to_string()]).status().unwrap().success());
    expect_abort(c, "checkpoint:aside");
    // 4. Abort after merge 6 is journaled, before it is applied or acknowledged.
    let c = resume("merge:journaled@6");
    wait_for("resumed coordinator", Duration::from_secs(60), || try_status(&run).is_some());
    let _w3 = worker_with_threads(&run, "three", "1");
    let _w4 = worker_with_threads(&run, "four", "1");
    expect_abort(c, "merge:journaled");
    // 5. kill -9 at whatever moment version 7 is first seen.
    let mut c = resume("");
    wait_for("version 7", Duration::from_secs(120), || {
        try_status(&run).is_some_and(|st| st["weights_version"].as_u64().unwrap() >= 7)
            || c.0.try_wait().unwrap().is_some()
    });
    let finished_already = c.0.try_wait().unwrap().is_some();
    let c = if finished_already {
        c
    } else {
        c.0.kill().unwrap();
        let _ = c.0.wait();
        drop(c);
        // 6. The rest, without faults.
        resume("")
    };
    let (out, state) = finish(c, &run);
    assert!(out.starts_with("done:"), "{out}");
    assert_eq!(merge_counters(&state), expected);
    assert_eq!(kept_records(&run), kept_records(&ref_run));
    same_weights(&run.join("weights.kw"), &ref_run.join("weights.kw"));
    let left: Vec<_> = std::fs::read_dir(run.join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.chars().skip(5).all(|c| c.is_ascii_digit()))
        .collect();
    assert!(left.is_empty(), "unfinished checkpoints left: {left:?}");
}
