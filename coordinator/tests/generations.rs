//! Generations and newbob, in-process (`Service` methods called directly, pushes made up
//! by the test): the barrier between generations, each generation's limit and λ in its
//! leases and its η in its merges; newbob accepting, rolling back, answering a gradient the
//! rollback undid as stale, and converging; and the same state after a crash in the middle
//! of a generation's end, or with the checkpoints after a generation lost (replay ends the
//! generations again).

use engine_core::eval::Evaluator;
use engine_core::learn::gradient::batch_gradient;
use engine_core::learn::validation::load_records;
use engine_core::teacher::config::SearchLimit;
use engine_core::teacher::{Opening, PackedSfenValue, ShardSettings, ShardWriter};
use keima_coordinator::TrainConfig;
use keima_coordinator::checkpoint;
use keima_coordinator::core::Core;
use keima_coordinator::fault::{FaultAction, FaultPlan, FaultPoint};
use keima_coordinator::generations::GenerationState;
use keima_coordinator::service::Service;
use keima_proto::spec::{ShardSpec, lease_work};
use keima_proto::v1::{self, push_reply::Outcome};
use std::path::Path;
use std::sync::Arc;
use support::{Work, chunks, lease, push, rt, tmp};

mod support;

type Gradient = Vec<(u32, [f32; 2])>;

fn config(run: &Path, learn: &str, schedule: &str) -> TrainConfig {
    TrainConfig::from_toml(&format!(
        "run_dir = {run:?}\n{learn}\n[selfplay]\nshards = 2\ngames_per_shard = 1\nlimit = {{ nodes = 100 }}\n\
         {schedule}\n[coordinator]\nlisten = \"127.0.0.1:0\"\nmetrics_listen = \"\"\ncheckpoint_every = 100\n\
         keep_checkpoints = 0\nkeep_teacher_records = false\nexport = false\n[local_workers]\ncount = 0\n"
    ))
    .unwrap()
}

fn work(gradient: &[(u32, [f32; 2])]) -> Work {
    let stats = v1::ShardStats { positions: 10, used: 8, loss_sum: 4.0, ..Default::default() };
    Work { gradient: gradient.to_vec(), records: Vec::new(), stats, result: None }
}

/// Leases the next shard and pushes `gradient` for it, computed on the current weights.
fn lease_and_push(
    rt: &tokio::runtime::Runtime,
    svc: &Service,
    worker: &str,
    gradient: &[(u32, [f32; 2])],
) -> v1::Lease {
    let l = lease(&svc.core, worker);
    let version = svc.core.weights_version();
    let r = rt.block_on(push(svc, chunks(&svc.core, worker, &l, version, &work(gradient)))).unwrap();
    assert_eq!(r.outcome, Outcome::Merged as i32, "{r:?}");
    l
}

fn metrics_lines(run: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn generation_ends(run: &Path) -> Vec<serde_json::Value> {
    metrics_lines(run).into_iter().filter(|l| l["generation_end"] == true).collect()
}

#[test]
fn generations_are_leased_in_turn_with_their_own_limit_lambda_and_eta() {
    let rt = rt();
    let tmp = tmp("generations");
    let run = tmp.path().join("run");
    let cfg = config(
        &run,
        "[adagrad]\neta = 4.0\neta_turn = 1.0\n[loss]\nlambda = 0.3\n",
        "[[generation]]\n[[generation]]\nshards = 1\nlimit = { depth = 3 }\neta = 12.0\nlambda = 0.6\n",
    );
    let svc = Service { core: Arc::new(Core::create(cfg).unwrap()) };
    let id = svc.core.register("a", 1);
    let leased: Vec<v1::Lease> = (0..2).map(|_| lease(&svc.core, &id)).collect();
    for l in &leased {
        let (spec, loss) = lease_work(l).unwrap();
        let ShardSpec::SelfPlay { search, .. } = spec else { panic!("{spec:?}") };
        assert_eq!(
            (search.limit, loss.lambda),
            (SearchLimit::Nodes(100), 0.3),
            "generation 0: the base tables"
        );
    }
    let wait = v1::lease_reply::State::Wait as i32;
    assert_eq!(svc.core.lease(&id).state, wait, "generation 1 waits for generation 0");
    // One gradient entry per shard, each on its own weight, so that each weight's first
    // AdaGrad step is η (board) and η_turn (turn) exactly.
    let pushed = [(0, 5u32), (1, 9), (2, 6)];
    for (i, feature) in &pushed[..2] {
        let l = &leased[*i];
        let w = work(&[(*feature, [1.0, 1.0])]);
        let r = rt.block_on(push(&svc, chunks(&svc.core, &id, l, svc.core.weights_version(), &w))).unwrap();
        assert_eq!(r.outcome, Outcome::Merged as i32);
        if *i == 0 {
            assert_eq!(svc.core.lease(&id).state, wait, "one shard of generation 0 is not merged yet");
        }
    }
    let l = lease(&svc.core, &id);
    assert_eq!((l.shard_id, l.weights_version, svc.core.generation()), (2, 2, 1));
    let (spec, loss) = lease_work(&l).unwrap();
    let ShardSpec::SelfPlay { search, .. } = spec else { panic!("{spec:?}") };
    assert_eq!((search.limit, loss.lambda), (SearchLimit::Depth(3), 0.6), "generation 1's own");
    let w = work(&[(pushed[2].1, [1.0, 1.0])]);
    let r = rt.block_on(push(&svc, chunks(&svc.core, &id, &l, 2, &w))).unwrap();
    assert_eq!(r.outcome, Outcome::Merged as i32);
    assert!(svc.core.finished());
    // Generation 0 merged with [adagrad] (η 4, η_turn 1), generation 1 with η 12 (η_turn
    // keeps its ratio: 3).
    let entries = svc.core.weights_update(0, true).entries;
    let value = |f: u32| entries.iter().find(|e| e.0 == f).map(|e| e.1);
    assert_eq!(
        (value(5), value(9), value(6)),
        (Some([-4, -1]), Some([-4, -1]), Some([-12, -3])),
        "{entries:?}"
    );
    let ends = generation_ends(&run);
    let got: Vec<(u64, f64)> =
        ends.iter().map(|l| (l["generation"].as_u64().unwrap(), l["eta"].as_f64().unwrap())).collect();
    assert_eq!(got, [(0, 4.0), (1, 12.0)]);
    assert!(ends.iter().all(|l| l.get("newbob").is_none()), "no newbob without [newbob]");
}

/// Held-out records from a few openings, scored and won by the side to move, which the
/// material-only start evaluates as even: their gradient is far from zero.
fn validation_shard(path: &Path) {
    let lines = [
        "startpos moves 7g7f",
        "startpos moves 2g2f",
        "startpos moves 7g7f 3c3d",
        "startpos moves 2g2f 8c8d",
        "startpos moves 7g7f 3c3d 2g2f",
        "startpos moves 5g5f 5c5d",
        "startpos moves 7g7f 8c8d 6g6f",
        "startpos moves 1g1f 1c1d",
    ];
    let mut w = ShardWriter::create(path, ShardSettings::default()).unwrap();
    for line in lines {
        let o = Opening::parse_usi(line).unwrap();
        let mut pos = o.start;
        for &m in &o.moves {
            pos.do_move(m);
        }
        w.write(&PackedSfenValue::new(&pos, None, 300, 1).unwrap()).unwrap();
    }
    w.finish().unwrap();
}

/// The gradient of the held-out records at the start (material only): a step along it
/// lowers their loss, a large step against it raises it.
fn held_out_gradient(cfg: &TrainConfig) -> Gradient {
    let records = load_records(&cfg.learn.validation).unwrap();
    let g = batch_gradient(&Arc::new(Evaluator::material_only()), &records, &cfg.learn.loss, false);
    assert!(g.entries.len() > 100, "{} entries", g.entries.len());
    g.entries
}

fn newbob_config(run: &Path, validation: &Path) -> TrainConfig {
    config(
        run,
        &format!(
            "[adagrad]\neta = 4.0\n[loss]\nlambda = 0.5\n[validation]\nshard = {validation:?}\ndepth = 0\n"
        ),
        "[[generation]]\n[[generation]]\nshards = 1\neta = 64.0\n[[generation]]\nshards = 1\n\
         [newbob]\ndecay = 0.5\nmax_decays = 2\n",
    )
}

/// What must be equal between a run and the same run crashed and resumed.
#[derive(Debug, PartialEq)]
struct Snapshot {
    version: u64,
    entries: Vec<(u32, [i32; 2])>,
    generations: GenerationState,
    generation: u32,
    done: u64,
    merges: u64,
    positions: u64,
    finished: bool,
}

fn snapshot(core: &Core) -> Snapshot {
    let t = core.totals();
    Snapshot {
        version: core.weights_version(),
        entries: core.weights_update(0, true).entries,
        generations: core.generation_state(),
        generation: core.generation(),
        done: core.shard_counts().done,
        merges: t.merges,
        positions: t.positions_merged,
        finished: core.finished(),
    }
}

/// What a pull at `have` (or a full one) sends, decoded: version, full, entries.
fn synced(core: &Core, have: u64, full: bool) -> (u64, bool, Vec<(u32, [i32; 2])>) {
    let sync = core.weights_sync(have, full);
    let mut entries = Vec::new();
    for c in sync.chunks.iter() {
        let raw = keima_proto::sparse::decompress(&c.blob, keima_proto::sparse::MAX_BLOB_BYTES).unwrap();
        entries.extend(keima_proto::sparse::decode_weights(&raw, u32::MAX as u64, c.entries).unwrap());
    }
    (sync.version, sync.full, entries)
}

/// Generation 0 (two shards: the held-out gradient, then a weight no held-out position
/// uses); its end is the first evaluation, accepted.
fn generation_0(rt: &tokio::runtime::Runtime, svc: &Service, id: &str, good: &[(u32, [f32; 2])]) {
    lease_and_push(rt, svc, id, good);
    lease_and_push(rt, svc, id, &[(0, [1.0, 1.0])]);
}

/// Generation 1: η 64 against the held-out gradient.
fn generation_1(rt: &tokio::runtime::Runtime, svc: &Service, id: &str, good: &[(u32, [f32; 2])]) {
    let bad: Gradient = good.iter().map(|&(i, [a, b])| (i, [-a, -b])).collect();
    lease_and_push(rt, svc, id, &bad);
}

#[test]
fn newbob_accepts_rolls_back_answers_undone_gradients_stale_and_converges() {
    let rt = rt();
    let tmp = tmp("newbob");
    let validation = tmp.path().join("val.psv.zst");
    validation_shard(&validation);
    let run = tmp.path().join("run");
    let cfg = newbob_config(&run, &validation);
    let good = held_out_gradient(&cfg);
    let svc = Service { core: Arc::new(Core::create(cfg).unwrap()) };
    let id = svc.core.register("a", 1);

    generation_0(&rt, &svc, &id, &good);
    let best = svc.core.weights_update(0, true).entries;
    // Syncs encoded at version 2 are kept for reuse: after the rollback none may be served.
    assert_eq!(synced(&svc.core, 0, true), (2, true, best.clone()));
    assert_eq!(synced(&svc.core, 1, false).2, svc.core.weights_update(1, false).entries);
    let (a, b) = (svc.core.weights_sync(0, true), svc.core.weights_sync(0, true));
    assert!(Arc::ptr_eq(&a.chunks, &b.chunks), "a second pull of the same span is served the same bytes");
    let s = svc.core.generation_state();
    assert_eq!((s.best_version, s.newbob.decays, s.newbob.eta_scale), (Some(2), 0, 1.0));
    assert!(checkpoint::dir(&svc.core.best_dir(), 2).join("weights.kw").is_file(), "the best is kept");

    // Worse: back to the best weights, as version 4 (3 merges and the rollback).
    generation_1(&rt, &svc, &id, &good);
    let s = svc.core.generation_state();
    assert_eq!((s.best_version, s.newbob.decays, s.newbob.eta_scale, s.rolled_back_at), (Some(2), 1, 0.5, 4));
    assert_eq!(svc.core.weights_version(), 4);
    assert_eq!(svc.core.weights_update(0, true).entries, best, "rolled back to the best weights");
    for (have, full) in [(0, true), (1, false), (2, false), (3, false)] {
        assert_eq!(synced(&svc.core, have, full), (4, true, best.clone()), "a worker at version {have}");
    }
    assert_eq!(synced(&svc.core, 4, false), (4, false, Vec::new()));
    let ends = generation_ends(&run);
    let field = |k: &str| ends.iter().map(|l| l[k].clone()).collect::<Vec<_>>();
    assert_eq!(field("newbob"), ["accepted", "rolled_back"]);
    assert_eq!(field("rollback"), [false, true]);
    assert_eq!(field("eta"), [4.0, 64.0]);
    assert_eq!(field("eta_scale"), [1.0, 0.5]);
    let losses: Vec<f64> = field("test_loss").iter().map(|v| v.as_f64().unwrap()).collect();
    assert!(losses[1] > losses[0], "generation 1 made the held-out loss worse: {losses:?}");
    assert_eq!(field("best_test_loss"), [losses[0], losses[0]]);

    // A gradient computed on version 3 (before the rollback): stale, the shard is done again.
    let l = lease(&svc.core, &id);
    assert_eq!((l.shard_id, l.weights_version), (3, 4));
    let r = rt.block_on(push(&svc, chunks(&svc.core, &id, &l, 3, &work(&[(0, [1.0, 1.0])])))).unwrap();
    assert_eq!(r.outcome, Outcome::Stale as i32);
    assert_eq!((svc.core.totals().stale_pushes, svc.core.totals().merges), (1, 3));
    assert_eq!(svc.core.step_sizes(2).eta, 2.0, "η decayed: 4 × 0.5");

    // Generation 2 changes only a weight no held-out position uses: not better, the second
    // decay, converged; the best weights stay.
    let l2 = lease_and_push(&rt, &svc, &id, &[(0, [1.0, 1.0])]);
    assert_eq!((l2.shard_id, l2.attempt), (3, 2), "the same shard, leased again");
    let s = svc.core.generation_state();
    assert_eq!((s.newbob.decays, s.newbob.eta_scale, s.rolled_back_at), (2, 0.25, 6));
    assert_eq!(svc.core.weights_update(0, true).entries, best);
    assert!(svc.core.finished());
    assert_eq!(svc.core.lease(&id).state, v1::lease_reply::State::Finished as i32);
    let last = generation_ends(&run).pop().unwrap();
    assert_eq!((last["converged"].clone(), last["decays"].clone()), (true.into(), 2.into()));
}

#[test]
fn a_crash_in_a_generations_end_or_lost_checkpoints_end_in_the_same_state() {
    let rt = rt();
    let tmp = tmp("newbob-crash");
    let validation = tmp.path().join("val.psv.zst");
    validation_shard(&validation);
    let good = held_out_gradient(&newbob_config(&tmp.path().join("x"), &validation));
    let finish = |svc: &Service, id: &str| {
        lease_and_push(&rt, svc, id, &[(0, [1.0, 1.0])]);
    };

    // Reference: no crash.
    let reference = tmp.path().join("reference");
    let svc = Service { core: Arc::new(Core::create(newbob_config(&reference, &validation)).unwrap()) };
    let id = svc.core.register("a", 1);
    generation_0(&rt, &svc, &id, &good);
    generation_1(&rt, &svc, &id, &good);
    let after_rollback = snapshot(&svc.core);
    finish(&svc, &id);
    let end = snapshot(&svc.core);
    assert!(end.finished && end.version == 6, "{end:?}");
    drop(svc);

    // Crash after the rollback, while its checkpoint is written: the resumed run replays
    // generation 1's merge and ends the generation again, the same way.
    let run = tmp.path().join("crashed");
    let svc = Service { core: Arc::new(Core::create(newbob_config(&run, &validation)).unwrap()) };
    let id = svc.core.register("a", 1);
    generation_0(&rt, &svc, &id, &good);
    svc.core.faults().arm(FaultPlan {
        point: FaultPoint::CheckpointWeightsCopied,
        version: Some(4),
        action: FaultAction::Fail,
    });
    generation_1(&rt, &svc, &id, &good);
    assert_eq!(svc.core.totals().server_faults, 1, "the end's checkpoint failed");
    assert_eq!(svc.core.lease(&id).state, v1::lease_reply::State::Wait as i32, "nothing leased before it");
    drop(svc); // kill -9
    let (core, warnings) = Core::resume(&run, None).unwrap();
    assert!(warnings.iter().any(|w| w.contains("ended generation 1")), "{warnings:?}");
    assert_eq!(snapshot(&core), after_rollback);
    let svc = Service { core: Arc::new(core) };
    let id = svc.core.register("a", 1);
    finish(&svc, &id);
    assert_eq!(snapshot(&svc.core), end);

    // Lose every checkpoint after generation 0's end: the journal holds generation 1's
    // merge and generation 2's, and replay ends generation 1 between them.
    drop(svc);
    for v in [4, 6] {
        std::fs::remove_dir_all(checkpoint::dir(&run, v)).unwrap();
    }
    let (core, _) = Core::resume(&run, None).unwrap();
    assert_eq!(snapshot(&core), end);
}

#[test]
fn leases_ask_for_the_batch_pool_unless_deterministic() {
    for (deterministic, pool, expected) in [(false, None, 250_000), (false, Some(7), 7), (true, None, 0)] {
        let tmp = tmp("batch-pool");
        let run = tmp.path().join("run");
        let mut cfg = config(&run, "", "");
        cfg.deterministic = deterministic;
        if let Some(records) = pool {
            cfg.coordinator.batch_pool_records = records;
        }
        cfg.coordinator.batch_pool_draws = 2;
        let core = Core::create(cfg).unwrap();
        let id = core.register("a", 1);
        let l = lease(&core, &id);
        assert_eq!(l.batch_pool_records, expected, "deterministic {deterministic}, pool {pool:?}");
        assert_eq!(l.batch_pool_draws, 2, "the draws per record reach the lease");
    }
}
