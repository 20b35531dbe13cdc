//! Game records: CSA, KIF/KIFU, KI2/KI2U and USI game lines, parsed into `GameRecord`s
//! whose every move has been checked legal; and the CSA writer (`csa_write`).
//!
//! `record_files` finds the record files under the paths a caller names; `load_file` picks
//! the format from the extension (or the content) and decodes the text (UTF-8 with or
//! without BOM, else CP932); `parse_text` parses text in a given format.
//! Parsers never panic on any input: bad input is a `RecordError` naming the file, the line
//! and, for moves, the move number.

pub mod csa;
pub mod csa_write;
pub mod discover;
mod ja_notation;
pub mod ki2;
pub mod kif;
mod kif_fields;
pub mod load;
pub mod record;
pub mod usi_lines;

pub use csa::parse_csa;
pub use csa_write::{CsaEnd, CsaRecord};
pub use discover::{DiscoverError, record_files};
pub use ki2::parse_ki2;
pub use kif::{handicap_position, parse_kif};
pub use load::{
    RECORD_EXTENSIONS, decode_text, detect_format, format_from_extension, load_file, load_file_or_usi_lines,
};
pub use record::{
    Branch, GameRecord, GameResult, Outcome, RecordError, RecordFormat, RecordMove, ResultReason,
};
pub use usi_lines::{parse_usi_line, parse_usi_lines};

/// Parses `text` in `format`; `file_label` names the source in errors.
pub fn parse_text(
    text: &str,
    format: RecordFormat,
    file_label: &str,
) -> Result<Vec<GameRecord>, RecordError> {
    match format {
        RecordFormat::Csa => parse_csa(text, file_label),
        RecordFormat::Kif => parse_kif(text, file_label),
        RecordFormat::Ki2 => parse_ki2(text, file_label),
        RecordFormat::UsiLines => parse_usi_lines(text, file_label),
    }
}
