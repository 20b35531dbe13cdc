//! The coordinator against crashes at unlucky moments and against hostile or confused
//! workers, in-process (no network: `Service` methods are called directly). One test per
//! fault of issue 14; each checks the exact counters afterwards.
//!
//! A crash is simulated with an armed fault plan that makes the coordinator stop at a
//! given step (`fault.rs`); the test then drops the `Core` without a final checkpoint and
//! resumes from what is on disk, as `keima train --resume` would after a kill -9.

use engine_core::rules::Position;
use engine_core::teacher::PackedSfenValue;
use keima_coordinator::TrainConfig;
use keima_coordinator::checkpoint::{self, Totals};
use keima_coordinator::core::Core;
use keima_coordinator::fault::{FaultAction, FaultPlan, FaultPoint, Injected};
use keima_coordinator::service::Service;
use keima_proto::v1::coordinator_server::Coordinator;
use keima_proto::v1::{self, push_chunk::Part, push_reply::Outcome};
use std::path::Path;
use std::sync::Arc;
use support::{Captured, Work, chunks, lease, push, rt, tmp};
use tonic::{Code, Request, Status};

mod support;

/// Self-play shards (no input files needed: the pushes are made up by the test).
fn config(run_dir: &Path, shards: u64, keep_records: bool, checkpoint_every: u64) -> TrainConfig {
    TrainConfig::from_toml(&format!(
        "run_dir = {run_dir:?}\n[selfplay]\nshards = {shards}\ngames_per_shard = 2\nlimit = {{ nodes = 100 }}\n\
         [coordinator]\nlisten = \"127.0.0.1:0\"\nmetrics_listen = \"\"\ncheckpoint_every = {checkpoint_every}\n\
         keep_checkpoints = 2\nkeep_teacher_records = {keep_records}\nexport = false\n[local_workers]\ncount = 0\n"
    ))
    .unwrap()
}

/// `n` valid 40-byte teacher records.
fn records(n: u64) -> Vec<u8> {
    let pos = Position::startpos();
    (0..n).flat_map(|i| PackedSfenValue::new(&pos, None, i as i16, 0).unwrap().to_bytes()).collect()
}

fn work(shard: u64, keep_records: bool) -> Work {
    let positions = 10 + shard;
    let s = shard as u32;
    Work {
        gradient: vec![(5 + s, [0.5, -0.25]), (1000 + 7 * s, [-1.0, 0.125]), (200_000 + s, [0.75, 0.0])],
        // One record more than positions (a worker returns the invalid ones too).
        records: if keep_records { records(positions + 1) } else { Vec::new() },
        stats: v1::ShardStats {
            positions,
            used: positions - 2,
            loss_sum: 1.5 * (shard + 1) as f64,
            ..Default::default()
        },
        result: None,
    }
}

/// Leases the next shard as `worker` and pushes its work; returns the shard id.
async fn lease_and_push(
    svc: &Service,
    worker: &str,
    keep_records: bool,
) -> Result<(u64, v1::PushReply), Status> {
    let l = lease(&svc.core, worker);
    let version = svc.core.weights_version();
    let w = work(l.shard_id, keep_records);
    push(svc, chunks(&svc.core, worker, &l, version, &w)).await.map(|r| (l.shard_id, r))
}

/// The totals that `n` merges of shards `0..n` (pushed in order, none stale) must give.
fn expected_totals(n: u64, keep_records: bool) -> Totals {
    let mut t = Totals::default();
    for shard in 0..n {
        let w = work(shard, keep_records);
        t.merges += 1;
        t.positions_merged += w.stats.positions;
        t.positions_used += w.stats.used;
        t.gradient_entries_merged += w.gradient.len() as u64;
        t.loss_sum += w.stats.loss_sum;
        t.teacher_records_kept += (w.records.len() / 40) as u64;
    }
    t
}

/// The counters a merge changes (traffic counters such as bytes and rejected pushes are
/// not about merges).
fn merge_counters(t: &Totals) -> (u64, u64, u64, u64, u64, u64, u64) {
    (
        t.merges,
        t.positions_merged,
        t.positions_used,
        t.gradient_entries_merged,
        t.loss_sum.to_bits(),
        t.staleness_sum,
        t.teacher_records_kept,
    )
}

fn assert_state(core: &Core, merges: u64, keep_records: bool) {
    assert_eq!(core.weights_version(), merges, "weights version");
    assert_eq!(core.shard_counts().done, merges, "shards done");
    let t = core.totals();
    assert_eq!(merge_counters(&t), merge_counters(&expected_totals(merges, keep_records)), "{t:?}");
}

fn leftovers(run_dir: &Path) -> Vec<String> {
    std::fs::read_dir(checkpoint::root(run_dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") || n.ends_with(".old"))
        .collect()
}

fn resume(run_dir: &Path) -> Service {
    let (core, _) = Core::resume(run_dir, None).unwrap();
    Service { core: Arc::new(core) }
}

fn fail_at(core: &Core, point: FaultPoint, version: u64) {
    core.faults().arm(FaultPlan { point, version: Some(version), action: FaultAction::Fail });
}

/// Every crash point inside a checkpoint (all but the one in the merge path).
fn checkpoint_points() -> impl Iterator<Item = FaultPoint> {
    FaultPoint::ALL.into_iter().filter(|&p| p != FaultPoint::MergeJournaled)
}

/// Fault 1: a resumed coordinator rewrites the checkpoint of the version it has (the final
/// checkpoint after a resume with nothing new); a crash at any step of that rewrite must
/// leave every acknowledged merge recoverable. One run, crashed once at each step.
#[test]
fn fault1_crash_while_rewriting_a_checkpoint_loses_no_acknowledged_merge() {
    let rt = rt();
    let tmp = tmp("rewrite");
    let run = tmp.path().join("run");
    let svc = Service { core: Arc::new(Core::create(config(&run, 6, true, 2)).unwrap()) };
    let id = svc.core.register("a", 1);
    // Four acknowledged merges; checkpoints at 2 and 4.
    for _ in 0..4 {
        let (_, r) = rt.block_on(lease_and_push(&svc, &id, true)).unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
    }
    let mut svc = svc;
    for point in checkpoint_points() {
        drop(svc); // kill -9 (no final checkpoint)
        svc = resume(&run);
        assert_state(&svc.core, 4, true);
        assert_eq!(leftovers(&run), Vec::<String>::new(), "before {point}: repaired at start");
        // The resumed process has not written ckpt-4 itself, so it rewrites it.
        fail_at(&svc.core, point, 4);
        match svc.core.checkpoint() {
            Err(checkpoint::CheckpointError::Injected(Injected(p))) => assert_eq!(p, point),
            other => panic!("{point}: expected the injected crash, got {other:?}"),
        }
    }
    drop(svc);
    let svc = resume(&run);
    assert_state(&svc.core, 4, true);
    assert_eq!(leftovers(&run), Vec::<String>::new());
    // The run goes on to the end.
    let id = svc.core.register("b", 1);
    for _ in 4..6 {
        rt.block_on(lease_and_push(&svc, &id, true)).unwrap();
    }
    assert!(svc.core.finished());
    assert_state(&svc.core, 6, true);
}

/// Fault 2: a crash while writing a new checkpoint leaves `ckpt-N.tmp`; the next start
/// removes it and resumes from the previous checkpoint plus the journal. One run, crashed
/// once at each step of a new checkpoint (every second merge checkpoints).
#[test]
fn fault2_crash_while_writing_a_new_checkpoint_leaves_nothing_behind() {
    let rt = rt();
    let tmp = tmp("new");
    let run = tmp.path().join("run");
    let points = [
        FaultPoint::CheckpointWeightsCopied,
        FaultPoint::CheckpointStateWritten,
        FaultPoint::CheckpointRenamed,
        FaultPoint::CheckpointPruned,
        FaultPoint::CheckpointJournalPruned,
    ];
    let shards = 2 * points.len() as u64 + 1;
    let mut svc = Service { core: Arc::new(Core::create(config(&run, shards, false, 2)).unwrap()) };
    for (i, point) in points.into_iter().enumerate() {
        let version = 2 * (i as u64 + 1);
        let id = svc.core.register("a", 1);
        fail_at(&svc.core, point, version);
        for _ in 0..2 {
            // The crash hits the checkpoint after the second merge, which was applied:
            // the push is still acknowledged (a server fault, not the worker's).
            let (_, r) = rt.block_on(lease_and_push(&svc, &id, false)).unwrap();
            assert_eq!(r.outcome, Outcome::Merged as i32);
        }
        assert_eq!(svc.core.totals().server_faults, 1, "{point}");
        let unfinished = checkpoint::root(&run).join(format!("ckpt-{version:012}.tmp"));
        let early = matches!(point, FaultPoint::CheckpointWeightsCopied | FaultPoint::CheckpointStateWritten);
        assert_eq!(unfinished.exists(), early, "{point}");
        drop(svc); // kill -9
        svc = resume(&run);
        assert_eq!(leftovers(&run), Vec::<String>::new(), "{point}");
        assert_state(&svc.core, version, false);
        assert_eq!(svc.core.totals().server_faults, 0, "{point}: not in any checkpoint");
    }
    let id = svc.core.register("b", 1);
    rt.block_on(lease_and_push(&svc, &id, false)).unwrap();
    assert!(svc.core.finished());
    assert_state(&svc.core, shards, false);
}

/// Fault 3: every merge counter, `teacher_records_kept` included, comes back from the
/// journal after a crash, equal to the run without one.
#[test]
fn fault3_journal_replay_restores_every_merge_counter() {
    let rt = rt();
    let tmp = tmp("replay");
    let run = tmp.path().join("run");
    // No regular checkpoint: every merge is only in the journal.
    let svc = Service { core: Arc::new(Core::create(config(&run, 5, true, 0)).unwrap()) };
    let id = svc.core.register("a", 1);
    for _ in 0..3 {
        rt.block_on(lease_and_push(&svc, &id, true)).unwrap();
    }
    // A crash between journaling a merge and applying it: not acknowledged, but in the
    // journal, so it counts once the coordinator is back.
    fail_at(&svc.core, FaultPoint::MergeJournaled, 4);
    let e = rt.block_on(lease_and_push(&svc, &id, true)).unwrap_err();
    assert_eq!(e.code(), Code::Internal, "{e:?}");
    assert_state(&svc.core, 3, true);
    let live = svc.core.totals();
    assert_eq!(live.teacher_records_kept, expected_totals(3, true).teacher_records_kept);
    drop(svc);
    let svc = resume(&run);
    assert_state(&svc.core, 4, true);
    let t = svc.core.totals();
    assert_eq!(t.teacher_records_kept, 4 * 11 + 6, "records of shards 0..4 (11, 12, 13, 14)");
    // The pusher of the 4th shard retries after the restart: a duplicate, not a merge.
    let id = svc.core.register("a", 1);
    let l = v1::Lease { shard_id: 3, attempt: 1, ..Default::default() };
    let r = rt.block_on(push(&svc, chunks(&svc.core, &id, &l, 3, &work(3, true)))).unwrap();
    assert_eq!(r.outcome, Outcome::Duplicate as i32);
    rt.block_on(lease_and_push(&svc, &id, true)).unwrap();
    assert_state(&svc.core, 5, true);
}

/// Fault 4: a push is merged only for the live lease its worker holds; a captured push
/// re-targeted at another shard fails its checksum; `Complete` only from the holder.
#[test]
fn fault4_pushes_and_returns_count_only_from_the_lease_holder() {
    let rt = rt();
    let tmp = tmp("lease");
    let run = tmp.path().join("run");
    let svc = Service { core: Arc::new(Core::create(config(&run, 3, false, 0)).unwrap()) };
    let core = svc.core.clone();
    let (a, b) = (core.register("a", 1), core.register("b", 1));
    rt.block_on(async {
        // A push for a shard nobody leased.
        let unleased = v1::Lease { shard_id: 2, attempt: 1, ..Default::default() };
        let e = push(&svc, chunks(&core, &a, &unleased, 0, &work(2, false))).await.unwrap_err();
        assert_eq!(e.code(), Code::Aborted, "{e:?}");
        assert!(e.message().contains("not leased"), "{e:?}");
        let la = lease(&core, &a); // shard 0
        let lb = lease(&core, &b); // shard 1
        // b pushes for a's lease, with a correct seal of its own.
        let e = push(&svc, chunks(&core, &b, &la, 0, &work(0, false))).await.unwrap_err();
        assert_eq!(e.code(), Code::Aborted, "{e:?}");
        assert!(e.message().contains("another worker"), "{e:?}");
        // A wrong attempt of a's own lease.
        let stale = v1::Lease { attempt: 2, ..la.clone() };
        let e = push(&svc, chunks(&core, &a, &stale, 0, &work(0, false))).await.unwrap_err();
        assert_eq!(e.code(), Code::Aborted, "{e:?}");
        // A captured valid push of a's, re-targeted at shard 1 (header edited, trailer
        // kept): the checksum covers the header.
        let mut moved = chunks(&core, &a, &la, 0, &work(0, false));
        if let Some(Part::Header(h)) = &mut moved[0].part {
            h.shard_id = lb.shard_id;
            h.worker_id = b.clone();
        }
        let e = push(&svc, moved).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        assert!(e.message().contains("checksum"), "{e:?}");
        // Complete(FAILED) from b for a's lease is refused and changes nothing.
        let complete = |worker: &str, l: &v1::Lease| v1::CompleteRequest {
            protocol: keima_proto::PROTOCOL_VERSION,
            worker_id: worker.into(),
            shard_id: l.shard_id,
            attempt: l.attempt,
            reason: v1::complete_request::Reason::Failed as i32,
            error: "sabotage".into(),
        };
        let r = svc.complete(Request::new(complete(&b, &la))).await.unwrap().into_inner();
        assert!(!r.accepted);
        let q = core.queue_snapshot();
        assert_eq!(q.shards[0].failures, 0);
        assert!(matches!(&q.shards[0].state, keima_coordinator::queue::ShardState::Leased { worker, .. } if *worker == a));
        // The holders' own pushes merge, each once, with their own positions.
        let r = push(&svc, chunks(&core, &a, &la, 0, &work(0, false))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
        let r = push(&svc, chunks(&core, &b, &lb, 1, &work(1, false))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
        // Complete from the holder is accepted.
        let lc = lease(&core, &a);
        assert!(svc.complete(Request::new(complete(&a, &lc))).await.unwrap().into_inner().accepted);
    });
    assert_state(&core, 2, false);
    let t = core.totals();
    assert_eq!(t.rejected_pushes, 4, "{t:?}");
    assert_eq!(core.queue_snapshot().shards[2].failures, 1);
}

/// A batch drawn from the pool holds up to `batch_pool_draws` records per position made:
/// a run with 2 merges a push whose `used` is twice its positions and refuses one more.
#[test]
fn used_may_reach_positions_times_the_pool_draws() {
    let rt = rt();
    let dir = tmp("draws");
    let run = dir.path().join("run");
    let mut cfg = config(&run, 2, true, 0);
    cfg.coordinator.batch_pool_draws = 2;
    let svc = Service { core: Arc::new(Core::create(cfg).unwrap()) };
    let core = svc.core.clone();
    let id = core.register("a", 1);
    rt.block_on(async {
        let l = lease(&core, &id);
        let honest = work(l.shard_id, true);
        let positions = honest.stats.positions;
        let over =
            Work { stats: v1::ShardStats { used: 2 * positions + 1, ..honest.stats }, ..work(0, true) };
        let e = push(&svc, chunks(&core, &id, &l, 0, &over)).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        let twice = Work { stats: v1::ShardStats { used: 2 * positions, ..honest.stats }, ..work(0, true) };
        let r = push(&svc, chunks(&core, &id, &l, 0, &twice)).await.unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
    });
    let t = core.totals();
    assert_eq!((t.merges, t.positions_merged, t.positions_used, t.rejected_pushes), (1, 10, 20, 1), "{t:?}");
}

/// Once stopping (SIGINT), the coordinator merges nothing more: the checkpoint it writes then
/// holds every merge, a later push is refused unmerged (retryable, not counted as rejected),
/// and a resume leases that push's shard again.
#[test]
fn a_stopping_coordinator_merges_nothing_after_its_checkpoint() {
    let rt = rt();
    let dir = tmp("stop");
    let run = dir.path().join("run");
    let svc = Service { core: Arc::new(Core::create(config(&run, 2, true, 0)).unwrap()) };
    let core = svc.core.clone();
    let id = core.register("a", 1);
    let late = rt.block_on(async {
        let first = lease(&core, &id);
        let second = lease(&core, &id);
        let r = push(&svc, chunks(&core, &id, &first, 0, &work(first.shard_id, true))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
        core.stop();
        let ck = core.checkpoint().unwrap();
        assert!(ck.to_string_lossy().ends_with("ckpt-000000000001"), "{}", ck.display());
        let e = push(&svc, chunks(&core, &id, &second, 1, &work(second.shard_id, true))).await.unwrap_err();
        assert_eq!(e.code(), Code::Unavailable, "{e:?}");
        assert_eq!(core.lease(&id).state, v1::lease_reply::State::Wait as i32);
        second.shard_id
    });
    assert_eq!(core.weights_version(), 1);
    let t = core.totals();
    assert_eq!((t.merges, t.rejected_pushes, t.server_faults), (1, 0, 0), "{t:?}");
    drop(svc);
    drop(core);
    let svc = resume(&run);
    assert_eq!(svc.core.weights_version(), 1, "the checkpoint and the journal hold the one merge");
    let id = svc.core.register("a", 1);
    assert_eq!(lease(&svc.core, &id).shard_id, late, "the refused push's shard is leased again");
}

/// Fault 5: claimed counts are checked against the payload and the shard, and bounded.
#[test]
fn fault5_claimed_counts_are_checked_and_bounded() {
    let rt = rt();
    let dir = tmp("counts");
    let run = dir.path().join("run");
    let svc = Service { core: Arc::new(Core::create(config(&run, 2, true, 0)).unwrap()) };
    let core = svc.core.clone();
    let id = core.register("a", 1);
    rt.block_on(async {
        let l = lease(&core, &id);
        let honest = work(l.shard_id, true);
        let bad = [
            // 2^64 - 1 positions (used kept small, so only the bound catches it).
            Work { stats: v1::ShardStats { positions: u64::MAX, used: 1, ..honest.stats }, ..work(0, true) },
            // More positions than the records sent back.
            Work { stats: v1::ShardStats { positions: 12, ..honest.stats }, ..work(0, true) },
            // used > positions.
            Work { stats: v1::ShardStats { used: 11, ..honest.stats }, ..work(0, true) },
        ];
        for w in bad {
            let e = push(&svc, chunks(&core, &id, &l, 0, &w)).await.unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument, "{:?}: {e:?}", w.stats);
        }
        // A header announcing more entries than the payload holds.
        let mut c = chunks(&core, &id, &l, 0, &honest);
        if let Some(Part::Header(h)) = &mut c[0].part {
            h.gradient_entries += 1;
        }
        let e = push(&svc, c).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        let r = push(&svc, chunks(&core, &id, &l, 0, &honest)).await.unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
    });
    assert_state(&core, 1, true);
    assert_eq!(core.totals().rejected_pushes, 4);

    // Teacher records sent back when the lease asked for none.
    let tmp2 = tmp("counts-norecords");
    let run = tmp2.path().join("run");
    let svc = Service { core: Arc::new(Core::create(config(&run, 1, false, 0)).unwrap()) };
    let id = svc.core.register("a", 1);
    let l = lease(&svc.core, &id);
    let w = Work { records: records(11), ..work(0, false) };
    let e = rt.block_on(push(&svc, chunks(&svc.core, &id, &l, 0, &w))).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("asked for none"), "{e:?}");
    assert_state(&svc.core, 0, false);
}

/// Fault 6: Register fields are length-limited and logged with control characters escaped,
/// so a newline in them cannot forge a log line.
#[test]
fn fault6_register_fields_cannot_forge_log_lines() {
    let tmp = tmp("log");
    let run = tmp.path().join("run");
    let svc = Service { core: Arc::new(Core::create(config(&run, 1, false, 0)).unwrap()) };
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
    let register = |name: &str, version: &str| v1::RegisterRequest {
        protocol: keima_proto::PROTOCOL_VERSION,
        worker_name: name.into(),
        threads: 1,
        version: version.into(),
        usi_engines: Vec::new(),
    };
    tracing::subscriber::with_default(subscriber, || {
        rt().block_on(async {
            let forged = "1.0\nINFO keima: run finished, weights exported";
            let r =
                svc.register(Request::new(register("evil\r\nWARN x", forged))).await.unwrap().into_inner();
            assert!(r.worker_id.starts_with('w') && !r.worker_id.contains(['\n', '\r']), "{}", r.worker_id);
            let e = svc.register(Request::new(register(&"n".repeat(129), "1.0"))).await.unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument);
            assert!(e.message().contains("worker_name is 129 bytes"), "{e:?}");
            let e = svc.register(Request::new(register("ok", &"v".repeat(65)))).await.unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument);
            assert!(e.message().contains("version is 65 bytes"), "{e:?}");
        })
    });
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one registration, one line: {text:?}");
    assert!(lines[0].contains(r"1.0\nINFO keima: run finished"), "{text:?}");
    assert!(lines[0].contains(r"evil\r\nWARN x"), "{text:?}");
    assert_eq!(svc.core.workers_registered(), 1, "the refused registrations left no worker");
}

/// Fault 7: a coordinator disk error after the merge was applied (the checkpoint) is the
/// coordinator's: the push is answered MERGED, nothing counts as rejected, the run goes
/// on. One before the merge (the journal) is a server fault too: UNAVAILABLE, nothing
/// merged, and the same push merges when retried.
#[test]
fn fault7_server_faults_are_not_the_workers_and_the_run_goes_on() {
    let rt = rt();
    let tmp = tmp("server");
    let run = tmp.path().join("run");
    let svc = Service { core: Arc::new(Core::create(config(&run, 3, false, 1)).unwrap()) };
    let core = svc.core.clone();
    let id = core.register("a", 1);
    // A file where the checkpoint of version 1 is to be written: a real I/O error.
    let obstacle = checkpoint::root(&run).join("ckpt-000000000001.tmp");
    std::fs::write(&obstacle, b"in the way").unwrap();
    let (_, r) = rt.block_on(lease_and_push(&svc, &id, false)).unwrap();
    assert_eq!((r.outcome, r.merge_seq), (Outcome::Merged as i32, 1));
    let t = core.totals();
    assert_eq!((t.rejected_pushes, t.server_faults), (0, 1), "{t:?}");
    assert_state(&core, 1, false);
    std::fs::remove_file(&obstacle).unwrap();
    // The journal directory replaced by a file: the merge cannot be journaled.
    let journal = run.join("journal");
    std::fs::rename(&journal, run.join("journal.away")).unwrap();
    std::fs::write(&journal, b"in the way").unwrap();
    let l = lease(&core, &id);
    let push_of_shard_1 = chunks(&core, &id, &l, 1, &work(1, false));
    let e = rt.block_on(push(&svc, push_of_shard_1.clone())).unwrap_err();
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    assert_state(&core, 1, false);
    let t = core.totals();
    assert_eq!((t.rejected_pushes, t.server_faults), (0, 2), "{t:?}");
    std::fs::remove_file(&journal).unwrap();
    std::fs::rename(run.join("journal.away"), &journal).unwrap();
    let r = rt.block_on(push(&svc, push_of_shard_1)).unwrap();
    assert_eq!(r.outcome, Outcome::Merged as i32);
    rt.block_on(lease_and_push(&svc, &id, false)).unwrap();
    assert_state(&core, 3, false);
    assert!(checkpoint::root(&run).join("ckpt-000000000003").is_dir(), "checkpoints work again");
    // And a resume sees all three merges.
    drop(svc);
    drop(core);
    let svc = resume(&run);
    assert_state(&svc.core, 3, false);
}
