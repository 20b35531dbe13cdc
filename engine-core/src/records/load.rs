//! Reading record files: format detection (extension, then content) and text decoding
//! (UTF-8 with or without BOM; otherwise CP932/Shift_JIS as `.kif`/`.ki2`/CSA files
//! from Windows tools usually are).

use super::record::{GameRecord, RecordError, RecordFormat};
use std::path::Path;

/// Decodes a record file: UTF-8 (BOM removed) when the bytes are valid UTF-8, else CP932.
pub fn decode_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let (text, _, _) = encoding_rs::SHIFT_JIS.decode(bytes);
            text.into_owned()
        }
    }
}

/// Every file extension read as game records (compared case-insensitively), with the
/// format it names.
pub const RECORD_EXTENSIONS: &[(&str, RecordFormat)] = &[
    ("csa", RecordFormat::Csa),
    ("kif", RecordFormat::Kif),
    ("kifu", RecordFormat::Kif),
    ("ki2", RecordFormat::Ki2),
    ("ki2u", RecordFormat::Ki2),
    ("sfen", RecordFormat::UsiLines),
    ("usi", RecordFormat::UsiLines),
];

/// The format implied by a file name's extension (case-insensitive).
pub fn format_from_extension(path: &Path) -> Option<RecordFormat> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    RECORD_EXTENSIONS.iter().find(|(e, _)| *e == ext).map(|&(_, format)| format)
}

/// Guesses the format from the text when the extension says nothing.
pub fn detect_format(text: &str) -> Option<RecordFormat> {
    let mut ki2_marks = false;
    for line in text.lines().map(|l| l.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')) {
        if line.is_empty() {
            continue;
        }
        if line.starts_with("startpos") || line.starts_with("sfen ") || line.starts_with("position ") {
            return Some(RecordFormat::UsiLines);
        }
        if line.starts_with("手数----") || line.starts_with(|c: char| c.is_ascii_digit()) {
            return Some(RecordFormat::Kif);
        }
        if line.starts_with(['▲', '△', '☗', '☖']) {
            ki2_marks = true;
        }
        let csa_start = ["V2", "V3", "PI", "P1", "N+", "N-", "$", "'CSA"];
        if csa_start.iter().any(|p| line.starts_with(p))
            || (line.len() >= 7 && line.starts_with(['+', '-']) && line.as_bytes()[1].is_ascii_digit())
        {
            return Some(RecordFormat::Csa);
        }
    }
    if ki2_marks { Some(RecordFormat::Ki2) } else { None }
}

/// Reads, decodes and parses a record file; the format comes from the extension, or from
/// the content for unknown extensions.
pub fn load_file(path: &Path) -> Result<Vec<GameRecord>, RecordError> {
    let (label, text) = read_text(path)?;
    let format = format_from_extension(path)
        .or_else(|| detect_format(&text))
        .ok_or_else(|| RecordError::new(&label, 0, None, "unknown record format"))?;
    super::parse_text(&text, format, &label)
}

/// Reads, decodes and parses a file as [`load_file`] does, except that a file whose
/// extension names no record format is read as USI lines (one position a line).
pub fn load_file_or_usi_lines(path: &Path) -> Result<Vec<GameRecord>, RecordError> {
    let (label, text) = read_text(path)?;
    let format = format_from_extension(path).unwrap_or(RecordFormat::UsiLines);
    super::parse_text(&text, format, &label)
}

/// The file's name for errors and its decoded text.
fn read_text(path: &Path) -> Result<(String, String), RecordError> {
    let label = path.display().to_string();
    let bytes =
        std::fs::read(path).map_err(|e| RecordError::new(&label, 0, None, format!("cannot read: {e}")))?;
    Ok((label, decode_text(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_and_detection() {
        assert_eq!(decode_text(b"\xef\xbb\xbfabc"), "abc");
        // "先手" in CP932.
        assert_eq!(decode_text(b"\x90\xe6\x8e\xe8"), "先手");
        assert_eq!(detect_format("V2.2\nPI\n+\n"), Some(RecordFormat::Csa));
        assert_eq!(detect_format("手合割：平手\n手数----指手--\n1 ７六歩(77)\n"), Some(RecordFormat::Kif));
        assert_eq!(detect_format("手合割：平手\n▲７六歩 △３四歩\n"), Some(RecordFormat::Ki2));
        assert_eq!(detect_format("startpos moves 7g7f\n"), Some(RecordFormat::UsiLines));
        assert_eq!(detect_format("hello"), None);
        assert_eq!(format_from_extension(Path::new("a/b.KIFU")), Some(RecordFormat::Kif));
    }
}
