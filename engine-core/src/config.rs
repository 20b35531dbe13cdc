//! What the configuration types share (`learn::config`, `teacher::config`, and the
//! coordinator's `keima train` config built from them): the error that names the key, TOML
//! parsing that refuses unknown keys, and the keys an older keima spelled otherwise.
//!
//! Keys that moved are not read at their old place: a config file that uses them is refused
//! with the new spelling of each ([`ConfigError::Moved`]), so no value is silently dropped.
//! Checkpoints written by an older keima are migrated instead (they are the program's own
//! files, and a run must resume): both go through the same [`Migration`] code.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A value out of range, or keys that conflict.
    #[error("config: {key}: {problem}")]
    Invalid { key: String, problem: String },
    /// Not TOML, a value of the wrong type, or an unknown key (the message names it).
    #[error("config: {0}")]
    Toml(#[from] toml::de::Error),
    /// Keys of an older keima, with their new spelling.
    #[error("config: keys of an older keima, write them as the new ones: {}", list_moves(.0))]
    Moved(Vec<Moved>),
    /// A configuration stored as JSON (in a checkpoint) that does not read.
    #[error("stored config: {0}")]
    Json(#[from] serde_json::Error),
}

impl ConfigError {
    pub fn invalid(key: impl Into<String>, problem: impl Into<String>) -> ConfigError {
        ConfigError::Invalid { key: key.into(), problem: problem.into() }
    }
}

/// A key an older keima read: where it was and how it is written now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Moved {
    pub old: String,
    pub new: String,
}

fn list_moves(moves: &[Moved]) -> String {
    moves.iter().map(|m| format!("`{}` is now `{}`", m.old, m.new)).collect::<Vec<_>>().join("; ")
}

/// Rewrites a configuration tree (JSON values; TOML converts losslessly for this) from an
/// older keima's layout to the current one, recording every key it moves.
#[derive(Debug, Default)]
pub struct Migration {
    pub moved: Vec<Moved>,
}

/// `[table] key`, or `key` at the top.
pub fn key_name(table: Option<&str>, key: &str) -> String {
    match table {
        Some(t) => format!("[{t}] {key}"),
        None => key.to_string(),
    }
}

impl Migration {
    /// Moves `old` out of `from` (named `from_name` in messages) into `root`, as `new` in
    /// the table `table` (`None`: at the top). Keeps a value already at the new place.
    pub fn move_key(
        &mut self,
        from: &mut Map<String, Value>,
        from_name: Option<&str>,
        old: &str,
        root: &mut Map<String, Value>,
        table: Option<&str>,
        new: &str,
    ) {
        let Some(v) = from.remove(old) else { return };
        let dest = match table {
            Some(t) => {
                let entry = root.entry(t.to_string()).or_insert_with(|| Value::Object(Map::new()));
                match entry {
                    Value::Object(m) => m,
                    // A table name holding a value: leave it for the typed parse to refuse.
                    _ => return,
                }
            }
            None => root,
        };
        dest.entry(new.to_string()).or_insert(v);
        self.moved.push(Moved { old: key_name(from_name, old), new: key_name(table, new) });
    }

    /// Records a change of form that is not a plain move (e.g. two keys made one).
    pub fn note(&mut self, old: String, new: String) {
        self.moved.push(Moved { old, new });
    }
}

/// A table of `root` as a mutable map, if there is one.
pub fn table_mut<'a>(root: &'a mut Map<String, Value>, name: &str) -> Option<&'a mut Map<String, Value>> {
    root.get_mut(name).and_then(Value::as_object_mut)
}

/// Parses a TOML config: refused with the new spellings if it uses keys of an older keima
/// (`migrate` finds them), else read with unknown keys refused (serde names the key).
pub fn from_toml<T: DeserializeOwned>(
    text: &str,
    migrate: impl FnOnce(&mut Map<String, Value>, &mut Migration),
) -> Result<T, ConfigError> {
    let table: toml::Table = toml::from_str(text)?;
    if let Value::Object(mut root) = serde_json::to_value(&table)? {
        let mut m = Migration::default();
        migrate(&mut root, &mut m);
        if !m.moved.is_empty() {
            return Err(ConfigError::Moved(m.moved));
        }
    }
    Ok(toml::from_str(text)?)
}

/// Reads a stored (JSON) config, migrating an older keima's layout first.
pub fn from_stored<T: DeserializeOwned>(
    mut value: Value,
    migrate: impl FnOnce(&mut Map<String, Value>, &mut Migration),
) -> Result<T, ConfigError> {
    if let Value::Object(root) = &mut value {
        migrate(root, &mut Migration::default());
    }
    Ok(serde_json::from_value(value)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_keep_the_new_value_and_name_both_places() {
        let mut root: Map<String, Value> =
            serde_json::from_str(r#"{"learn": {"eta": 1.5, "x": 1}, "adagrad": {"eta": 2.0}}"#).unwrap();
        let mut from = root.remove("learn").unwrap().as_object().unwrap().clone();
        let mut m = Migration::default();
        m.move_key(&mut from, Some("learn"), "eta", &mut root, Some("adagrad"), "eta");
        m.move_key(&mut from, Some("learn"), "x", &mut root, None, "y");
        assert_eq!(root["adagrad"]["eta"], 2.0);
        assert_eq!(root["y"], 1);
        assert!(from.is_empty());
        let e = ConfigError::Moved(m.moved).to_string();
        assert!(e.contains("`[learn] eta` is now `[adagrad] eta`; `[learn] x` is now `y`"), "{e}");
    }
}
