//! Openings: where self-play games and matches start, and the one loader of openings files.
//!
//! An openings file is read like a record file: a `.csa`, `.kif`/`.kifu` or `.ki2`/`.ki2u`
//! file holds games whose main lines are the openings; any other file holds one opening a
//! line, in any form the USI `position` command takes (`startpos`, `startpos moves ...`,
//! `sfen <SFEN> [moves ...]` or a bare SFEN, optionally after `position`), with blank lines
//! and `#` comment lines skipped. Every move must be legal; a bad line is an error naming
//! the file and the line, never skipped.

use crate::records::{GameRecord, RecordError, load_file_or_usi_lines};
use crate::rules::{Move, Position, UsiPosition, UsiPositionError};
use std::path::Path;

/// A start: a position and moves played from it before searching begins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opening {
    pub start: Position,
    pub moves: Vec<Move>,
}

impl Opening {
    pub fn startpos() -> Opening {
        Opening { start: Position::startpos(), moves: Vec::new() }
    }

    /// The main line of a game record (all its moves).
    pub fn from_record(record: &GameRecord) -> Opening {
        Opening { start: record.start, moves: record.main_line() }
    }

    /// Parses what the USI `position` command takes; every move must be legal.
    pub fn parse_usi(line: &str) -> Result<Opening, UsiPositionError> {
        UsiPosition::parse(line).map(|UsiPosition { start, moves }| Opening { start, moves })
    }

    /// The opening as [`Opening::parse_usi`] reads it back (`startpos moves ...` or
    /// `sfen <SFEN> moves ...`).
    pub fn to_usi_line(&self) -> String {
        UsiPosition::format(&self.start, self.moves.iter().copied())
    }
}

/// The openings of a file (see the module documentation); a file without any is an error.
pub fn load_openings(path: &Path) -> Result<Vec<Opening>, RecordError> {
    let games = load_file_or_usi_lines(path)?;
    if games.is_empty() {
        return Err(RecordError::new(&path.display().to_string(), 0, None, "no openings in the file"));
    }
    Ok(games.iter().map(Opening::from_record).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every form of the USI `position` command, comments and blank lines; the real
    /// openings file's form (`startpos moves ...`) among them.
    #[test]
    fn every_position_form_loads_and_bad_lines_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("openings.sfen");
        let text = "# openings\n\nstartpos\nstartpos moves 7g7f 3c3d\nposition startpos moves 2g2f\n\
                    sfen 4k4/9/9/9/9/9/9/9/4K4 b G 1 moves G*5b\n4k4/9/9/9/9/9/9/9/4K4 b G\n";
        std::fs::write(&path, text).unwrap();
        let o = load_openings(&path).unwrap();
        assert_eq!(o.len(), 5);
        assert_eq!(o[0], Opening::startpos());
        assert_eq!(o[1].to_usi_line(), "startpos moves 7g7f 3c3d");
        assert_eq!(o[2].to_usi_line(), "startpos moves 2g2f");
        assert_eq!(o[3].to_usi_line(), "sfen 4k4/9/9/9/9/9/9/9/4K4 b G 1 moves G*5b");
        assert_eq!((o[4].start, o[4].moves.len()), (o[3].start, 0));
        for line in &o {
            assert_eq!(Opening::parse_usi(&line.to_usi_line()).as_ref(), Ok(line));
        }

        std::fs::write(&path, "startpos moves 7g7f\n\nstartpos moves 7g7f 7g7f\n").unwrap();
        let e = load_openings(&path).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}:3: move 2: illegal move \"7g7f\" in this position", path.display())
        );
        std::fs::write(&path, "startpos\nsfen 9/9 b - 1\n").unwrap();
        assert_eq!(load_openings(&path).unwrap_err().line, 2);
        std::fs::write(&path, "# nothing\n\n").unwrap();
        assert!(load_openings(&path).unwrap_err().to_string().ends_with("no openings in the file"));
    }

    /// A record file's games are openings too (their main lines).
    #[test]
    fn record_files_give_their_main_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("game.csa");
        std::fs::write(&path, "V2.2\nPI\n+\n+7776FU\n-3334FU\n%TORYO\n").unwrap();
        let o = load_openings(&path).unwrap();
        assert_eq!(o.iter().map(Opening::to_usi_line).collect::<Vec<_>>(), ["startpos moves 7g7f 3c3d"]);
    }
}
