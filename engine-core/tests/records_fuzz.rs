//! The record parsers never panic: random bytes, random strings made of the formats'
//! own vocabulary, and mutated real fixtures (byte flips, truncations inside multibyte
//! characters, deleted/duplicated/swapped lines, spliced tokens) all give Ok or Err.
//! Whatever parses must replay legally.

use engine_core::records::{GameRecord, RecordFormat, decode_text, detect_format, parse_text};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

const FORMATS: [RecordFormat; 4] =
    [RecordFormat::Csa, RecordFormat::Kif, RecordFormat::Ki2, RecordFormat::UsiLines];

fn check_game(g: &GameRecord) {
    let mut pos = g.start;
    for m in &g.moves {
        assert!(pos.is_legal(m.mv), "parsed an illegal move {}", m.mv);
        pos.do_move(m.mv);
    }
    for i in 0..g.branches.len() {
        if let Some(line) = g.branch_line(i) {
            let mut pos = g.start;
            for m in line {
                assert!(pos.is_legal(m), "parsed an illegal branch move {m}");
                pos.do_move(m);
            }
        }
    }
    let _ = g.to_usi_line();
}

fn parse_all(text: &str) {
    let _ = detect_format(text);
    for f in FORMATS {
        if let Ok(games) = parse_text(text, f, "fuzz") {
            games.iter().for_each(check_game);
        }
    }
}

fn parse_one(text: &str, f: RecordFormat) {
    if let Ok(games) = parse_text(text, f, "fuzz") {
        games.iter().for_each(check_game);
    }
}

fn fixtures() -> Vec<(PathBuf, Vec<u8>, RecordFormat)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/records");
    let mut stack = vec![root];
    let mut out = Vec::new();
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let Some(f) = engine_core::records::format_from_extension(&p) else { continue };
            if let Ok(bytes) = std::fs::read(&p) {
                out.push((p, bytes, f));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

const TOKENS: &[&str] = &[
    "+7776FU",
    "-3334FU",
    "+0055KA",
    "%TORYO",
    "%KACHI",
    "%SENNICHITE",
    "T12",
    ",T3",
    "'** 99",
    "PI82HI",
    "P1",
    "P+00AL",
    "P-00FU",
    "+",
    "-",
    "/",
    "N+x",
    "$EVENT:e",
    "'black_rate:a:1.5",
    "'summary:toryo:a win:b lose",
    "変化：3手",
    "変化：1手",
    "変化：999手",
    "同　",
    "同",
    "歩",
    "成",
    "不成",
    "打",
    "右",
    "左",
    "直",
    "上",
    "引",
    "寄",
    "▲",
    "△",
    "７六",
    "５五",
    "(77)",
    "(00)",
    "( 0:10/00:00:10)",
    "投了",
    "反則勝ち",
    "反則負け",
    "詰み",
    "中断",
    "*反則",
    "まで3手で先手の勝ち",
    "手合割：香落ち",
    "手合割：その他",
    "先手の持駒：歩十八",
    "後手番",
    "| ・ ・ ・ ・v玉 ・ ・ ・ ・|一",
    "|v香v桂|",
    "startpos moves",
    "sfen 4k4/9/9/9/9/9/9/9/4K4 b G 1 moves",
    "7g7f",
    "G*5e",
    "8h2b+",
    "\u{feff}",
    "\r",
    "\n",
    "  ",
    "ｘ",
    "\u{3000}",
];

/// One random mutation of `bytes`.
fn mutate(rng: &mut Rng, bytes: &[u8]) -> Vec<u8> {
    let mut v = bytes.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        match rng.below(7) {
            // Flip a byte.
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            // Truncate anywhere (including inside a multibyte character).
            1 => {
                let n = rng.below(v.len() + 1);
                v.truncate(n);
            }
            // Line-level edits.
            2..=4 => {
                let mut lines: Vec<Vec<u8>> = v.split(|&b| b == b'\n').map(|l| l.to_vec()).collect();
                if lines.is_empty() {
                    continue;
                }
                let i = rng.below(lines.len());
                match rng.below(3) {
                    0 => {
                        lines.remove(i);
                    }
                    1 => {
                        let l = lines[i].clone();
                        lines.insert(i, l);
                    }
                    _ => {
                        let j = rng.below(lines.len());
                        lines.swap(i, j);
                    }
                }
                v = lines.join(&b'\n');
            }
            // Splice a token in.
            5 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                let i = rng.below(v.len() + 1);
                v.splice(i..i, t.iter().copied());
            }
            // Overwrite a random run with random bytes.
            _ if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = (1 + rng.below(6)).min(v.len() - i);
                for b in &mut v[i..i + n] {
                    *b = rng.next() as u8;
                }
            }
            _ => {}
        }
    }
    v
}

#[test]
fn mutated_fixtures_never_panic() {
    let files = fixtures();
    assert!(!files.is_empty());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (path, bytes, fmt) in &files {
        // The original parses in its own format (checked in records_fixtures); here the
        // other formats must not panic on it either.
        parse_all(&decode_text(bytes));
        for _ in 0..300 {
            let m = mutate(&mut rng, bytes);
            let text = decode_text(&m);
            let r = std::panic::catch_unwind(|| parse_one(&text, *fmt));
            assert!(r.is_ok(), "panic on a mutation of {}:\n{text}", path.display());
        }
        for _ in 0..20 {
            let m = mutate(&mut rng, bytes);
            let text = decode_text(&m);
            let r = std::panic::catch_unwind(|| parse_all(&text));
            assert!(r.is_ok(), "panic on a mutation of {} (all formats):\n{text}", path.display());
        }
    }
}

#[test]
fn token_soup_never_panics() {
    let mut rng = Rng(12345);
    for _ in 0..20000 {
        let mut s = String::new();
        for _ in 0..rng.below(40) {
            s.push_str(TOKENS[rng.below(TOKENS.len())]);
            if rng.below(3) == 0 {
                s.push('\n');
            }
        }
        let r = std::panic::catch_unwind(|| parse_all(&s));
        assert!(r.is_ok(), "panic on:\n{s}");
    }
}

#[test]
fn deep_variation_nesting_is_fine() {
    // Each variation forks from the previous one: no recursion depth problem.
    let mut s = String::from("1 ７六歩(77)\n2 ３四歩(33)\n");
    for _ in 0..5000 {
        s.push_str("変化：2手\n2 ８四歩(83)\n");
    }
    let g = parse_text(&s, RecordFormat::Kif, "deep").unwrap().remove(0);
    assert_eq!(g.branches.len(), 5000);
    assert_eq!(g.branch_line(4999).unwrap().len(), 2);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        parse_all(&decode_text(&bytes));
    }

    #[test]
    fn random_strings_never_panic(s in "[+\\-0-9PINTV%',/ \\n\\r:$*|vA-Z・歩香桂銀金角飛玉と成馬龍同打不右左直上引寄▲△一二三四五六七八九１２３４５６７８９変化手ま で勝]{0,200}") {
        parse_all(&s);
    }

    #[test]
    fn random_csa_like_lines_never_panic(lines in proptest::collection::vec("[+\\-]?[0-9]{0,4}(FU|KY|KE|GI|KI|KA|HI|OU|TO|NY|NK|NG|UM|RY|AL|XX)?(,T[0-9]{1,3})?", 0..30)) {
        let text = format!("PI\n+\n{}", lines.join("\n"));
        parse_one(&text, RecordFormat::Csa);
        let text = format!("P-00AL\n{}", lines.join("\n"));
        parse_one(&text, RecordFormat::Csa);
    }

    #[test]
    fn random_usi_lines_never_panic(moves in proptest::collection::vec("[1-9][a-i][1-9][a-i]\\+?|[PLNSGBR]\\*[1-9][a-i]|[a-z0-9*+]{0,5}", 0..30)) {
        parse_one(&format!("startpos moves {}", moves.join(" ")), RecordFormat::UsiLines);
    }
}
