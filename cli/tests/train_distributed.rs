//! Distributed training with real processes on 127.0.0.1: `keima train` (coordinator) and
//! `keima worker`s.
//! - deterministic mode equals a single-process `keima learn` over the same shards, bit
//!   for bit;
//! - kill -9 of a worker mid-shard: the shard is re-leased and the counts reconcile with a
//!   run without faults; kill -9 of the coordinator, then `--resume`: nothing acknowledged
//!   is lost, nothing is merged twice, the run completes;
//! - a deterministic run whose coordinator is killed (kill -9, and aborts injected at the
//!   steps of checkpoints and merges) and whose workers are killed ends byte-identical to
//!   a run without faults, with every merge counter equal;
//! - bad pushes (wrong token, wrong dims, NaN, oversized, duplicate) are rejected or
//!   ignored and the run goes on.

use keima_proto::sparse;
use keima_proto::v1::coordinator_client::CoordinatorClient;
use keima_proto::v1::{self, push_chunk::Part};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const KEIMA: &str = env!("CARGO_BIN_EXE_keima");

/// A child process killed when dropped (tests never leave processes behind).
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fresh directory, removed when the returned guard drops. Declare it before any `Proc`
/// using it, so the processes are killed (dropped) before the directory goes.
fn tmp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("train_{name}_"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn run_ok(args: &[&str]) -> String {
    let out = Command::new(KEIMA).args(args).env("RUST_LOG", "warn").output().expect("run keima");
    assert!(
        out.status.success(),
        "keima {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn spawn(args: &[&str]) -> Proc {
    spawn_env(args, &[])
}

fn spawn_env(args: &[&str], env: &[(&str, &str)]) -> Proc {
    Proc(
        Command::new(KEIMA)
            .args(args)
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn keima"),
    )
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_exit(p: &mut Proc, timeout: Duration) -> (bool, String, String) {
    let t = Instant::now();
    loop {
        if let Some(st) = p.0.try_wait().unwrap() {
            let mut out = String::new();
            let mut err = String::new();
            use std::io::Read;
            p.0.stdout.take().map(|mut o| o.read_to_string(&mut out));
            p.0.stderr.take().map(|mut e| e.read_to_string(&mut err));
            return (st.success(), out, err);
        }
        assert!(t.elapsed() < timeout, "process did not finish in {timeout:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn status(run: &Path) -> serde_json::Value {
    let url = std::fs::read_to_string(run.join("coordinator.url")).unwrap();
    let out = run_ok(&["status", &url, "--token-file", s(&run.join("token")), "--json"]);
    serde_json::from_str(&out).unwrap()
}

/// The coordinator's counters, or `None` while it does not answer.
fn try_status(run: &Path) -> Option<serde_json::Value> {
    let url = std::fs::read_to_string(run.join("coordinator.url")).ok()?;
    let out = Command::new(KEIMA)
        .args(["status", &url, "--token-file", s(&run.join("token")), "--json"])
        .env("RUST_LOG", "off")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Small teacher data made by self-play. Material-only play at a few hundred nodes has no
/// plan, so from a quiet position both sides often shuffle into a repetition draw with
/// every score 0, which trains nothing; 16 random opening moves unbalance the material so
/// that the games have scores and results whatever the search does.
fn teacher_data(dir: &Path, games: &str) -> PathBuf {
    let p = dir.join("data.psv.zst");
    run_ok(&[
        "gensfen",
        "--out",
        s(&p),
        "--games",
        games,
        "--nodes",
        "200",
        "--random-moves",
        "16",
        "--seed",
        "5",
    ]);
    p
}

const LEARN_KEYS: &str = "[adagrad]\neta = 3.0\neta_turn = 0.75\nepsilon = 1e-8\neta_decay = 1.0\n\
                          [loss]\nlambda = 0.4\neval_limit = 2500\nskip_draws = false\n";

/// Compares two weight files: counters in the header and every weight/accumulator byte.
fn same_weights(a: &Path, b: &Path) {
    use std::io::Read;
    let (mut fa, mut fb) = (std::fs::File::open(a).unwrap(), std::fs::File::open(b).unwrap());
    assert_eq!(fa.metadata().unwrap().len(), fb.metadata().unwrap().len());
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    let mut offset = 0u64;
    let mut nonzero = 0u64;
    loop {
        let na = fa.read(&mut ba).unwrap();
        let nb = fb.read(&mut bb[..na]).unwrap();
        assert_eq!(na, nb);
        if na == 0 {
            break;
        }
        if offset == 0 {
            // Header: counters at 64 (updates) and 72 (examples) must agree; the data
            // checksum at 88 may be absent in one of them.
            assert_eq!(ba[64..80], bb[64..80], "update/example counters differ");
            ba[..4096].fill(0);
            bb[..4096].fill(0);
        }
        if ba[..na] != bb[..na] {
            let i = (0..na).find(|&i| ba[i] != bb[i]).unwrap();
            panic!("weights differ at byte {}", offset + i as u64);
        }
        nonzero += ba[..na].iter().filter(|&&x| x != 0).count() as u64;
        offset += na as u64;
    }
    assert!(nonzero > 1000, "the runs changed almost nothing ({nonzero} non-zero bytes)");
}

#[test]
fn deterministic_two_workers_equal_single_process_learn() {
    two_workers_equal_single_process_learn(LEARN_KEYS);
}

/// The same with dimension reduction: the coordinator's factored merge (parameter
/// gradients from the workers' raw ones, then the refresh of every dependent feature)
/// leaves the bytes `keima learn` leaves.
#[test]
fn factored_two_workers_equal_single_process_learn() {
    two_workers_equal_single_process_learn(&format!(
        "{LEARN_KEYS}[init]\nfactors = {{ mirror = true, kp = true }}\n"
    ));
}

fn two_workers_equal_single_process_learn(learn_keys: &str) {
    let tmp = tmp("det");
    let d = tmp.path();
    let data = teacher_data(d, "4");
    let run = d.join("run");
    let cfg = d.join("train.toml");
    std::fs::write(
        &cfg,
        format!(
            "run_dir = {run:?}\ndeterministic = true\n{learn_keys}\n[teacher]\npaths = [{data:?}]\n\
             records_per_shard = 64\n[coordinator]\nlisten = \"127.0.0.1:0\"\nmetrics_listen = \"\"\n\
             checkpoint_every = 3\nexport = false\nkeep_teacher_records = false\n[local_workers]\ncount = 2\nthreads = 1\n"
        ),
    )
    .unwrap();
    let out = run_ok(&["train", "--config", s(&cfg), "--quiet"]);
    assert!(out.starts_with("done:"), "{out}");
    let learn = d.join("learn");
    let lcfg = d.join("learn.toml");
    std::fs::write(
        &lcfg,
        format!(
            "shards = [{data:?}]\nout_dir = {learn:?}\nbatch_size = 64\nshuffle_buffer = 1\nepochs = 1\n\
             eval_every = 0\ncheckpoint_every = 0\nkeep_checkpoints = 1\ndeterministic = true\nthreads = 1\n{learn_keys}"
        ),
    )
    .unwrap();
    run_ok(&["learn", "--config", s(&lcfg), "--quiet"]);
    same_weights(&run.join("weights.kw"), &learn.join("weights.kw"));
}

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

fn worker(run: &Path, name: &str) -> Proc {
    spawn_worker(run, name, &["--give-up-after", "60"])
}

/// `keima worker` connected to the run's coordinator, with `extra` arguments.
fn spawn_worker(run: &Path, name: &str, extra: &[&str]) -> Proc {
    let url = std::fs::read_to_string(run.join("coordinator.url")).unwrap();
    let token = run.join("token");
    let mut args = vec!["worker", "--coordinator", &url, "--token-file", s(&token), "--name", name];
    args.extend_from_slice(extra);
    spawn(&args)
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

fn finish(mut coordinator: Proc, run: &Path) -> (String, serde_json::Value) {
    let (ok, out, err) = wait_exit(&mut coordinator, Duration::from_secs(240));
    assert!(ok, "coordinator failed: {out}\n{err}");
    // The final state, from the last checkpoint.
    let ck = std::fs::read_dir(run.join("checkpoints"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .max()
        .unwrap();
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ck.join("state.json")).unwrap()).unwrap();
    (out, state)
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

type Client = CoordinatorClient<tonic::transport::Channel>;

fn request<T>(msg: T, token: &str) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.metadata_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    r
}

fn push_of(
    worker_id: &str,
    layout: v1::Layout,
    shard: u64,
    version: u64,
    gradient_blob: Vec<u8>,
    entries: u64,
    raw_for_sum: &[u8],
) -> Vec<v1::PushChunk> {
    let mut payload = sparse::Fnv64::default();
    payload.update(raw_for_sum);
    let header = v1::PushHeader {
        protocol: keima_proto::PROTOCOL_VERSION,
        worker_id: worker_id.into(),
        shard_id: shard,
        attempt: 1,
        weights_version: version,
        layout: Some(layout),
        gradient_entries: entries,
        teacher_records: 0,
    };
    let stats = v1::ShardStats { positions: 3, used: 3, loss_sum: 2.0, ..Default::default() };
    let checksum = keima_proto::seal::push_checksum(payload, &header, &stats);
    vec![
        v1::PushChunk { part: Some(Part::Header(header)) },
        v1::PushChunk { part: Some(Part::Gradient(gradient_blob)) },
        v1::PushChunk { part: Some(Part::Trailer(v1::PushTrailer { stats: Some(stats), checksum })) },
    ]
}

#[test]
fn bad_pushes_are_rejected_and_the_run_goes_on() {
    let tmp = tmp("bad");
    let d = tmp.path();
    let data = teacher_data(d, "2");
    let run = d.join("run");
    let cfg = d.join("train.toml");
    std::fs::write(
        &cfg,
        format!(
            "run_dir = {run:?}\n[teacher]\npaths = [{data:?}]\nrecords_per_shard = 40\n[coordinator]\n\
             listen = \"127.0.0.1:0\"\nmetrics_listen = \"127.0.0.1:0\"\nexport = false\n[local_workers]\ncount = 0\n"
        ),
    )
    .unwrap();
    let coordinator = spawn(&["train", "--config", s(&cfg), "--quiet"]);
    wait_for("coordinator", Duration::from_secs(60), || run.join("coordinator.url").exists());
    let url = std::fs::read_to_string(run.join("coordinator.url")).unwrap();
    let token = std::fs::read_to_string(run.join("token")).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut c: Client = Client::connect(url.clone()).await.unwrap();
        let reg = v1::RegisterRequest {
            protocol: keima_proto::PROTOCOL_VERSION,
            worker_name: "probe".into(),
            threads: 1,
            version: "test".into(),
        };
        let e = c.register(request(reg.clone(), "wrong-token")).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");
        assert!(c.register(tonic::Request::new(reg.clone())).await.is_err(), "no token at all");
        let r = c.register(request(reg, &token)).await.unwrap().into_inner();
        let layout = r.layout.unwrap();
        let id = r.worker_id;
        let lease = c
            .lease(request(
                v1::LeaseRequest { protocol: keima_proto::PROTOCOL_VERSION, worker_id: id.clone() },
                &token,
            ))
            .await
            .unwrap()
            .into_inner()
            .lease
            .unwrap();
        let shard = lease.shard_id;
        let good: Vec<(u32, [f32; 2])> = vec![(5, [0.5, -0.25]), (100_000, [-1.0, 0.0])];
        let raw = sparse::encode_gradient(&good);
        let push = |chunks: Vec<v1::PushChunk>| {
            let mut c = c.clone();
            let token = token.clone();
            async move { c.push_gradient(request(tokio_stream::iter(chunks), &token)).await }
        };
        // NaN value.
        let mut nan = raw.clone();
        nan[1..5].copy_from_slice(&f32::NAN.to_le_bytes());
        let e = push(push_of(&id, layout, shard, 0, sparse::compress(&nan), 2, &nan)).await.unwrap_err();
        assert!(e.message().contains("NaN"), "{e:?}");
        // Wrong dimensions.
        let wrong = v1::Layout { features: layout.features - 1, ..layout };
        let e = push(push_of(&id, wrong, shard, 0, sparse::compress(&raw), 2, &raw)).await.unwrap_err();
        assert!(e.message().contains("feature count"), "{e:?}");
        // Index past the layout.
        let far = sparse::encode_gradient(&[(layout.features as u32, [1.0, 1.0])]);
        let e = push(push_of(&id, layout, shard, 0, sparse::compress(&far), 1, &far)).await.unwrap_err();
        assert!(e.message().contains("outside"), "{e:?}");
        // Oversized message (past the 8 MiB gRPC limit).
        let huge: Vec<u8> = (0..(9u32 << 20)).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let e = push(push_of(&id, layout, shard, 0, huge, 2, &raw)).await.unwrap_err();
        assert!(matches!(e.code(), tonic::Code::OutOfRange | tonic::Code::ResourceExhausted), "{e:?}");
        // Corrupted upload (checksum).
        let e = push(push_of(&id, layout, shard, 0, sparse::compress(&raw), 2, b"other")).await.unwrap_err();
        assert!(e.message().contains("checksum"), "{e:?}");
        // A good push merges; the same push again is a duplicate.
        let ok =
            push(push_of(&id, layout, shard, 0, sparse::compress(&raw), 2, &raw)).await.unwrap().into_inner();
        assert_eq!(ok.outcome, v1::push_reply::Outcome::Merged as i32);
        assert_eq!(ok.weights_version, 1);
        let dup =
            push(push_of(&id, layout, shard, 0, sparse::compress(&raw), 2, &raw)).await.unwrap().into_inner();
        assert_eq!(dup.outcome, v1::push_reply::Outcome::Duplicate as i32);
        assert_eq!(dup.weights_version, 1);
    });
    let st = status(&run);
    assert_eq!(st["rejected_pushes"].as_u64().unwrap(), 5, "{st}");
    assert_eq!(st["duplicate_pushes"].as_u64().unwrap(), 1);
    assert_eq!(st["weights_version"].as_u64().unwrap(), 1);
    // The metrics endpoint says the same.
    let murl = std::fs::read_to_string(run.join("metrics.url")).unwrap();
    let addr = murl.trim_start_matches("http://").trim_end_matches("/metrics");
    let mut sock = std::net::TcpStream::connect(addr).unwrap();
    use std::io::{Read, Write};
    sock.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut body = String::new();
    sock.read_to_string(&mut body).unwrap();
    assert!(body.contains("keima_pushes_rejected_total 5"), "{body}");
    assert!(body.contains("keima_pushes_duplicate_total 1"), "{body}");
    // A real worker finishes the rest of the run.
    let _w = worker(&run, "real");
    let (out, state) = finish(coordinator, &run);
    assert!(out.starts_with("done:"), "{out}");
    let shards = state["queue"]["shards"].as_array().unwrap().len() as u64;
    assert_eq!(state["weights_version"].as_u64().unwrap(), shards);
}

/// A CA and a server certificate for 127.0.0.1, made with the openssl command line.
fn certificates(d: &Path) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let openssl = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(d)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    if !openssl(&["version"]) {
        eprintln!("openssl is not installed: TLS test skipped");
        return None;
    }
    std::fs::write(d.join("ext.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n").unwrap();
    let steps: [&[&str]; 3] = [
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=keima test CA",
        ],
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ],
    ];
    for s in steps {
        assert!(openssl(s), "openssl {s:?} failed");
    }
    Some((d.join("ca.pem"), d.join("server.pem"), d.join("server.key")))
}

#[test]
fn tls_run_with_local_workers_and_status() {
    let tmp = tmp("tls");
    let d = tmp.path();
    let Some((ca, cert, key)) = certificates(d) else { return };
    let data = teacher_data(d, "2");
    let run = d.join("run");
    let cfg = d.join("train.toml");
    std::fs::write(
        &cfg,
        format!(
            "run_dir = {run:?}\n[teacher]\npaths = [{data:?}]\nrecords_per_shard = 60\n[coordinator]\n\
             listen = \"127.0.0.1:0\"\nmetrics_listen = \"\"\nexport = false\ntls_cert = {cert:?}\ntls_key = {key:?}\n\
             tls_ca = {ca:?}\n[local_workers]\ncount = 0\n"
        ),
    )
    .unwrap();
    let coordinator = spawn(&["train", "--config", s(&cfg), "--quiet"]);
    wait_for("coordinator", Duration::from_secs(60), || run.join("coordinator.url").exists());
    let url = std::fs::read_to_string(run.join("coordinator.url")).unwrap();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let token = run.join("token");
    // Without the CA the certificate is not trusted; with it, status and a worker work.
    let out = Command::new(KEIMA).args(["status", &url, "--token-file", s(&token)]).output().unwrap();
    assert!(!out.status.success(), "an untrusted certificate was accepted");
    let st = run_ok(&["status", &url, "--token-file", s(&token), "--tls-ca", s(&ca), "--json"]);
    assert!(st.contains("\"shards_total\""), "{st}");
    let _w = spawn(&[
        "worker",
        "--coordinator",
        &url,
        "--token-file",
        s(&token),
        "--tls-ca",
        s(&ca),
        "--give-up-after",
        "30",
    ]);
    let (out, state) = finish(coordinator, &run);
    assert!(out.starts_with("done:"), "{out}");
    let shards = state["queue"]["shards"].as_array().unwrap().len() as u64;
    assert_eq!(state["weights_version"].as_u64().unwrap(), shards);
}
