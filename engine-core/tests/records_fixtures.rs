//! Every record under `../shared/data/records/` parses and replays; fixtures with a JKF
//! (JSON Kifu Format) `.json` next to them agree with it on the main line, the result
//! and the KIF branch structure.

use engine_core::records::{GameRecord, Outcome, ResultReason, load_file};
use engine_core::rules::{Color, Move, PieceType, Position, Square};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn records_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/records")
}

fn all_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            all_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn record_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    all_files(&records_dir(), &mut files);
    files.retain(|p| {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        matches!(ext, "csa" | "kif" | "kifu" | "ki2" | "ki2u" | "sfen")
    });
    files
}

/// Replays a game from its start with full legality checks, including branches.
fn replay_checked(g: &GameRecord) {
    let mut pos = g.start;
    for m in &g.moves {
        assert!(pos.is_legal(m.mv), "main-line move {} not legal on replay", m.mv);
        pos.do_move(m.mv);
    }
    assert_eq!(pos.to_sfen(), g.final_position().to_sfen());
    for i in 0..g.branches.len() {
        let line = g.branch_line(i).expect("branch line");
        let mut pos = g.start;
        for m in line {
            assert!(pos.is_legal(m), "branch {i} move {m} not legal on replay");
            pos.do_move(m);
        }
    }
    // The USI line reproduces the main line.
    let usi = g.to_usi_line();
    let back = engine_core::records::parse_usi_line(&usi, "usi", 1).expect("usi line parses");
    assert_eq!(back.start.to_sfen(), g.start.to_sfen());
    assert_eq!(back.main_line(), g.main_line());
}

#[test]
fn every_record_file_parses_and_replays() {
    let files = record_files();
    assert!(files.len() >= 90, "expected the shared records, found {} files", files.len());
    let mut failures = Vec::new();
    for f in &files {
        match load_file(f) {
            Ok(games) => {
                assert!(!games.is_empty(), "{}: no game", f.display());
                for g in &games {
                    replay_checked(g);
                }
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    // No fixture is really broken: every file must parse.
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}

// ----- JKF comparison -----

fn jkf_piece(s: &str) -> PieceType {
    match s {
        "FU" => PieceType::Pawn,
        "KY" => PieceType::Lance,
        "KE" => PieceType::Knight,
        "GI" => PieceType::Silver,
        "KI" => PieceType::Gold,
        "KA" => PieceType::Bishop,
        "HI" => PieceType::Rook,
        "OU" => PieceType::King,
        "TO" => PieceType::ProPawn,
        "NY" => PieceType::ProLance,
        "NK" => PieceType::ProKnight,
        "NG" => PieceType::ProSilver,
        "UM" => PieceType::Horse,
        "RY" => PieceType::Dragon,
        other => panic!("unknown JKF piece {other}"),
    }
}

fn jkf_square(v: &Value) -> Square {
    let x = v["x"].as_u64().expect("x") as u8;
    let y = v["y"].as_u64().expect("y") as u8;
    Square::new(x - 1, y - 1)
}

/// (from, to, piece before the move, promote); `from` is `None` for a drop.
type MoveKey = (Option<Square>, Square, PieceType, bool);

/// The `MoveKey` of a JKF `move` object.
fn jkf_move(m: &Value) -> MoveKey {
    let from = m.get("from").map(jkf_square);
    (
        from,
        jkf_square(&m["to"]),
        jkf_piece(m["piece"].as_str().expect("piece")),
        m["promote"] == Value::Bool(true),
    )
}

fn our_move(m: Move) -> MoveKey {
    if m.is_drop() {
        (None, m.to(), m.drop_piece_type(), false)
    } else {
        (Some(m.from()), m.to(), m.moved_piece().piece_type(), m.is_promotion())
    }
}

/// Flattens JKF forks into (ply, first move or None for a special-only fork).
fn jkf_forks(list: &[Value], first_ply: usize, out: &mut Vec<(usize, Option<MoveKey>)>) {
    for (k, entry) in list.iter().enumerate() {
        let ply = first_ply + k;
        if let Some(forks) = entry.get("forks").and_then(|f| f.as_array()) {
            for fork in forks {
                let fork = fork.as_array().expect("fork list");
                out.push((ply, fork.first().and_then(|e| e.get("move")).map(jkf_move)));
                jkf_forks(fork, ply, out);
            }
        }
    }
}

fn special_reason(special: &str) -> ResultReason {
    match special {
        "TORYO" => ResultReason::Resign,
        "CHUDAN" => ResultReason::Abort,
        "SENNICHITE" => ResultReason::Repetition,
        "TSUMI" => ResultReason::Checkmate,
        "JISHOGI" => ResultReason::Impasse,
        "KACHI" => ResultReason::Declaration,
        "TIME_UP" => ResultReason::TimeUp,
        "ILLEGAL_MOVE" | "+ILLEGAL_ACTION" | "-ILLEGAL_ACTION" => ResultReason::IllegalMove,
        "HIKIWAKE" => ResultReason::Draw,
        other => ResultReason::Other(other.to_string()),
    }
}

fn preset_sfen(preset: &str) -> Option<&'static str> {
    let key = match preset {
        "HIRATE" => return Some("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1"),
        "KY" => "lance",
        "KY_R" => "right-lance",
        "KA" => "bishop",
        "HI" => "rook",
        "HIKY" => "rook-lance",
        "2" => "2-piece",
        "4" => "4-piece",
        "6" => "6-piece",
        "8" => "8-piece",
        "10" => "10-piece",
        _ => return None,
    };
    engine_core::rules::HANDICAPS.iter().find(|(k, _)| *k == key).map(|(_, s)| *s)
}

fn check_against_jkf(record: &Path, json: &Path) {
    let label = record.display().to_string();
    let jkf: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let games = load_file(record).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(games.len(), 1, "{label}");
    let g = &games[0];

    // Start position.
    let initial = &jkf["initial"];
    if let Some(preset) = initial.get("preset").and_then(|p| p.as_str()) {
        if let Some(sfen) = preset_sfen(preset) {
            assert_eq!(g.start.to_sfen(), Position::from_sfen(sfen).unwrap().to_sfen(), "{label}: start");
        } else {
            assert_eq!(preset, "OTHER", "{label}");
            let data = &initial["data"];
            let side = if data["color"].as_u64() == Some(0) { Color::Black } else { Color::White };
            assert_eq!(g.start.side_to_move(), side, "{label}: side to move");
            // board[x-1][y-1]
            for (xi, col) in data["board"].as_array().unwrap().iter().enumerate() {
                for (yi, cell) in col.as_array().unwrap().iter().enumerate() {
                    let p = g.start.piece_on(Square::new(xi as u8, yi as u8));
                    match cell.get("kind").and_then(|k| k.as_str()) {
                        None => assert!(p.is_empty(), "{label}: square {}{} should be empty", xi + 1, yi + 1),
                        Some(kind) => {
                            assert!(!p.is_empty(), "{label}: square {}{} empty", xi + 1, yi + 1);
                            assert_eq!(p.piece_type(), jkf_piece(kind), "{label}");
                            let c =
                                if cell["color"].as_u64() == Some(0) { Color::Black } else { Color::White };
                            assert_eq!(p.color(), c, "{label}");
                        }
                    }
                }
            }
            for (ci, hand) in data["hands"].as_array().unwrap().iter().enumerate() {
                for (k, n) in hand.as_object().unwrap() {
                    let h = g.start.hand(Color::from_index(ci));
                    assert_eq!(h.count(jkf_piece(k)) as u64, n.as_u64().unwrap(), "{label}: hand {k}");
                }
            }
        }
    }

    // Main line.
    let entries = jkf["moves"].as_array().unwrap();
    let jkf_main: Vec<_> = entries.iter().filter_map(|e| e.get("move")).map(jkf_move).collect();
    let ours: Vec<_> = g.moves.iter().map(|m| our_move(m.mv)).collect();
    assert_eq!(ours, jkf_main, "{label}: main line");

    // Result.
    let special = entries.iter().filter_map(|e| e.get("special")).filter_map(|s| s.as_str()).next_back();
    match special {
        Some(s) => assert_eq!(g.result.reason, special_reason(s), "{label}: result"),
        // No special move: either no result at all, or only a KI2 "まで" summary line.
        None => assert!(
            g.result.reason == ResultReason::NoEndMarker || g.result.reason == ResultReason::Resign,
            "{label}: {:?}",
            g.result
        ),
    }

    // Branches: count, fork ply and first move.
    let mut theirs = Vec::new();
    jkf_forks(entries, 0, &mut theirs);
    let mut mine: Vec<_> =
        g.branches.iter().map(|b| (b.ply, b.moves.first().map(|&m| our_move(m)))).collect();
    theirs.sort_by_key(|t| format!("{t:?}"));
    mine.sort_by_key(|t| format!("{t:?}"));
    assert_eq!(mine, theirs, "{label}: branches");
}

#[test]
fn fixtures_agree_with_jkf() {
    let mut checked = 0;
    for f in record_files() {
        let json = f.with_extension("json");
        if json.exists() {
            check_against_jkf(&f, &json);
            checked += 1;
        }
    }
    assert!(checked >= 29, "only {checked} fixtures had a JKF file");
}

#[test]
fn kif_and_kifu_pairs_agree() {
    for f in record_files() {
        let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
        let twin = match ext {
            "kif" => f.with_extension("kifu"),
            "ki2" => f.with_extension("ki2u"),
            _ => continue,
        };
        if !twin.exists() {
            continue;
        }
        let a = load_file(&f).unwrap();
        let b = load_file(&twin).unwrap();
        assert_eq!(a[0].main_line(), b[0].main_line(), "{}", f.display());
        assert_eq!(a[0].branches, b[0].branches, "{}", f.display());
        assert_eq!(a[0].result, b[0].result, "{}", f.display());
        assert_eq!(a[0].black_name, b[0].black_name, "{}", f.display());
    }
}

#[test]
fn pro_games_have_unknown_results() {
    let mut n = 0;
    for f in record_files() {
        if f.parent().and_then(|p| p.file_name()).and_then(|s| s.to_str()) == Some("pro") {
            let g = load_file(&f).unwrap();
            assert_eq!(g[0].result.outcome, Outcome::Unknown, "{}", f.display());
            assert_eq!(g[0].result.reason, ResultReason::NoEndMarker, "{}", f.display());
            assert!(!g[0].moves.is_empty());
            n += 1;
        }
    }
    assert_eq!(n, 15);
}

#[test]
fn wcsc32_scores_and_times() {
    let g = load_file(&records_dir().join("fixtures/csa/WCSC32_F7_NBS_DLS.csa")).unwrap().remove(0);
    assert_eq!(g.black_name.as_deref(), Some("NBS"));
    assert_eq!(g.white_name.as_deref(), Some("DLS"));
    // +2726FU / T41 / '** 41 ...; -8384FU / T0 / '** 54 ...; +2625FU / T14 / '** 38
    assert_eq!(g.moves[0].seconds, Some(41.0));
    assert_eq!(g.moves[0].score, Some(41));
    assert_eq!(g.moves[1].seconds, Some(0.0));
    assert_eq!(g.moves[1].score, Some(54));
    assert_eq!(g.moves[2].seconds, Some(14.0));
    assert_eq!(g.moves[2].score, Some(38));
    let scored = g.moves.iter().filter(|m| m.score.is_some()).count();
    assert!(scored > g.moves.len() / 2, "{scored} of {} moves scored", g.moves.len());
    assert!(g.moves.iter().all(|m| m.seconds.is_some()));
    assert_eq!(g.result.reason, ResultReason::Resign);
    assert!(g.headers.iter().any(|(k, v)| k == "START_TIME" && v == "2022/05/05 16:11:27"));
}

#[test]
fn csa_details() {
    let dir = records_dir().join("fixtures");
    let fg = load_file(&dir.join("csa/floodgate.csa")).unwrap().remove(0);
    assert_eq!(fg.black_rating, Some(3382.0));
    assert_eq!(fg.white_rating, Some(3613.0));
    assert_eq!(fg.moves[0].seconds, Some(14.0));
    assert_eq!(fg.moves[0].score, Some(113));
    // '%TORYO' ... 'summary:toryo:10b_n003_1060 win:40b_n007_1050Ti lose
    assert_eq!(fg.result.outcome, Outcome::BlackWin);

    // One-line "move,Ttime" and %JISHOGI (draw by impasse).
    let m2 = load_file(&dir.join("mog/002.csa")).unwrap().remove(0);
    assert_eq!(m2.moves[0].seconds, Some(102.0));
    assert_eq!(m2.moves[1].seconds, Some(88.0));
    assert_eq!(m2.result.reason, ResultReason::Impasse);
    assert_eq!(m2.result.outcome, Outcome::Draw);

    let ts = load_file(&dir.join("csa/tsumeshogi.csa")).unwrap().remove(0);
    assert_eq!(ts.result.outcome, Outcome::BlackWin);
    assert_eq!(ts.result.reason, ResultReason::Checkmate);
    assert_eq!(ts.moves[0].mv.to_usi(), "7e7b+");

    let v22 = load_file(&dir.join("csa/v22.csa")).unwrap().remove(0);
    assert_eq!(v22.result.outcome, Outcome::Unknown);
    assert_eq!(v22.result.reason, ResultReason::Abort);
    assert!(v22.headers.iter().any(|(k, v)| k == "EVENT" && v == "13th World Computer Shogi Championship"));
}

#[test]
fn kif_details() {
    let dir = records_dir().join("fixtures");
    let ex = load_file(&dir.join("kif/example.kif")).unwrap().remove(0);
    assert_eq!(ex.black_name.as_deref(), Some("先手の対局者名"));
    assert_eq!(ex.moves[0].seconds, Some(16.0));
    assert_eq!(ex.result.reason, ResultReason::Abort);

    let ky = load_file(&dir.join("kif/piyo-shogi_KY.kif")).unwrap().remove(0);
    assert_eq!(ky.start.side_to_move(), Color::White);
    assert!(ky.black_name.as_deref().unwrap().contains("ひよな"));

    // 28 反則勝ち: White (to move) wins because Black's 27th move left the king in check.
    let g17 = load_file(&dir.join("mog/game_017.kif")).unwrap().remove(0);
    assert_eq!(g17.result.outcome, Outcome::WhiteWin);
    assert_eq!(g17.result.reason, ResultReason::IllegalMove);

    // Games lost by an illegal move: the record's last move is illegal and the record
    // says so (a 反則 comment, or 反則勝ち next). The illegal move is left out of the
    // main line (every kept move is legal) and its mover loses.
    for (f, len, illegal) in [
        ("mog/game_014.kif", 156, "157 ５三角打"), // an illegal drop
        ("mog/game_015.kif", 82, "83 １七玉(28)"), // king moves into check
        ("mog/game_017.kif", 26, "27 ４五桂(37)"), // 王手放置: leaves the king in check
    ] {
        let g = load_file(&dir.join(f)).unwrap().remove(0);
        assert_eq!(g.moves.len(), len, "{f}");
        assert_eq!(g.result.reason, ResultReason::IllegalMove, "{f}");
        let mover = if len % 2 == 0 { Color::Black } else { Color::White };
        assert_eq!(g.result.outcome, Outcome::win_for(mover.opponent()), "{f}");
        assert!(g.headers.iter().any(|(k, v)| k == "illegal_move" && v == illegal), "{f}: {:?}", g.headers);
    }

    // "122 投了" followed by "123 中断": the first special move stands (White resigned).
    let g12 = load_file(&dir.join("mog/game_012.kif")).unwrap().remove(0);
    assert_eq!(g12.moves.len(), 121);
    assert_eq!(g12.result.outcome, Outcome::BlackWin);
    assert_eq!(g12.result.reason, ResultReason::Resign);

    let g9 = load_file(&dir.join("mog/game_009.kif")).unwrap().remove(0);
    assert_eq!(g9.result.outcome, Outcome::Draw);
    assert_eq!(g9.result.reason, ResultReason::Repetition);

    let g11 = load_file(&dir.join("mog/game_011.kif")).unwrap().remove(0);
    assert_eq!(g11.result.outcome, Outcome::WhiteWin);
    assert_eq!(g11.moves.len(), 114);
    assert!(g11.moves[0].comment.as_deref().unwrap().contains("対局開始"));

    let forks = load_file(&dir.join("kif/forks.kifu")).unwrap().remove(0);
    assert_eq!(forks.branches.len(), 3);
    assert_eq!((forks.branches[0].ply, forks.branches[0].parent), (10, None));
    assert_eq!((forks.branches[1].ply, forks.branches[1].parent), (5, None));
    assert_eq!((forks.branches[2].ply, forks.branches[2].parent), (9, Some(1)));
    assert_eq!(forks.moves.len(), 12);
    assert_eq!(forks.result.outcome, Outcome::Unknown);
}

#[test]
fn openings_file_as_usi_lines() {
    let path = records_dir().join("../openings/records2016_10818.sfen");
    let games = load_file(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(games.len(), 10_831);
    for g in &games {
        assert_eq!(g.moves.len(), 24);
        assert_eq!(g.result.reason, ResultReason::NoEndMarker);
        assert!(g.to_usi_line().starts_with("startpos moves "));
    }
}
