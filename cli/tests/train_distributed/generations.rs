//! `keima train` with a schedule of two generations and newbob, end to end with local
//! workers: the second generation's shards are merged after all of the first's, each
//! searched with its generation's limit, and each generation's end is in `metrics.jsonl`
//! with its η and newbob's decision.

use super::*;

#[test]
fn two_generations_with_newbob_run_in_turn_and_record_their_ends() {
    let tmp = tmp("generations");
    let d = tmp.path();
    let validation = teacher_data(d, "2");
    let run = d.join("run");
    let cfg = d.join("generations.toml");
    std::fs::write(
        &cfg,
        format!(
            "run_dir = {run:?}\nseed = 3\n{LEARN_KEYS}[validation]\nshard = {validation:?}\nmax_records = 200\n\
             depth = 0\n[selfplay]\nshards = 2\ngames_per_shard = 1\nlimit = {{ nodes = 150 }}\nrandom_moves = 8\n\
             max_ply = 60\n[[generation]]\n[[generation]]\nshards = 2\nlimit = {{ nodes = 300 }}\neta = 1.5\n\
             [newbob]\ndecay = 0.5\nmax_decays = 4\n[coordinator]\nlisten = \"127.0.0.1:0\"\nmetrics_listen = \"\"\n\
             checkpoint_every = 100\nkeep_teacher_records = false\nexport = false\n[local_workers]\ncount = 2\nthreads = 1\n"
        ),
    )
    .unwrap();
    let out = run_ok(&["train", "--config", s(&cfg), "--quiet"]);
    assert!(out.starts_with("done: 4/4 shards"), "{out}");

    let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    let ends: Vec<serde_json::Value> = metrics
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["generation_end"] == true)
        .collect();
    assert_eq!(ends.len(), 2, "{metrics}");
    assert_eq!((ends[0]["generation"].clone(), ends[0]["eta"].clone()), (0.into(), 3.0.into()));
    assert_eq!((ends[1]["generation"].clone(), ends[1]["eta"].clone()), (1.into(), 1.5.into()));
    assert_eq!(ends[0]["newbob"], "accepted", "the first generation is always accepted");
    let rolled_back = ends[1]["rollback"] == true;
    let (loss0, loss1) = (ends[0]["test_loss"].as_f64().unwrap(), ends[1]["test_loss"].as_f64().unwrap());
    assert_eq!(rolled_back, loss1 >= loss0, "newbob's decision follows the held-out losses {loss0}, {loss1}");
    assert_eq!(ends[1]["eta_scale"], if rolled_back { 0.5 } else { 1.0 });

    let state = last_state(&run);
    // Four merges, and the rollback's version if there was one.
    assert_eq!(state["weights_version"], if rolled_back { 5 } else { 4 });
    let best = state["generations"]["best_version"].as_u64().unwrap();
    assert_eq!(best, if rolled_back { 2 } else { 4 });
    assert!(run.join(format!("best/checkpoints/ckpt-{best:012}/weights.kw")).is_file());
    // The barrier: every shard of generation 1 merged after every shard of generation 0,
    // and searched with its generation's limit.
    let mut last_of_0 = 0;
    let mut first_of_1 = u64::MAX;
    for shard in state["queue"]["shards"].as_array().unwrap() {
        let generation = shard["generation"].as_u64().unwrap();
        let seq = shard["state"]["done"]["merge_seq"].as_u64().unwrap();
        let nodes = shard["spec"]["self_play"]["search"]["limit"]["nodes"].as_u64().unwrap();
        assert_eq!(nodes, [150, 300][generation as usize], "shard {}", shard["id"]);
        if generation == 0 {
            last_of_0 = last_of_0.max(seq);
        } else {
            first_of_1 = first_of_1.min(seq);
        }
    }
    assert!(last_of_0 < first_of_1, "generation 1 merged from {first_of_1}, generation 0 until {last_of_0}");
}
