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
//!   ignored and the run goes on;
//! - TLS with local workers, and `keima status`;
//! - a schedule of two generations with newbob: the barrier, each generation's limit and
//!   η, newbob's decision in `metrics.jsonl`;
//! - `[elo]`: the last checkpoint matched by match shards, its Elo line in `metrics.jsonl`.
//!
//! One test binary: the shared process helpers are here, the tests by concern in the
//! modules.

mod budget;
mod elo;
mod faults;
mod generations;
mod tls;
mod wire;

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

fn finish(mut coordinator: Proc, run: &Path) -> (String, serde_json::Value) {
    let (ok, out, err) = wait_exit(&mut coordinator, Duration::from_secs(240));
    assert!(ok, "coordinator failed: {out}\n{err}");
    (out, last_state(run))
}

/// The state of a run's last checkpoint.
fn last_state(run: &Path) -> serde_json::Value {
    let ck = std::fs::read_dir(run.join("checkpoints"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .max()
        .unwrap();
    serde_json::from_str(&std::fs::read_to_string(ck.join("state.json")).unwrap()).unwrap()
}
