//! `keima match` with keima against itself: a short, fast match that writes CSA records.

use engine_core::records::csa::csa_piece;
use engine_core::records::{Outcome, load_file};
use engine_core::rules::{PieceType, Position, Square};
use std::process::Command;

/// A fresh directory, removed when the returned guard drops.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("keima-{name}-")).tempdir_in(std::env::temp_dir()).unwrap()
}

fn square(file: u8, rank: u8) -> Square {
    Square::new(file - b'1', rank - b'1')
}

/// Replays a CSA record written by `keima match` (standard start `PI`, moves, end) and
/// returns the number of moves. A minimal reader for this test only, independent of
/// `engine_core::records` (which the test also uses).
fn replay_csa(text: &str) -> usize {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("V2.2"));
    let mut pos: Option<Position> = None;
    let mut moves = 0;
    let mut ended = false;
    for line in lines {
        if line == "PI" {
            pos = Some(Position::startpos());
        } else if line.starts_with("N+") || line.starts_with("N-") || line.starts_with('$') {
        } else if line == "+" || line == "-" {
            assert_eq!(line == "+", pos.unwrap().side_to_move() == engine_core::rules::Color::Black);
        } else if (line.starts_with('+') || line.starts_with('-')) && line.len() == 7 {
            let p = pos.as_mut().expect("position before moves");
            let b = line.as_bytes();
            let to = square(b[3], b[4]);
            let piece = &line[5..7];
            let usi = if &line[1..3] == "00" {
                let pt = PieceType::HAND.into_iter().find(|&pt| csa_piece(pt) == piece).expect("hand piece");
                format!("{}*{to}", pt.sfen_char())
            } else {
                let from = square(b[1], b[2]);
                let before = csa_piece(p.piece_on(from).piece_type());
                format!("{from}{to}{}", if before == piece { "" } else { "+" })
            };
            let m = p.parse_usi_move(&usi).unwrap_or_else(|e| panic!("{line} ({usi}): {e}"));
            assert_eq!(csa_piece(m.moved_piece_after().piece_type()), piece, "{line}");
            p.do_move(m);
            moves += 1;
        } else if let Some(secs) = line.strip_prefix('T') {
            secs.parse::<u64>().expect("T seconds");
        } else if line.starts_with('%') {
            ended = true;
        } else {
            assert!(line.starts_with('\''), "unexpected line {line:?}");
        }
    }
    assert!(ended, "no end line");
    moves
}

#[test]
fn match_self() {
    let tmp = temp_dir("match");
    let dir = tmp.path();
    let openings = dir.join("openings.sfen");
    std::fs::write(
        &openings,
        "startpos moves 7g7f 8c8d 7i6h 3c3d 6g6f 7a6b\n\
         startpos moves 2g2f 3c3d 7g7f 4c4d\n",
    )
    .unwrap();
    let out = dir.join("records");
    let output = Command::new(env!("CARGO_BIN_EXE_keima"))
        .args(["match", "--engine1", "self", "--engine2", "self", "--games", "4", "--nodes", "300"])
        .args(["--max-plies", "60", "--concurrency", "2", "--json"])
        .args(["--option1", "Hash=4", "--option2", "Hash=4"])
        .arg("--openings")
        .arg(&openings)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    // The same summary is written beside the records.
    let written = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert_eq!(serde_json::from_str::<serde_json::Value>(&written).unwrap(), v);
    assert_eq!(v["finished"], true);
    let count = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    assert_eq!(count("wins") + count("draws") + count("losses"), 4, "{v}");
    assert_eq!(count("games"), 4);
    assert!(v["elo"].is_number() || v["elo"].is_string(), "{v}");
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["opening"].as_u64(), Some(i as u64 / 2));
        assert_eq!(r["engine1_color"], if i % 2 == 0 { "black" } else { "white" });
    }
    for g in 1..=4 {
        let path = out.join(format!("game_{g:04}.csa"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let plies = replay_csa(&text);
        assert!((4..=60).contains(&plies), "{plies} plies in {}", path.display());
        let r = &results[g - 1];
        assert_eq!(plies as u64, r["plies"].as_u64().unwrap());
        // The project's CSA parser reads the file, replays it and finds the same result.
        let games = load_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(games.len(), 1);
        let rec = &games[0];
        assert_eq!(rec.moves.len(), plies);
        assert!(rec.start == Position::startpos());
        assert!(rec.black_name.is_some() && rec.white_name.is_some());
        let engine1_black = r["engine1_color"] == "black";
        let expected = match r["result"].as_str().unwrap() {
            "draw" => Outcome::Draw,
            "win" if engine1_black => Outcome::BlackWin,
            "loss" if !engine1_black => Outcome::BlackWin,
            _ => Outcome::WhiteWin,
        };
        assert_eq!(rec.result.outcome, expected, "{}", path.display());
    }
}

#[test]
fn match_rejects_bad_options() {
    let tmp = temp_dir("match-bad");
    let dir = tmp.path();
    let output = Command::new(env!("CARGO_BIN_EXE_keima"))
        .args(["match", "--engine1", "self", "--engine2", "self", "--games", "2", "--nodes", "10"])
        .args(["--option1", "NoEquals", "--out"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("NAME=VALUE"));
    // An eval directory Keima cannot load would have it play material only: refused by name,
    // before any game, and no record written.
    let missing = dir.join("no-eval-here");
    let output = Command::new(env!("CARGO_BIN_EXE_keima"))
        .args(["match", "--engine1", "self", "--engine2", "self", "--games", "2", "--nodes", "10"])
        .arg("--option2")
        .arg(format!("EvalDir={}", missing.display()))
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{err}");
    assert!(err.contains("--option2 EvalDir=") && err.contains("no-eval-here"), "{err}");
    assert!(!dir.join("out").exists());
}

/// Runs `keima match` with `args` plus `--out DIR --json`; returns the parsed summary.
fn run_match(args: &[&str], out: &std::path::Path) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_keima"))
        .arg("match")
        .args(args)
        .arg("--out")
        .arg(out)
        .arg("--json")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{args:?}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// A stand-in USI engine (a POSIX shell script) that answers every `go` the same way:
/// `resign`, an illegal move, never, or `resign` after 0.3 s (`slow`). Deterministic, so
/// the match's bookkeeping can be checked against known results.
#[cfg(unix)]
fn fake_engine(dir: &std::path::Path, mode: &str) -> String {
    let script = dir.join("fake_engine.sh");
    std::fs::write(
        &script,
        "while read -r line; do\n\
           case \"$line\" in\n\
             usi) echo \"id name fake-$1\"; echo usiok ;;\n\
             isready) echo readyok ;;\n\
             go*) case \"$1\" in resign) echo 'bestmove resign' ;; illegal) echo 'bestmove 5e5d' ;;\n\
               slow) sleep 0.3; echo 'bestmove resign' ;; esac ;;\n\
             quit) exit 0 ;;\n\
           esac\n\
         done\n",
    )
    .unwrap();
    format!("sh {} {mode}", script.display())
}

#[test]
fn match_sprt_self() {
    let tmp = temp_dir("match-sprt");
    let openings = tmp.path().join("openings.sfen");
    std::fs::write(
        &openings,
        "startpos moves 7g7f 8c8d 7i6h 3c3d 6g6f 7a6b\nstartpos moves 2g2f 3c3d 7g7f 4c4d\n\
         startpos moves 7g7f 3c3d 2g2f\n",
    )
    .unwrap();
    let v = run_match(
        &["--engine1", "self", "--engine2", "self", "--games", "20", "--nodes", "300", "--sprt", "-50,50"]
            .into_iter()
            .chain(["--max-plies", "60", "--concurrency", "2", "--option1", "Hash=4", "--option2", "Hash=4"])
            .chain(["--openings", openings.to_str().unwrap()])
            .collect::<Vec<_>>(),
        &tmp.path().join("records"),
    );
    let sprt = &v["sprt"];
    let llr = sprt["llr"].as_f64().unwrap_or_else(|| panic!("llr in {v}"));
    assert!(llr.is_finite());
    assert_eq!((sprt["elo0"].as_f64(), sprt["elo1"].as_f64()), (Some(-50.0), Some(50.0)));
    assert_eq!((sprt["alpha"].as_f64(), sprt["beta"].as_f64()), (Some(0.05), Some(0.05)));
    assert!((sprt["upper_bound"].as_f64().unwrap() - 19f64.ln()).abs() < 1e-9);
    let counts: Vec<u64> = v["pentanomial"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect();
    let pairs = v["pairs"].as_u64().unwrap();
    assert_eq!(counts.iter().sum::<u64>(), pairs, "{v}");
    assert_eq!(v["games"].as_u64().unwrap(), 2 * pairs, "{v}");
    assert_eq!(v["results"].as_array().unwrap().len() as u64, 2 * pairs);
    // The pentanomial is the pairs' scores: recompute it from the per-game results.
    let results = v["results"].as_array().unwrap();
    let mut recount = [0u64; 5];
    for pair in results.chunks(2) {
        let half_points = |r: &serde_json::Value| match r["result"].as_str().unwrap() {
            "win" => 2,
            "draw" => 1,
            _ => 0,
        };
        assert_eq!(pair[0]["opening"], pair[1]["opening"]);
        recount[half_points(&pair[0]) + half_points(&pair[1])] += 1;
    }
    assert_eq!(recount.to_vec(), counts);
    match sprt["result"].as_str().unwrap() {
        "inconclusive" => assert_eq!(pairs, 10, "{v}"),
        "H0 accepted" | "H1 accepted" => assert!(sprt["decided_after_pairs"].as_u64().unwrap() <= pairs),
        other => panic!("result {other:?}"),
    }
    assert_eq!(v["time_losses"], serde_json::json!({"engine1": 0, "engine2": 0}));
}

/// A match killed while it plays leaves the counts of its finished games in summary.json,
/// marked unfinished, which `keima match-stats` adds up like any batch.
#[cfg(unix)]
#[test]
fn a_killed_match_leaves_its_counts_so_far() {
    let tmp = temp_dir("match-killed");
    let slow_resigner = fake_engine(tmp.path(), "slow");
    let out = tmp.path().join("records");
    let mut child = Command::new(env!("CARGO_BIN_EXE_keima"))
        .args(["match", "--engine1", "self", "--engine2", &slow_resigner, "--games", "200", "--nodes", "100"])
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let summary = out.join("summary.json");
    let started = std::time::Instant::now();
    let read = || -> Option<serde_json::Value> {
        serde_json::from_str(&std::fs::read_to_string(&summary).ok()?).ok()
    };
    while read().is_none_or(|v| v["games"].as_u64() < Some(4)) {
        assert!(started.elapsed().as_secs() < 60, "no summary of 4 games after 60 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let v = read().expect("the summary is whole: written atomically");
    assert_eq!(v["finished"], false, "{v}");
    let games = v["games"].as_u64().unwrap();
    assert!((4..200).contains(&games), "{v}");
    // engine2 resigns every game.
    assert_eq!(v["wins"].as_u64(), Some(games), "{v}");
    assert_eq!(v["pentanomial"][4].as_u64(), Some(games / 2), "{v}");
    assert!(v.get("results").is_none(), "{v}");
    let o = match_stats(&[&out], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("(unfinished: its games so far)"));
}

#[cfg(unix)]
#[test]
fn match_sprt_stops_when_decided() {
    // engine2 resigns every game: every pair is 2-0 for engine1. The LLR is past the
    // upper bound from the second pair on, but the test decides nothing before 20 pairs
    // (engine_core::play::sprt::MIN_PAIRS), so the match stops after 40 of at most 60 games
    // with H1 accepted and LLR 762.27 (20.005 weighted pairs, μ ≈ 0.99988).
    let tmp = temp_dir("match-sprt-stop");
    let resigner = fake_engine(tmp.path(), "resign");
    let v = run_match(
        &["--engine1", "self", "--engine2", &resigner, "--games", "60", "--nodes", "100", "--sprt", "0,5"],
        &tmp.path().join("records"),
    );
    assert_eq!(v["games"], 40, "{v}");
    assert_eq!(v["wins"], 40);
    assert_eq!(v["pentanomial"], serde_json::json!([0, 0, 0, 0, 20]));
    assert_eq!(v["sprt"]["result"], "H1 accepted");
    assert_eq!(v["sprt"]["decided_after_pairs"], 20);
    assert!((v["sprt"]["llr"].as_f64().unwrap() - 762.269_454_845_742_9).abs() < 1e-6, "{v}");
    assert_eq!(v["engine2"], "fake-resign");
}

/// summary.json records the command line and the settings that order the openings, so a
/// run can be played again from its directory alone: the same openings in the same order.
#[cfg(unix)]
#[test]
fn a_match_is_played_again_from_its_summary() {
    let tmp = temp_dir("match-again");
    let openings = tmp.path().join("openings.sfen");
    let lines: Vec<String> =
        ["7g7f", "2g2f", "5g5f", "6g6f", "1g1f"].iter().map(|m| format!("startpos moves {m}")).collect();
    std::fs::write(&openings, lines.join("\n")).unwrap();
    let resigner = fake_engine(tmp.path(), "resign");
    let first = tmp.path().join("first");
    let v = run_match(
        &["--engine1", &resigner, "--engine2", &resigner, "--games", "10", "--nodes", "10", "--seed", "11"]
            .into_iter()
            .chain(["--option1", "Hash=4", "--openings", openings.to_str().unwrap()])
            .collect::<Vec<_>>(),
        &first,
    );
    let run = &v["run"];
    assert_eq!(run["seed"], 11, "{v}");
    assert_eq!(run["openings"], openings.to_str().unwrap());
    assert_eq!(run["option1"], serde_json::json!(["Hash=4"]));
    assert_eq!(run["option2"], serde_json::json!([]));
    assert_eq!((run["opening_start"].as_u64(), run["max_plies"].as_u64()), (Some(0), Some(256)));
    let order = |v: &serde_json::Value| -> Vec<String> {
        let results = v["results"].as_array().unwrap();
        results.iter().map(|r| r["opening_position"].as_str().unwrap().to_string()).collect()
    };
    let shuffled = order(&v);
    let in_file_order: Vec<String> = lines.iter().flat_map(|l| [l.clone(), l.clone()]).collect();
    assert_ne!(shuffled, in_file_order, "seed 11 should change the order");
    let mut sorted = shuffled.clone();
    sorted.sort();
    let mut expected = in_file_order.clone();
    expected.sort();
    assert_eq!(sorted, expected, "each opening once per pair");
    // Again from the recorded command line, into another directory.
    let mut argv: Vec<String> =
        run["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
    let out_at = argv.iter().position(|a| a == "--out").expect("--out in argv") + 1;
    let second = tmp.path().join("second");
    argv[out_at] = second.to_str().unwrap().to_string();
    let output = Command::new(env!("CARGO_BIN_EXE_keima")).args(&argv).output().unwrap();
    assert!(output.status.success(), "{argv:?}: {}", String::from_utf8_lossy(&output.stderr));
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(second.join("summary.json")).unwrap()).unwrap();
    assert_eq!(order(&again), shuffled);
    assert_eq!(again["run"]["seed"], 11);
}

/// An argument that is not UTF-8 (here the `--out` path) is recorded lossily, not a panic.
#[cfg(unix)]
#[test]
fn a_match_records_an_argument_that_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = temp_dir("match-not-utf8");
    let resigner = fake_engine(tmp.path(), "resign");
    let out = tmp.path().join(std::ffi::OsStr::from_bytes(b"out-\xff"));
    let output = Command::new(env!("CARGO_BIN_EXE_keima"))
        .args(["match", "--engine1", &resigner, "--engine2", &resigner, "--games", "2", "--nodes", "10"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let argv = v["run"]["argv"].as_array().unwrap();
    assert!(argv.iter().any(|a| a.as_str().unwrap().ends_with("out-\u{fffd}")), "{argv:?}");
}

#[cfg(unix)]
#[test]
fn match_counts_illegal_moves_and_time_losses() {
    // Game 1: engine1 (Black) plays an illegal move. Game 2: engine2 (Black) never answers
    // `go` and loses on time once 100 ms byoyomi + 100 ms margin pass.
    let tmp = temp_dir("match-faults");
    let (illegal_dir, silent_dir) = (tmp.path().join("a"), tmp.path().join("b"));
    std::fs::create_dir_all(&illegal_dir).unwrap();
    std::fs::create_dir_all(&silent_dir).unwrap();
    let illegal = fake_engine(&illegal_dir, "illegal");
    let silent = fake_engine(&silent_dir, "silent");
    let out = tmp.path().join("records");
    let v = run_match(
        &[
            "--engine1",
            &illegal,
            "--engine2",
            &silent,
            "--games",
            "2",
            "--byoyomi",
            "100",
            "--time-margin",
            "100",
        ],
        &out,
    );
    assert_eq!(v["illegal_moves"], serde_json::json!({"engine1": 1, "engine2": 0}), "{v}");
    assert_eq!(v["time_losses"], serde_json::json!({"engine1": 0, "engine2": 1}), "{v}");
    assert_eq!(v["crashes"], serde_json::json!({"engine1": 0, "engine2": 0}));
    let results = v["results"].as_array().unwrap();
    assert_eq!((&results[0]["end"], &results[0]["result"]), (&"%ILLEGAL_MOVE".into(), &"loss".into()));
    assert_eq!((&results[1]["end"], &results[1]["result"]), (&"%TIME_UP".into(), &"win".into()));
    assert!(results[0]["note"].as_str().unwrap().starts_with("engine1 played \"5e5d\""), "{v}");
    assert!(results[1]["note"].as_str().unwrap().starts_with("engine2: timeout"), "{v}");
    assert_eq!(v["pentanomial"], serde_json::json!([0, 0, 1, 0, 0]));
    assert_eq!(v["limit"], "byoyomi 100 ms");
    let csa = std::fs::read_to_string(out.join("game_0002.csa")).unwrap();
    assert!(csa.contains("%TIME_UP\n"), "{csa}");
}

#[cfg(unix)]
#[test]
fn match_reports_each_engines_time_to_answer() {
    // engine2 takes 0.3 s to resign, three times its 100 ms byoyomi but inside the
    // 1,000 ms margin: no time loss, yet every answer counts as past the limit. It resigns
    // at its first turn, so it answers once a game; engine1 moves once, in the game where
    // it is Black.
    let tmp = temp_dir("match-think");
    let slow = fake_engine(tmp.path(), "slow");
    let v = run_match(
        &[
            "--engine1",
            "self",
            "--engine2",
            &slow,
            "--games",
            "2",
            "--byoyomi",
            "100",
            "--time-margin",
            "1000",
        ],
        &tmp.path().join("records"),
    );
    assert_eq!(v["wins"], 2, "{v}");
    assert_eq!(v["time_losses"], serde_json::json!({"engine1": 0, "engine2": 0}), "{v}");
    let (t1, t2) = (&v["think_time"]["engine1"], &v["think_time"]["engine2"]);
    assert_eq!((t1["answers"].as_u64(), t2["answers"].as_u64()), (Some(1), Some(2)), "{v}");
    assert_eq!(t2["over_limit"], 2, "{v}");
    let mean2 = t2["mean_ms"].as_f64().unwrap();
    assert!((300.0..1100.0).contains(&mean2), "{v}");
    assert!(t2["max_ms"].as_u64().unwrap() >= 300, "{v}");
    assert!(t1["max_ms"].as_u64().unwrap() < 1100, "{v}");
}

#[test]
fn match_with_a_clock() {
    let tmp = temp_dir("match-tc");
    let out = tmp.path().join("records");
    let v = run_match(
        &["--engine1", "self", "--engine2", "self", "--games", "2", "--tc", "2+0.1", "--max-plies", "40"]
            .into_iter()
            .chain(["--option1", "Hash=4", "--option2", "Hash=4"])
            .collect::<Vec<_>>(),
        &out,
    );
    assert_eq!(v["games"], 2, "{v}");
    assert_eq!(v["limit"], "2+0.1 s");
    assert_eq!(v["time_losses"], serde_json::json!({"engine1": 0, "engine2": 0}), "{v}");
    assert_eq!(v["illegal_moves"], serde_json::json!({"engine1": 0, "engine2": 0}), "{v}");
    for (g, r) in v["results"].as_array().unwrap().iter().enumerate() {
        let text = std::fs::read_to_string(out.join(format!("game_{:04}.csa", g + 1))).unwrap();
        let plies = replay_csa(&text) as u64;
        assert_eq!(plies, r["plies"].as_u64().unwrap());
        // Every move has its time, and the record names the time control.
        assert_eq!(text.lines().filter(|l| l.starts_with('T')).count() as u64, plies, "{text}");
        assert!(text.contains("'time control 2+0.1 s; main time left: engine1 "), "{text}");
        // Each engine's clock: 2000 ms + 100 ms per own move, minus the (positive) time used.
        let engine1_black = r["engine1_color"] == "black";
        for (engine, key) in [(0, "engine1"), (1, "engine2")] {
            let black = (engine == 0) == engine1_black;
            let moves = if black { plies.div_ceil(2) } else { plies / 2 };
            let left = r["clock_ms"][key].as_u64().unwrap_or_else(|| panic!("clock_ms in {r}"));
            assert!(left < 2000 + 100 * moves, "{key}: {left} ms left after {moves} moves: {r}");
        }
    }
}

#[test]
fn match_rejects_bad_limits() {
    let tmp = temp_dir("match-bad-limits");
    for (args, needle) in [
        (&["--sprt", "5"][..], "ELO0,ELO1 or ELO0,ELO1,ALPHA,BETA"),
        (&["--sprt", "5,0"], "ELO0 (5) must be below ELO1 (0)"),
        (&["--sprt", "0,5,1.5,0.05"], "ALPHA must be strictly between 0 and 1"),
        (&["--sprt", "0,nan"], "ELO1 must be a number"),
        (&["--sprt", "0,5", "--games", "3"], "--games 3: --sprt counts game pairs"),
        (&["--tc", "10"], "expected T+I"),
        (&["--tc", "-1+0"], "main time must be between 0"),
        (&["--tc", "0+0"], "the clock gives no time"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_keima"))
            .args(["match", "--engine1", "self", "--engine2", "self"])
            .args(if args.contains(&"--sprt") { &["--nodes", "10"][..] } else { &[] })
            .args(args)
            .arg("--out")
            .arg(tmp.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} accepted");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(stderr.contains(args[0]), "{args:?}: the error does not name {}: {stderr}", args[0]);
    }
    // --nodes and a clock exclude each other.
    let output = Command::new(env!("CARGO_BIN_EXE_keima"))
        .args(["match", "--engine1", "self", "--engine2", "self", "--nodes", "10", "--tc", "1+0", "--out"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot be used with"));
}

/// `--nodes2` gives engine2 its own node budget: each engine logs the `go` commands it is
/// sent (and resigns), and the logs show each engine's own budget.
#[cfg(unix)]
#[test]
fn match_nodes2_gives_engine2_its_own_budget() {
    let tmp = temp_dir("match-nodes2");
    let dir = tmp.path();
    let script = dir.join("logging_engine.sh");
    std::fs::write(
        &script,
        "while read -r line; do\n\
           case \"$line\" in\n\
             usi) echo 'id name logger'; echo usiok ;;\n\
             isready) echo readyok ;;\n\
             go*) echo \"$line\" >> \"$1\"; echo 'bestmove resign' ;;\n\
             quit) exit 0 ;;\n\
           esac\n\
         done\n",
    )
    .unwrap();
    let (log1, log2) = (dir.join("engine1.log"), dir.join("engine2.log"));
    let engine = |log: &std::path::Path| format!("sh {} {}", script.display(), log.display());
    let (e1, e2) = (engine(&log1), engine(&log2));
    let json = run_match(
        &["--engine1", &e1, "--engine2", &e2, "--games", "2", "--nodes", "10", "--nodes2", "20"],
        &dir.join("out"),
    );
    assert_eq!(json["limit"], "nodes 10 (engine1), 20 (engine2)");
    let log = |p: &std::path::Path| std::fs::read_to_string(p).unwrap();
    assert_eq!(log(&log1).lines().collect::<Vec<_>>(), ["go nodes 10"]);
    assert_eq!(log(&log2).lines().collect::<Vec<_>>(), ["go nodes 20"]);
}

/// A summary as `keima match` writes it (the fields `keima match-stats` reads, and more).
fn write_summary(dir: &std::path::Path, engine2: &str, wdl: [u32; 3], penta: [u32; 5]) {
    std::fs::create_dir_all(dir).unwrap();
    let v = serde_json::json!({
        "engine1": "Keima", "engine2": engine2, "limit": "byoyomi 1000 ms",
        "games": wdl.iter().sum::<u32>(), "wins": wdl[0], "draws": wdl[1], "losses": wdl[2],
        "pentanomial": penta, "results": [],
    });
    std::fs::write(dir.join("summary.json"), v.to_string()).unwrap();
}

fn match_stats(args: &[&std::path::Path], extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_keima")).arg("match-stats").args(args).args(extra).output().unwrap()
}

#[test]
fn match_stats_adds_up_batches() {
    let tmp = temp_dir("match-stats");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    // Two batches of BENCHMARKS.md's games against GPS Shogi (120 and 60 games); the total,
    // 31.4% [24.97%, 37.8%] and -135.8 [-191.2, -86.4] Elo, was computed there by a
    // separate script from the summed pentanomial 40 1 42 0 7.
    write_summary(&a, "GPSShogi", [34, 1, 85], [29, 1, 26, 0, 4]);
    write_summary(&b, "GPSShogi", [22, 0, 38], [11, 0, 16, 0, 3]);
    let out = match_stats(&[&a, &b], &["--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pentanomial"], serde_json::json!([40, 1, 42, 0, 7]));
    assert_eq!(
        (v["wins"].as_u64(), v["draws"].as_u64(), v["losses"].as_u64()),
        (Some(56), Some(1), Some(123))
    );
    let close = |k: &str, want: f64, tol: f64| {
        let got = v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"));
        assert!((got - want).abs() < tol, "{k}: {got}, expected {want}");
    };
    close("pair_score", 0.3139, 5e-4);
    close("pair_score_lower", 0.2497, 5e-4);
    close("pair_score_upper", 0.3781, 5e-4);
    close("pair_elo", -135.8, 0.1);
    close("pair_elo_lower", -191.2, 0.1);
    close("pair_elo_upper", -86.4, 0.1);
    // The table says the same.
    let table = match_stats(&[&a, &b], &[]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("score 31.4% [24.97%, 37.81%], elo -135.8 [-191.2, -86.4]"), "{text}");
    assert!(!text.contains("unfinished") && !text.contains("SPRT"), "{text}");

    // An SPRT's LLR over the summed pairs: -0.848 for [-150, -100], computed separately
    // (by hand, from the formula of engine_core::play::sprt, with its 0.001 pseudo-counts).
    let out = match_stats(&[&a, &b], &["--json", "--sprt", "-150,-100"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!((v["sprt"]["llr"].as_f64().unwrap() - -0.847_986_5).abs() < 1e-6, "{v}");
    let table = match_stats(&[&a, &b], &["--sprt", "-150,-100"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("SPRT [-150, -100] α 0.05 β 0.05: LLR -0.85 [-2.94, 2.94]"), "{text}");

    // A batch still playing (or stopped before its end) is counted as far as it got, and
    // named so.
    let mut partial: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(b.join("summary.json")).unwrap()).unwrap();
    partial["finished"] = false.into();
    std::fs::write(b.join("summary.json"), partial.to_string()).unwrap();
    let out = match_stats(&[&a, &b], &["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pentanomial"], serde_json::json!([40, 1, 42, 0, 7]));
    assert_eq!(v["unfinished_batches"], serde_json::json!([b.display().to_string()]));
    let text = String::from_utf8_lossy(&match_stats(&[&a, &b], &[]).stdout).into_owned();
    assert!(text.contains("(unfinished: its games so far)"), "{text}");

    // Another pairing is refused, naming the field, unless asked for.
    write_summary(&b, "Other", [22, 0, 38], [11, 0, 16, 0, 3]);
    let out = match_stats(&[&a, &b], &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("engine2") && err.contains("--allow-mixed"), "{err}");
    assert!(match_stats(&[&a, &b], &["--allow-mixed"]).status.success());
    // A directory without a summary is named.
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = match_stats(&[&a, &empty], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty/summary.json"));
}
