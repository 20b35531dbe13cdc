//! `keima match` with keima against itself: a short, fast match that writes CSA records.

use engine_core::play::match_stats::csa_piece;
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
}
