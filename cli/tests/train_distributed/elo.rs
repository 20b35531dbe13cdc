//! `keima train` with `[elo]`, end to end with local workers: the last checkpoint is
//! exported and played against material by match shards, and its Elo line (4 games) is in
//! `metrics.jsonl` with the training CPU-hours; `keima plot` draws it.

use super::*;

/// The run's metrics lines and its one Elo line, of version 2 and `games` games, whose
/// W/D/L and game pairs add up.
fn the_elo_line(run: &Path, games: u64) -> (Vec<serde_json::Value>, serde_json::Value) {
    let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = metrics.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let elo: Vec<&serde_json::Value> = lines.iter().filter(|l| l.get("elo").is_some()).collect();
    assert_eq!(elo.len(), 1, "{metrics}");
    let e = elo[0].clone();
    assert_eq!((e["version"].as_u64(), e["games"].as_u64()), (Some(2), Some(games)), "{e}");
    let wdl: u64 = ["wins", "draws", "losses"].iter().map(|k| e[k].as_u64().unwrap()).sum();
    assert_eq!(wdl, games, "{e}");
    let pairs: u64 = e["pentanomial"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum();
    assert_eq!(pairs, games / 2, "{e}");
    (lines, e)
}

#[test]
fn the_last_checkpoint_is_matched_and_its_elo_line_written() {
    let tmp = tmp("elo");
    let d = tmp.path();
    let run = d.join("run");
    let openings = d.join("openings.sfen");
    std::fs::write(&openings, "startpos moves 7g7f 3c3d 2g2f\nstartpos moves 2g2f 8c8d 7g7f\n").unwrap();
    let cfg = d.join("elo.toml");
    std::fs::write(
        &cfg,
        format!(
            "run_dir = {run:?}\nseed = 3\n{LEARN_KEYS}[selfplay]\nshards = 2\ngames_per_shard = 1\n\
             limit = {{ nodes = 150 }}\nrandom_moves = 8\nmax_ply = 60\n[elo]\nevery = 2\ngames = 4\n\
             games_per_shard = 2\nnodes = 200\nmax_ply = 80\nopenings = {openings:?}\n\
             [coordinator]\nlisten = \"127.0.0.1:0\"\nmetrics_listen = \"\"\ncheckpoint_every = 100\n\
             keep_teacher_records = false\nexport = false\n[local_workers]\ncount = 2\nthreads = 1\n"
        ),
    )
    .unwrap();
    let out = run_ok(&["train", "--config", s(&cfg), "--quiet"]);
    assert!(out.starts_with("done: 4/4 shards"), "two training and two match shards: {out}");

    let (lines, e) = the_elo_line(&run, 4);
    let e = &e;
    assert_eq!(e["baseline"], "material");
    assert!(e["cpu_hours"].as_f64().unwrap() > 0.0, "training CPU before the matches: {e}");
    assert!(e["match_cpu_hours"].as_f64().unwrap() > 0.0, "{e}");
    assert!(run.join("elo/v000000000002/KPP_synthesized.bin").is_file());
    // Every training metrics line carries the CPU-hours, the last one the match CPU too.
    let last = lines.last().unwrap();
    assert!(last["cpu_hours"].as_f64().unwrap() >= e["cpu_hours"].as_f64().unwrap(), "{last}");
    assert_eq!(last["match_cpu_hours"], e["match_cpu_hours"], "{last}");
    // `keima plot` draws the point's interval in the Elo panel, against CPU-hours.
    let svg = d.join("metrics.svg");
    run_ok(&["plot", s(&run.join("metrics.jsonl")), "--out", s(&svg)]);
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains(r#"class="elo-interval" data-version="2""#), "{svg}");
    assert!(svg.contains("CPU-hours</text>") && svg.contains("Elo against material"), "{svg}");
}

/// `[elo] baseline = { usi = NAME }`: the local worker declares NAME as `keima usi` itself
/// (the keima binary as an "external" engine: the mechanism is the same for GPS Shogi), the
/// checkpoint plays it as a USI process too, both under a 50 ms byoyomi.
#[test]
fn a_usi_engine_declared_by_the_workers_is_the_baseline() {
    let tmp = tmp("elo-usi");
    let d = tmp.path();
    let run = d.join("run");
    let openings = d.join("openings.sfen");
    std::fs::write(&openings, "startpos moves 7g7f 3c3d 2g2f\n").unwrap();
    let keima = env!("CARGO_BIN_EXE_keima");
    let cfg = d.join("elo-usi.toml");
    std::fs::write(
        &cfg,
        format!(
            "run_dir = {run:?}\nseed = 3\n{LEARN_KEYS}[selfplay]\nshards = 2\ngames_per_shard = 1\n\
             limit = {{ nodes = 150 }}\nrandom_moves = 8\nmax_ply = 60\n[elo]\nevery = 2\ngames = 2\n\
             games_per_shard = 2\nbaseline = {{ usi = \"selfcopy\" }}\nbyoyomi_ms = 50\nmax_ply = 40\n\
             openings = {openings:?}\n\
             [coordinator]\nlisten = \"127.0.0.1:0\"\nmetrics_listen = \"\"\ncheckpoint_every = 100\n\
             keep_teacher_records = false\nexport = false\n[local_workers]\ncount = 1\nthreads = 1\n\
             [local_workers.usi_engines.selfcopy]\ncommand = \"{keima} usi\"\n\
             options = {{ Threads = \"1\", Hash = \"16\" }}\n"
        ),
    )
    .unwrap();
    let out = run_ok(&["train", "--config", s(&cfg), "--quiet"]);
    assert!(out.starts_with("done: 3/3 shards"), "two training shards and one match shard: {out}");

    let (_, e) = the_elo_line(&run, 2);
    assert_eq!(e["baseline"], "usi:selfcopy", "{e}");
    // Counted per side (a loaded machine may make either lose a game on time).
    let time_losses = e["time_losses"].as_u64().unwrap() + e["baseline_time_losses"].as_u64().unwrap();
    assert!(time_losses <= 2, "{e}");
    assert!(e["match_cpu_hours"].as_f64().unwrap() > 0.0, "the engines' CPU is counted: {e}");
}
