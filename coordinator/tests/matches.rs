//! Match shards (`[elo]`) in-process: queued with the checkpoint that matches (its weights
//! exported), leased after the training shards, each result recorded exactly once (a
//! re-sent result is a duplicate, a late one from a lost lease is refused, a crash before
//! the next checkpoint loses nothing), the Elo line written once all are in, and the
//! match CPU kept apart from training's. Against an external USI engine: its shards go only
//! to workers that registered the engine, and the Elo line names it and counts time losses.

use keima_coordinator::TrainConfig;
use keima_coordinator::core::Core;
use keima_coordinator::queue::{ShardSpec, ShardState};
use keima_coordinator::service::Service;
use keima_proto::v1::{self, push_reply::Outcome};
use std::path::Path;
use std::sync::Arc;
use support::{Captured, Work, chunks, lease, push, rt, tmp};
use tonic::{Code, Request};
use v1::coordinator_server::Coordinator;

mod support;

fn config(run_dir: &Path, openings: &Path) -> TrainConfig {
    TrainConfig::from_toml(&format!(
        "run_dir = {run_dir:?}\n[selfplay]\nshards = 2\ngames_per_shard = 2\nlimit = {{ nodes = 100 }}\n\
         [coordinator]\nlisten = \"127.0.0.1:0\"\nmetrics_listen = \"\"\ncheckpoint_every = 2\n\
         keep_teacher_records = false\nexport = false\n[local_workers]\ncount = 0\n\
         [elo]\nevery = 2\ngames = 4\ngames_per_shard = 2\nnodes = 100\nopenings = {openings:?}\nseed = 3\n"
    ))
    .unwrap()
}

fn training(cpu_seconds: f64) -> Work {
    Work {
        gradient: vec![(3, [0.5, -0.25])],
        records: Vec::new(),
        stats: v1::ShardStats { positions: 10, used: 9, loss_sum: 6.0, cpu_seconds, ..Default::default() },
        result: None,
    }
}

/// One game pair's result: `penta` is the pair's cell.
fn played(wins: u32, draws: u32, losses: u32, cell: usize, cpu_seconds: f64) -> Work {
    let mut pentanomial = vec![0; 5];
    pentanomial[cell] = 1;
    Work {
        gradient: Vec::new(),
        records: Vec::new(),
        stats: v1::ShardStats { games: 2, cpu_seconds, ..Default::default() },
        result: Some(v1::MatchResult {
            wins,
            draws,
            losses,
            pentanomial,
            time_losses: 0,
            baseline_time_losses: 0,
        }),
    }
}

/// Leases and merges the two training shards (by `workers`): version 2, whose checkpoint
/// queues the match shards.
async fn merge_two_training_shards(svc: &Service, workers: [&str; 2]) {
    let core = &svc.core;
    for w in workers {
        let l = lease(core, w);
        let r = push(svc, chunks(core, w, &l, core.weights_version(), &training(1.0))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
    }
}

fn elo_lines(run_dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(run_dir.join("metrics.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l.get("elo").is_some())
        .collect()
}

#[test]
fn match_results_count_once_across_duplicates_lost_leases_and_a_crash() {
    let rt = rt();
    let tmp = tmp("matches");
    let run = tmp.path().join("run");
    let openings = tmp.path().join("openings.sfen");
    std::fs::write(&openings, "startpos moves 7g7f 3c3d\nstartpos moves 2g2f 8c8d\n").unwrap();
    let bad_openings = config(&tmp.path().join("bad"), &tmp.path().join("missing.sfen"));
    let e = Core::create(bad_openings).err().unwrap();
    assert!(e.contains("[elo] openings") && e.contains("missing.sfen"), "{e}");

    let svc = Service { core: Arc::new(Core::create(config(&run, &openings)).unwrap()) };
    let core = svc.core.clone();
    let (a, b) = (core.register("a", 1), core.register("b", 1));
    rt.block_on(merge_two_training_shards(&svc, [&a, &b]));
    // Version 2's checkpoint queued two match shards of one game pair each, exported first.
    let q = core.queue_snapshot();
    assert_eq!(q.shards.len(), 4);
    for s in &q.shards[2..] {
        let ShardSpec::Match { version, eval_dir, baseline_dir, nodes, openings, .. } = &s.spec else {
            panic!("{:?}", s.spec)
        };
        assert_eq!((*version, *nodes, openings.len(), baseline_dir), (2, 100, 1, &None));
        assert!(Path::new(eval_dir).join("KPP_synthesized.bin").is_file(), "{eval_dir}");
    }
    rt.block_on(async {
        let la = lease(&core, &a);
        assert_eq!(la.shard_id, 2);
        // A match shard's push must carry its result, fitting the shard, and no gradient.
        let e = push(&svc, chunks(&core, &a, &la, 2, &Work { result: None, ..played(1, 0, 1, 2, 0.0) }))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        let e = push(&svc, chunks(&core, &a, &la, 2, &played(2, 0, 1, 3, 0.0))).await.unwrap_err();
        assert!(e.message().contains("3 games"), "{e:?}");
        let e = push(
            &svc,
            chunks(&core, &a, &la, 2, &Work { gradient: vec![(1, [1.0, 0.0])], ..played(1, 0, 1, 2, 0.0) }),
        )
        .await
        .unwrap_err();
        assert!(e.message().contains("gradient"), "{e:?}");
        // Recorded once; the same result again is a duplicate.
        let r = push(&svc, chunks(&core, &a, &la, 2, &played(1, 0, 1, 2, 2.0))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
        let r = push(&svc, chunks(&core, &a, &la, 2, &played(1, 0, 1, 2, 2.0))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Duplicate as i32);
        // b leases shard 3 and gives it back; a's re-lease holds it, b's late result is refused.
        let lb = lease(&core, &b);
        assert_eq!(lb.shard_id, 3);
        core.give_back(&b, 3, lb.attempt, false, "").unwrap();
        let la = lease(&core, &a);
        assert_eq!((la.shard_id, la.attempt), (3, 2));
        let e = push(&svc, chunks(&core, &b, &lb, 2, &played(2, 0, 0, 4, 5.0))).await.unwrap_err();
        assert_eq!(e.code(), Code::Aborted, "{e:?}");
    });
    let t = core.totals();
    assert_eq!((t.train_cpu_seconds, t.match_cpu_seconds), (2.0, 2.0), "match CPU apart, counted once");
    assert!(elo_lines(&run).is_empty(), "shard 3 is not in yet");
    // A crash: no checkpoint after version 2's, which holds shard 2 as pending.
    drop(svc);
    drop(core);

    let (core, _) = Core::resume(&run, None).unwrap();
    let svc = Service { core: Arc::new(core) };
    let core = svc.core.clone();
    let q = core.queue_snapshot();
    assert!(matches!(q.shards[2].state, ShardState::Played { .. }), "the result file is replayed");
    assert_eq!(q.shards[3].state, ShardState::Pending);
    assert_eq!(core.totals().match_cpu_seconds, 2.0);
    let c = core.register("c", 1);
    rt.block_on(async {
        let l = lease(&core, &c);
        assert_eq!(l.shard_id, 3);
        let r = push(&svc, chunks(&core, &c, &l, 2, &played(2, 0, 0, 4, 3.0))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
        // Shard 2's result sent again after the restart: still a duplicate.
        let stale = v1::Lease { shard_id: 2, attempt: 1, ..l.clone() };
        let r = push(&svc, chunks(&core, &c, &stale, 2, &played(1, 0, 1, 2, 2.0))).await.unwrap();
        assert_eq!(r.outcome, Outcome::Duplicate as i32);
    });
    assert!(!core.finished(), "not before the checkpoint at the end of training is written");
    core.checkpoint_end_of_training().unwrap();
    assert!(core.finished());
    let t = core.totals();
    assert_eq!((t.train_cpu_seconds, t.match_cpu_seconds), (2.0, 5.0));
    let lines = elo_lines(&run);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let l = &lines[0];
    assert_eq!((l["version"].as_u64(), l["games"].as_u64()), (Some(2), Some(4)));
    assert_eq!((l["wins"].as_u64(), l["draws"].as_u64(), l["losses"].as_u64()), (Some(3), Some(0), Some(1)));
    assert_eq!(l["pentanomial"], serde_json::json!([0, 0, 1, 0, 1]));
    assert_eq!(l["baseline"], "material");
    // W3 L1: s = 0.75, +190.8 Elo.
    assert!((l["elo"].as_f64().unwrap() - 190.848_501_887_864_9).abs() < 1e-6, "{l}");
    assert_eq!(l["match_cpu_hours"].as_f64().unwrap(), 5.0 / 3600.0);
    let prometheus = keima_coordinator::metrics::render(&core);
    assert!(prometheus.contains("keima_elo_version 2\n"), "{prometheus}");
    assert!(prometheus.contains("keima_elo 190.84"), "{prometheus}");
    assert!(prometheus.contains("keima_match_cpu_seconds_total 5\n"), "{prometheus}");
}

#[test]
fn usi_match_shards_go_only_to_workers_that_declared_the_engine() {
    let rt = rt();
    let tmp = tmp("usi-matches");
    let run = tmp.path().join("run");
    let openings = tmp.path().join("openings.sfen");
    std::fs::write(&openings, "startpos moves 7g7f 3c3d\n").unwrap();
    let mut cfg = config(&run, &openings);
    let elo = cfg.elo.as_mut().unwrap();
    elo.baseline = keima_coordinator::elo_config::Baseline::Usi("gps".into());
    elo.byoyomi_ms = 1000;
    let svc = Service { core: Arc::new(Core::create(cfg).unwrap()) };
    let core = svc.core.clone();
    let register = |name: &str, engines: &[&str]| v1::RegisterRequest {
        protocol: keima_proto::PROTOCOL_VERSION,
        worker_name: name.into(),
        threads: 1,
        version: "t".into(),
        usi_engines: engines.iter().map(|e| e.to_string()).collect(),
    };
    let plain = rt.block_on(async {
        // Names are checked at registration: no command line, no odd characters.
        for bad in [&["/usr/games/gpsusi"][..], &["gps shogi"], &[""], &["x"; 17]] {
            let e = svc.register(Request::new(register("w", bad))).await.unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument, "{bad:?}: {e:?}");
        }
        svc.register(Request::new(register("plain", &["fairy"]))).await.unwrap().into_inner().worker_id
    });
    rt.block_on(merge_two_training_shards(&svc, [&plain, &plain]));
    // Version 2's two match shards wait for a worker with the engine: never the plain one.
    let q = core.queue_snapshot();
    assert_eq!(q.shards.len(), 4);
    for s in &q.shards[2..] {
        assert_eq!(s.spec.usi_engine(), Some("gps"));
    }
    // No registered worker has it: the coordinator says so, once.
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
    tracing::subscriber::with_default(subscriber, || {
        for _ in 0..3 {
            assert_eq!(core.lease(&plain).state, v1::lease_reply::State::Wait as i32);
        }
    });
    let logged = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert_eq!(
        logged.matches("wait for the USI engine \"gps\", which no registered worker").count(),
        1,
        "{logged}"
    );
    let status = keima_coordinator::service::status_of(&core);
    assert_eq!(status.usi_engines_missing, ["gps"], "keima status says what the shards wait for");
    let with_gps =
        rt.block_on(svc.register(Request::new(register("gps", &["gps"])))).unwrap().into_inner().worker_id;
    assert!(keima_coordinator::service::status_of(&core).usi_engines_missing.is_empty());
    let l = lease(&core, &with_gps);
    assert_eq!(l.shard_id, 2);
    let Some(v1::lease::Kind::Match(m)) = &l.kind else { panic!("{l:?}") };
    let usi = m.usi.as_ref().unwrap();
    assert_eq!((usi.engine.as_str(), usi.byoyomi_ms, usi.time_ms), ("gps", 1000, 0));
    assert_eq!(core.lease(&plain).state, v1::lease_reply::State::Wait as i32, "shard 3 still waits");
    let l2 = lease(&core, &with_gps);
    assert_eq!(l2.shard_id, 3);
    rt.block_on(async {
        // One game of each pair lost on time by the tested side, one by the baseline.
        let mut a = played(1, 0, 1, 2, 1.0);
        a.result.as_mut().unwrap().time_losses = 1;
        let mut b = played(1, 0, 1, 2, 1.0);
        b.result.as_mut().unwrap().baseline_time_losses = 1;
        for (lease, work) in [(&l, &a), (&l2, &b)] {
            let r = push(&svc, chunks(&core, &with_gps, lease, 2, work)).await.unwrap();
            assert_eq!(r.outcome, Outcome::Merged as i32);
        }
    });
    let lines = elo_lines(&run);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["baseline"], "usi:gps");
    assert_eq!((lines[0]["games"].as_u64(), lines[0]["time_losses"].as_u64()), (Some(4), Some(1)));
    assert_eq!(lines[0]["baseline_time_losses"].as_u64(), Some(1));
    let prometheus = keima_coordinator::metrics::render(&core);
    assert!(prometheus.contains("keima_elo_games 4\n"), "{prometheus}");
    assert!(prometheus.contains("keima_elo_time_losses 1\n"), "{prometheus}");
    assert!(prometheus.contains("keima_elo_baseline_time_losses 1\n"), "{prometheus}");
}
