//! CPU time in the run's totals: each push's `cpu_seconds` counts once when its shard is
//! merged or answered stale (that CPU was spent), never for a duplicate, never from a push
//! refused as invalid; the total survives a checkpoint and journal replay, and appears on
//! the metrics lines as `cpu_hours` together with the coordinator's own CPU time.

use keima_coordinator::TrainConfig;
use keima_coordinator::core::Core;
use keima_coordinator::service::Service;
use keima_proto::v1::{self, push_reply::Outcome};
use std::path::Path;
use std::sync::Arc;
use support::{Work, chunks, lease, push, rt, tmp};
use tonic::Code;

mod support;

/// Four self-play shards; a gradient one version old is stale and rejected.
fn config(run_dir: &Path) -> TrainConfig {
    TrainConfig::from_toml(&format!(
        "run_dir = {run_dir:?}\n[selfplay]\nshards = 4\ngames_per_shard = 2\nlimit = {{ nodes = 100 }}\n\
         [coordinator]\nlisten = \"127.0.0.1:0\"\nmetrics_listen = \"\"\ncheckpoint_every = 100\n\
         max_staleness = 0\nstale_policy = \"reject\"\nkeep_teacher_records = false\nexport = false\n[local_workers]\ncount = 0\n"
    ))
    .unwrap()
}

fn work(cpu_seconds: f64) -> Work {
    Work {
        gradient: vec![(3, [0.5, -0.25]), (900, [-1.0, 0.5])],
        records: Vec::new(),
        stats: v1::ShardStats { positions: 10, used: 9, loss_sum: 6.0, cpu_seconds, ..Default::default() },
        result: None,
    }
}

fn last_metrics_line(run_dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run_dir.join("metrics.jsonl")).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

#[test]
fn cpu_time_counts_merged_and_stale_pushes_once_and_survives_a_resume() {
    let rt = rt();
    let tmp = tmp("cpu-time");
    let run = tmp.path().join("run");
    let svc = Service { core: Arc::new(Core::create(config(&run)).unwrap()) };
    let core = svc.core.clone();
    let (a, b) = (core.register("a", 1), core.register("b", 1));
    rt.block_on(async {
        let l0 = lease(&core, &a);
        let l1 = lease(&core, &b);
        // Merged: 1.5 s.
        let r = push(&svc, chunks(&core, &a, &l0, 0, &work(1.5))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
        // The same result sent again: a duplicate, its CPU not counted twice.
        let r = push(&svc, chunks(&core, &a, &l0, 0, &work(1.5))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Duplicate as i32);
        // Computed on version 0, merged at 1: stale and rejected, but 2.25 s were spent.
        let r = push(&svc, chunks(&core, &b, &l1, 0, &work(2.25))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Stale as i32);
        // Absurd claims are refused and count nothing.
        let l1 = lease(&core, &b);
        for bad in [f64::NAN, f64::INFINITY, -1.0, 1e12] {
            let e = push(&svc, chunks(&core, &b, &l1, 1, &work(bad))).await.unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument, "{bad}: {e:?}");
            assert!(e.message().contains("cpu_seconds"), "{e:?}");
        }
        // The re-leased shard merged: 4 s.
        let r = push(&svc, chunks(&core, &b, &l1, 1, &work(4.0))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
    });
    let t = core.totals();
    assert_eq!(t.train_cpu_seconds, 1.5 + 2.25 + 4.0);
    assert_eq!((t.merges, t.duplicate_pushes, t.stale_pushes), (2, 1, 1));
    assert!(t.coordinator_cpu_seconds >= 0.0);
    core.metrics_line().unwrap();
    let hours = last_metrics_line(&run)["cpu_hours"].as_f64().unwrap();
    let coordinator = core.totals().coordinator_cpu_seconds;
    assert!(hours * 3600.0 >= 7.75 && hours * 3600.0 <= 7.75 + coordinator + 1e-9, "{hours} h");
    // The checkpoint stores at least what the coordinator had used before it was written.
    let saved_coordinator = core.totals().coordinator_cpu_seconds;
    core.checkpoint().unwrap();

    // One more merge after the checkpoint, then a crash (no final checkpoint).
    let l2 = lease(&core, &a);
    let r = rt.block_on(push(&svc, chunks(&core, &a, &l2, 2, &work(0.5)))).unwrap();
    assert_eq!(r.outcome, Outcome::Merged as i32);
    drop(svc);
    drop(core);

    let (resumed, _) = Core::resume(&run, None).unwrap();
    let t = resumed.totals();
    // The checkpoint's total (stale push included) plus the merge the journal replays.
    assert_eq!(t.train_cpu_seconds, 1.5 + 2.25 + 4.0 + 0.5);
    assert_eq!(t.merges, 3);
    assert!(t.coordinator_cpu_seconds >= saved_coordinator, "the coordinator's CPU keeps counting");
    resumed.metrics_line().unwrap();
    let hours = last_metrics_line(&run)["cpu_hours"].as_f64().unwrap();
    assert!(hours * 3600.0 >= 8.25 + saved_coordinator, "{hours} h");
}

/// A budget of `cpu_hours`: training stops once the run's CPU reaches it. A shard leased
/// before is still merged; the shards not started stay pending and the run is finished;
/// a resume with a larger budget trains on.
#[test]
fn a_cpu_budget_stops_new_training_shards_and_merges_those_in_flight() {
    let rt = rt();
    let tmp = tmp("cpu-budget");
    let run = tmp.path().join("run");
    let mut cfg = config(&run);
    cfg.coordinator.max_staleness = 4;
    cfg.coordinator.stale_policy = keima_coordinator::config::StalePolicy::Downweight;
    // 100 s: the coordinator's own CPU in this test is far less.
    cfg.cpu_hours = Some(100.0 / 3600.0);
    let svc = Service { core: Arc::new(Core::create(cfg).unwrap()) };
    let core = svc.core.clone();
    let (a, b) = (core.register("a", 1), core.register("b", 1));
    rt.block_on(async {
        let l0 = lease(&core, &a);
        let l1 = lease(&core, &b);
        let r = push(&svc, chunks(&core, &a, &l0, 0, &work(60.0))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
        assert!(!core.stop_training_if_budget_spent(), "60 s of 100");
        // 60 + 50 s: the budget is spent, but shard 1 was leased before and is merged.
        let r = push(&svc, chunks(&core, &b, &l1, 0, &work(50.0))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
    });
    assert!(core.stop_training_if_budget_spent() && core.stopped_at_budget());
    let reply = core.lease(&a);
    assert_ne!(reply.state, v1::lease_reply::State::Leased as i32, "no training shard after the budget");
    assert!(core.training_done(), "two shards pending, but training stopped");
    assert_eq!(core.shard_counts().pending, 2);
    assert!(!core.end_of_training_checkpoint_due(), "without [elo] nothing is left to match");
    assert!(core.finished());
    assert_eq!(core.lease(&a).state, v1::lease_reply::State::Finished as i32);
    core.checkpoint().unwrap();
    drop(svc);
    drop(core);

    // Resumed under the same budget, it is still spent.
    let (resumed, _) = Core::resume(&run, None).unwrap();
    assert!(resumed.stop_training_if_budget_spent() && resumed.finished());
    drop(resumed);
    // A larger budget trains on; a bad one is refused naming the key.
    let (mut resumed, _) = Core::resume(&run, None).unwrap();
    let e = resumed.set_cpu_hours(Some(f64::NAN)).unwrap_err();
    assert!(e.contains("cpu_hours"), "{e}");
    resumed.set_cpu_hours(Some(1.0)).unwrap();
    assert!(!resumed.stop_training_if_budget_spent() && !resumed.stopped_at_budget() && !resumed.finished());
    let c = resumed.register("c", 1);
    assert_eq!(lease(&resumed, &c).shard_id, 2, "the next training shard");
}

/// A run whose shards are all done before its budget is spent did not stop at the budget,
/// even when its CPU passes the budget afterwards (say, in its final matches).
#[test]
fn a_budget_passed_after_the_last_shard_is_not_a_budget_stop() {
    let rt = rt();
    let tmp = tmp("cpu-budget-after");
    let run = tmp.path().join("run");
    let mut cfg = config(&run);
    cfg.selfplay.as_mut().unwrap().shards = 1;
    cfg.cpu_hours = Some(100.0 / 3600.0);
    let svc = Service { core: Arc::new(Core::create(cfg).unwrap()) };
    let core = svc.core.clone();
    let a = core.register("a", 1);
    rt.block_on(async {
        let l0 = lease(&core, &a);
        let r = push(&svc, chunks(&core, &a, &l0, 0, &work(200.0))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
    });
    assert!(core.stop_training_if_budget_spent(), "200 s of 100");
    assert!(!core.stopped_at_budget(), "no training shard was left unplayed");
    assert!(core.training_done() && core.finished());
}
