//! The machine-readable outputs are a contract: tests parse them as JSON.

use std::process::Command;

fn keima(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_keima")).args(args).output().expect("run keima");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A printing command whose reader has gone ends as Unix tools do, killed by SIGPIPE,
/// instead of panicking ("failed printing to stdout", exit code 101).
#[cfg(unix)]
#[test]
fn printing_into_a_closed_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    for args in [&["moves", "--sfen", "startpos"][..], &["tune", "--list"]] {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let out =
            Command::new(env!("CARGO_BIN_EXE_keima")).args(args).stdout(writer).output().expect("run keima");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGPIPE),
            "{args:?}: status {:?}, stderr: {stderr}",
            out.status
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn perft_json() {
    let (code, out, _) = keima(&["perft", "--sfen", "startpos", "--depth", "3", "--json"]);
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["depth"], 3);
    assert_eq!(v["nodes"], 25_470);
    assert!(v["seconds"].as_f64().unwrap() >= 0.0);
}

#[test]
fn perft_divide_json_sums() {
    let (code, out, _) = keima(&["perft", "--depth", "2", "--divide", "--json"]);
    assert_eq!(code, 0);
    let v = json(&out);
    let parts = v["divide"].as_object().unwrap();
    assert_eq!(parts.len(), 30);
    assert_eq!(parts.values().map(|n| n.as_u64().unwrap()).sum::<u64>(), 900);
    assert_eq!(v["nodes"], 900);
}

#[test]
fn moves_json() {
    let (code, out, _) = keima(&["moves", "--sfen", "7lk/9/8S/9/9/9/9/7L1/8K b P 1", "--json"]);
    assert_eq!(code, 0);
    let moves = json(&out)["moves"].as_array().unwrap().clone();
    assert_eq!(moves.len(), 85);
    assert!(!moves.contains(&serde_json::Value::from("P*1b")), "pawn-drop mate must be excluded");
    assert!(moves.contains(&serde_json::Value::from("P*1d")));
}

#[test]
fn bad_sfen_is_a_clear_error() {
    let (code, out, err) = keima(&["moves", "--sfen", "lnsgkgsnl/9 b - 1"]);
    assert_ne!(code, 0);
    assert!(out.is_empty());
    assert!(err.contains("--sfen") && err.contains("ranks"), "{err}");
}

#[test]
fn eval_json_parts() {
    let (code, out, _) = keima(&["eval", "--sfen", "4k4/9/9/9/9/9/9/9/4K4 w R 1", "--json"]);
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["eval"], -990);
    assert_eq!(v["material"], -990);
    assert_eq!(v["kppt"], 0);
    assert_eq!(v["patterns"], 0);
}

/// Commands take positions the USI way: after 7g7f 3c3d 8h2b+ Black has won a bishop, and
/// White (to move) is a bishop down whichever form the position comes in.
#[test]
fn positions_are_taken_the_usi_way() {
    let forms = [
        "startpos moves 7g7f 3c3d 8h2b+",
        "position startpos moves 7g7f 3c3d 8h2b+",
        "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1 moves 7g7f 3c3d 8h2b+",
    ];
    for form in forms {
        let (code, out, err) = keima(&["eval", "--sfen", form, "--json"]);
        assert_eq!(code, 0, "{form}: {err}");
        let v = json(&out);
        assert!(v["material"].as_i64().unwrap() < -500, "{form}: {out}");
        let (code, out, err) = keima(&["moves", "--sfen", form, "--json"]);
        assert_eq!(code, 0, "{form}: {err}");
        assert!(json(&out)["moves"].as_array().unwrap().iter().any(|m| m == "8b2b"), "{form}: {out}");
    }
    let (code, _, err) = keima(&["eval", "--sfen", "startpos moves 7g7f 7g7f"]);
    assert_ne!(code, 0);
    assert!(err.contains("move 2 (7g7f)"), "{err}");
}

/// `keima eval` prints the same for a position given as moves from the start as for the
/// SFEN it reaches (so do `moves` and `perft`), and refuses a bad position with an error
/// naming the flag and what is wrong.
#[test]
fn eval_of_moves_equals_eval_of_the_sfen_reached() {
    let cases = [
        ("startpos moves 7g7f 3c3d", "lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3"),
        (
            "startpos moves 7g7f 3c3d 8h2b+",
            "lnsgkgsnl/1r5+B1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/7R1/LNSGKGSNL w B 4",
        ),
    ];
    for (moves, sfen) in cases {
        for command in
            [&["eval"][..], &["eval", "--json"], &["moves", "--json"], &["perft", "--depth", "2", "--json"]]
        {
            let run = |position: &str| {
                let (code, out, err) = keima(&[command, &["--sfen", position]].concat());
                assert_eq!(code, 0, "{command:?} {position}: {err}");
                // perft's timing is the one field that may differ.
                match serde_json::from_str::<serde_json::Value>(&out) {
                    Ok(mut v) if v.get("seconds").is_some() => {
                        v["seconds"] = serde_json::Value::Null;
                        v.to_string()
                    }
                    _ => out,
                }
            };
            assert_eq!(run(moves), run(sfen), "{command:?}: {moves} vs {sfen}");
            assert_eq!(run(moves), run(&format!("sfen {sfen}")), "{command:?}: {moves} vs sfen {sfen}");
        }
    }
    for (bad, needle) in [
        ("startpos moves 7g7f 5a5c", "move 2 (5a5c)"),
        ("startpos moves 7g7f 3c3", "move 2 (3c3)"),
        ("sfen lnsgkgsnl/1r5b1 b - 1", "ranks"),
        ("moves 7g7f", "expected `startpos`"),
    ] {
        let (code, out, err) = keima(&["eval", "--sfen", bad]);
        assert_ne!(code, 0, "{bad}: {out}");
        assert!(err.contains("--sfen") && err.contains(needle), "{bad}: {err}");
    }
}

#[test]
fn eval_with_missing_eval_dir_names_the_file() {
    let (code, _, err) = keima(&["eval", "--eval", "/nonexistent-keima-dir", "--json"]);
    assert_ne!(code, 0);
    assert!(err.contains("KK_synthesized.bin"), "{err}");
}

/// `bench depth --nodes`: a node budget per position makes the depth a property of the
/// search alone, so two runs agree exactly, and a larger budget never reaches less deep.
#[test]
fn bench_depth_at_a_node_budget_is_deterministic() {
    let records = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/records/pro/kifu09136.csa");
    let run = |nodes: &str| {
        let (code, out, err) = keima(&["bench", "depth", "--records", records, "--nodes", nodes, "--json"]);
        assert_eq!(code, 0, "{err}");
        json(&out)
    };
    let (a, b, big) = (run("4000"), run("4000"), run("40000"));
    assert_eq!(a["positions"], 6);
    assert_eq!(a["total_nodes"], b["total_nodes"]);
    assert_eq!(a["mean_depth"], b["mean_depth"]);
    assert_eq!(a["nodes_budget"], 4000);
    let total = a["total_nodes"].as_u64().unwrap();
    assert!(total > 6 * 2000 && total < 6 * 5000, "{total} nodes for 6 searches of 4000");
    assert!(big["mean_depth"].as_f64().unwrap() > a["mean_depth"].as_f64().unwrap(), "{a} {big}");
    let (code, _, err) = keima(&["bench", "depth", "--records", records, "--nodes", "0"]);
    assert_ne!(code, 0);
    assert!(err.contains("--nodes"), "{err}");
}

/// `bench depth --search-params`: the defaults written out search exactly as no list, another
/// reduction table searches differently, and a value out of range is refused by name.
#[test]
fn bench_depth_takes_the_search_parameters() {
    let records = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/records/pro/kifu09136.csa");
    let run = |params: &str| {
        let (code, out, err) = keima(&[
            "bench",
            "depth",
            "--records",
            records,
            "--nodes",
            "20000",
            "--search-params",
            params,
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let v = json(&out);
        (v["total_nodes"].clone(), v["mean_depth"].clone())
    };
    let default = run("");
    assert_eq!(run("lmr_scale=2167,rfp_margin=173"), default);
    assert_ne!(run("lmr_scale=1700,rfp_margin=300"), default);
    let (code, _, err) =
        keima(&["bench", "depth", "--records", records, "--search-params", "rfp_margin=99999"]);
    assert_ne!(code, 0);
    assert!(err.contains("rfp_margin"), "{err}");
}

/// `bench depth --print-usi` writes the suite as USI position lines that replay to the
/// positions searched: plies 40, 50, ..., 90 of the game.
#[test]
fn bench_depth_prints_its_positions_as_usi() {
    let records = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/records/pro/kifu09136.csa");
    let (code, out, err) = keima(&["bench", "depth", "--records", records, "--print-usi"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    for (line, plies) in lines.iter().zip([40, 50, 60, 70, 80, 90]) {
        let (sfen, moves) = line.strip_prefix("sfen ").and_then(|l| l.split_once(" moves ")).expect(line);
        let mut pos = engine_core::rules::Position::from_sfen(sfen).expect(sfen);
        let moves: Vec<&str> = moves.split_whitespace().collect();
        assert_eq!(moves.len(), plies);
        for m in moves {
            let mv = pos.legal_moves().iter().copied().find(|x| x.to_string() == m);
            pos.do_move(mv.unwrap_or_else(|| panic!("{m} is not legal in {}", pos.to_sfen())));
        }
    }
}

/// `consult-stats` on a real game: without noise every player searches alike (one distinct
/// move, GogiScat(1) = 0, the players agree with the record exactly when the consultation
/// does); with a large noise the players disagree somewhere.
#[test]
fn consult_stats_measures_diversity() {
    let records = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/records/pro/kifu09136.csa");
    let run = |noise: &str| {
        let args = [
            "consult-stats",
            "--records",
            records,
            "--players",
            "4",
            "--noise",
            noise,
            "--nodes",
            "300",
            "--min-ply",
            "30",
            "--max-positions",
            "12",
            "--json",
        ];
        let (code, out, err) = keima(&args);
        assert_eq!(code, 0, "{err}");
        json(&out)
    };
    let same = run("0");
    assert_eq!(same["positions"], 12);
    assert_eq!(same["players"], 4);
    assert_eq!(same["mean_distinct_moves"], 1.0);
    assert_eq!(same["gogi_scat"][0], 0.0);
    assert_eq!(same["consult_agreement"], same["player_agreement"]);
    let noisy = run("3000");
    assert!(noisy["mean_distinct_moves"].as_f64().unwrap() > 1.0, "{noisy}");
    assert!(noisy["gogi_scat"][0].as_f64().unwrap() > 0.0, "{noisy}");
    let (code, _, err) = keima(&["consult-stats", "--records", records, "--consultation", "evals"]);
    assert_ne!(code, 0);
    assert!(err.contains("--eval-dir"), "{err}");
}
