//! USI game lines: one game per non-empty line, `startpos moves 7g7f ...` or
//! `sfen <board> <side> <hand> [<move number>] moves ...`, optionally after `position `.
//! Lines starting with `#` are comments. The result is always unknown.

use super::record::{GameRecord, RecordError, RecordMove};
use crate::rules::Position;

/// Parses every line of `text` as one game.
pub fn parse_usi_lines(text: &str, file: &str) -> Result<Vec<GameRecord>, RecordError> {
    let mut games = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        games.push(parse_usi_line(line, file, i + 1)?);
    }
    Ok(games)
}

/// Parses one `startpos moves ...` / `sfen ... moves ...` line (`line_no` is for errors).
pub fn parse_usi_line(line: &str, file: &str, line_no: usize) -> Result<GameRecord, RecordError> {
    let err = |n: Option<usize>, r: String| RecordError::new(file, line_no, n, r);
    let mut toks = line.split_whitespace().peekable();
    if toks.peek() == Some(&"position") {
        toks.next();
    }
    let start = match toks.next() {
        Some("startpos") => Position::startpos(),
        Some("sfen") => {
            let mut fields = Vec::new();
            while let Some(&t) = toks.peek() {
                if t == "moves" || fields.len() == 4 {
                    break;
                }
                fields.push(t);
                toks.next();
            }
            Position::from_sfen(&fields.join(" ")).map_err(|e| err(None, e.to_string()))?
        }
        other => return Err(err(None, format!("expected 'startpos' or 'sfen', found {other:?}"))),
    };
    let mut rec = GameRecord::new(start);
    match toks.next() {
        None => return Ok(rec),
        Some("moves") => {}
        Some(other) => return Err(err(None, format!("expected 'moves', found {other:?}"))),
    }
    let mut pos = start;
    for (k, t) in toks.enumerate() {
        let m = pos.parse_usi_move(t).map_err(|e| err(Some(k + 1), e.to_string()))?;
        pos.do_move(m);
        rec.moves.push(RecordMove::new(m, line_no));
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip() {
        let text = "startpos moves 7g7f 3c3d\n\nposition sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1 moves 3c3d\nsfen 4k4/9/9/9/9/9/9/9/4K4 b G\n";
        let gs = parse_usi_lines(text, "t").unwrap();
        assert_eq!(gs.len(), 3);
        assert_eq!(gs[0].to_usi_line(), "startpos moves 7g7f 3c3d");
        assert_eq!(gs[1].moves.len(), 1);
        assert!(gs[1].to_usi_line().starts_with("sfen "));
        assert_eq!(gs[2].moves.len(), 0);
        let e = parse_usi_lines("startpos moves 7g7f 7g7f\n", "t").unwrap_err();
        assert_eq!(e.to_string(), "t:1: move 2: illegal move \"7g7f\" in this position");
    }
}
