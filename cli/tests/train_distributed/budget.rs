//! `cpu_hours`: a run with far more shards than its CPU budget allows ends by itself at the
//! budget, as a run whose shards are done ends: the final checkpoint is matched (`[elo]`)
//! and exported, and the summary says the budget ended it.

use super::*;

#[test]
fn a_run_ends_at_its_cpu_budget_with_its_final_checkpoint_matched() {
    let tmp = tmp("budget");
    let d = tmp.path();
    let run = d.join("run");
    let openings = d.join("openings.sfen");
    std::fs::write(&openings, "startpos moves 7g7f 3c3d 2g2f\nstartpos moves 2g2f 8c8d 7g7f\n").unwrap();
    let cfg = d.join("budget.toml");
    // 3 CPU-seconds; 500 shards would take minutes.
    std::fs::write(
        &cfg,
        format!(
            "run_dir = {run:?}\nseed = 3\ncpu_hours = {}\n{LEARN_KEYS}[selfplay]\nshards = 500\n\
             games_per_shard = 1\nlimit = {{ nodes = 300 }}\nrandom_moves = 8\nmax_ply = 60\n\
             [elo]\nevery = 2\ngames = 2\ngames_per_shard = 2\nnodes = 200\nmax_ply = 80\n\
             openings = {openings:?}\n[coordinator]\nlisten = \"127.0.0.1:0\"\nmetrics_listen = \"\"\n\
             checkpoint_every = 100\nkeep_teacher_records = false\nexport = true\n\
             [local_workers]\ncount = 2\nthreads = 1\n",
            3.0 / 3600.0
        ),
    )
    .unwrap();
    let out = run_ok(&["train", "--config", s(&cfg), "--quiet"]);
    assert!(out.starts_with("done (CPU budget reached): "), "{out}");
    let merged: u64 = out["done (CPU budget reached): ".len()..].split('/').next().unwrap().parse().unwrap();
    assert!((2..500).contains(&merged), "training shards merged and the match shard: {out}");
    assert!(out.contains("; eval "), "exported: {out}");

    let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = metrics.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let last = lines.last().unwrap();
    let spent = last["cpu_hours"].as_f64().unwrap() + last["match_cpu_hours"].as_f64().unwrap();
    assert!(spent * 3600.0 >= 3.0, "stopped at the budget, not before: {last}");
    // The final version is the one matched.
    let elo: Vec<&serde_json::Value> = lines.iter().filter(|l| l.get("elo").is_some()).collect();
    assert_eq!(elo.len(), 1, "{metrics}");
    assert_eq!(elo[0]["version"].as_u64(), Some(merged - 1), "{metrics}");
    assert_eq!(elo[0]["games"].as_u64(), Some(2), "{metrics}");
}
