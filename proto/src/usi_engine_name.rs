//! The names under which a worker declares external USI engines (`--usi-engine
//! NAME=COMMAND`) and a match shard asks for one. Checked on both ends: by the worker and
//! the config when a name is given, by the coordinator on register, by the worker on a
//! lease. A name is short and plain so that it can be logged and written to metrics as is.

/// Longest accepted name, bytes.
pub const MAX_LEN: usize = 32;

/// Most engines one worker may register.
pub const MAX_ENGINES: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineNameError {
    #[error("a USI engine name is empty")]
    Empty,
    #[error("USI engine name {shown:?} is {len} bytes long, at most {MAX_LEN} are allowed")]
    TooLong { shown: String, len: usize },
    #[error("USI engine name {shown:?}: only ASCII letters, digits, '-' and '_' are allowed")]
    Charset { shown: String },
}

/// The name's first bytes, for a message (a name off the wire may be long and odd).
fn shown(name: &str) -> String {
    name.chars().take(MAX_LEN + 8).collect()
}

/// A USI option set on a declared engine (`setoption name OPTION value VALUE`): the name
/// one word, the value one line, so that neither can add a command of its own.
pub fn option_is_plain(option: &str, value: &str) -> bool {
    !option.is_empty() && !option.contains(char::is_whitespace) && !value.contains(['\n', '\r'])
}

/// Accepts 1 to [`MAX_LEN`] ASCII letters, digits, `-` and `_`.
pub fn check(name: &str) -> Result<(), EngineNameError> {
    if name.is_empty() {
        return Err(EngineNameError::Empty);
    }
    if name.len() > MAX_LEN {
        return Err(EngineNameError::TooLong { shown: shown(name), len: name.len() });
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(EngineNameError::Charset { shown: shown(name) });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_and_plain() {
        for good in ["gps", "GPS_Shogi-1", "a", &"x".repeat(MAX_LEN)] {
            assert_eq!(check(good), Ok(()), "{good}");
        }
        assert_eq!(check(""), Err(EngineNameError::Empty));
        assert!(matches!(check(&"x".repeat(MAX_LEN + 1)), Err(EngineNameError::TooLong { len: 33, .. })));
        for bad in ["gps shogi", "/usr/games/gpsusi", "a;rm", "é", "gps\n"] {
            assert!(matches!(check(bad), Err(EngineNameError::Charset { .. })), "{bad:?}");
        }
    }
}
