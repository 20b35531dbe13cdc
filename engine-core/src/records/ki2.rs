//! KI2/KI2U. KI2 files are read by the KIF parser in `kif.rs` (same headers, board
//! diagrams, comments, `変化` and `まで` lines); only the move lines differ: several
//! `▲７六歩 △３四歩` moves per line and no move numbers or origin squares. The move
//! notation and the KI2 resolver are in `ja_notation.rs`.

use super::kif::parse_kif_like;
use super::record::{GameRecord, RecordError};

/// Parses every game in a KI2 text (one game per file).
pub fn parse_ki2(text: &str, file: &str) -> Result<Vec<GameRecord>, RecordError> {
    parse_kif_like(text, file, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Outcome;

    #[test]
    fn ki2_lines() {
        let g = parse_ki2("▲７六歩 △３四歩▲２二角成 △同　銀\nまで4手で後手の勝ち\n", "t.ki2")
            .unwrap()
            .pop()
            .unwrap();
        assert_eq!(g.to_usi_line(), "startpos moves 7g7f 3c3d 8h2b+ 3a2b");
        assert_eq!(g.result.outcome, Outcome::WhiteWin);
        assert!(parse_ki2("△７六歩\n", "t").is_err());
    }
}
