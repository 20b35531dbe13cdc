//! USI game lines: one game per non-empty line, in any form the USI `position` command
//! takes (`startpos moves 7g7f ...`, `sfen <board> <side> <hand> [<move number>] moves ...`,
//! a bare SFEN; optionally after `position`), parsed by [`UsiPosition::parse`]. Lines
//! starting with `#` are comments. The result is always unknown.

use super::record::{GameRecord, RecordError, RecordMove};
use crate::rules::{UsiPosition, UsiPositionError};

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

/// Parses one line as a game (`line_no` is for errors).
pub fn parse_usi_line(line: &str, file: &str, line_no: usize) -> Result<GameRecord, RecordError> {
    let UsiPosition { start, moves } = UsiPosition::parse(line).map_err(|e| match e {
        UsiPositionError::Move { number, source, .. } => {
            RecordError::new(file, line_no, Some(number), source.to_string())
        }
        setup => RecordError::new(file, line_no, None, setup.to_string()),
    })?;
    let mut rec = GameRecord::new(start);
    rec.moves = moves.into_iter().map(|m| RecordMove::new(m, line_no)).collect();
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
        // A bare SFEN, as the USI `position` command takes it.
        let bare = parse_usi_lines("# comment\n4k4/9/9/9/9/9/9/9/4K4 b G 1 moves G*5b\n", "t").unwrap();
        assert_eq!(bare[0].to_usi_line(), "sfen 4k4/9/9/9/9/9/9/9/4K4 b G 1 moves G*5b");
        let e = parse_usi_lines("\nstartpos extra\n", "t").unwrap_err();
        assert_eq!((e.line, e.move_number), (2, None));
    }
}
