//! `[local_workers.usi_engines.NAME]`: external USI engines that `keima train`'s local
//! workers declare, as a remote worker does with `keima worker --usi-engine NAME=COMMAND
//! --usi-option NAME:OPTION=VALUE`. The coordinator itself never starts them and never
//! sends a command line: it passes these to its own local worker processes as those flags.

use engine_core::config::ConfigError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One engine: its command line (split on whitespace) and the USI options to set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsiEngineConfig {
    pub command: String,
    #[serde(default)]
    pub options: BTreeMap<String, String>,
}

/// Names (as `keima_proto::usi_engine_name` accepts), a command, and options that are one
/// line each with a name of one word.
pub fn check(engines: &BTreeMap<String, UsiEngineConfig>) -> Result<(), ConfigError> {
    for (name, e) in engines {
        let key = |k: &str| format!("[local_workers.usi_engines.{name}]{k}");
        keima_proto::usi_engine_name::check(name)
            .map_err(|err| ConfigError::invalid(key(""), err.to_string()))?;
        if e.command.trim().is_empty() {
            return Err(ConfigError::invalid(key(" command"), "empty: give the engine's command line"));
        }
        for (option, value) in &e.options {
            if !keima_proto::usi_engine_name::option_is_plain(option, value) {
                return Err(ConfigError::invalid(
                    key(" options"),
                    format!("{option:?} = {value:?}: a name is one word, a value one line"),
                ));
            }
        }
    }
    Ok(())
}

/// The `keima worker` flags declaring the engines.
pub fn worker_args(engines: &BTreeMap<String, UsiEngineConfig>) -> Vec<String> {
    let mut args = Vec::new();
    for (name, e) in engines {
        args.push("--usi-engine".to_string());
        args.push(format!("{name}={}", e.command));
        for (option, value) in &e.options {
            args.push("--usi-option".to_string());
            args.push(format!("{name}:{option}={value}"));
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use crate::config::TrainConfig;
    use engine_core::config::ConfigError;

    const BASE: &str = "[selfplay]\nshards = 4\n";

    #[test]
    fn engines_parse_check_and_become_worker_flags() {
        let c = TrainConfig::from_toml(&format!(
            "{BASE}[local_workers.usi_engines.gps]\ncommand = \"/usr/games/gpsusi\"\noptions = {{ Thread = \"1\" }}\n"
        ))
        .unwrap();
        assert_eq!(
            super::worker_args(&c.local_workers.usi_engines),
            ["--usi-engine", "gps=/usr/games/gpsusi", "--usi-option", "gps:Thread=1"]
        );
        for (table, key) in [
            (
                "[local_workers.usi_engines.\"gps shogi\"]\ncommand = \"x\"\n",
                "[local_workers.usi_engines.gps shogi]",
            ),
            ("[local_workers.usi_engines.gps]\ncommand = \" \"\n", "[local_workers.usi_engines.gps] command"),
            (
                "[local_workers.usi_engines.gps]\ncommand = \"x\"\noptions = { Thread = \"1\\nquit\" }\n",
                "[local_workers.usi_engines.gps] options",
            ),
        ] {
            match TrainConfig::from_toml(&format!("{BASE}{table}")) {
                Err(ConfigError::Invalid { key: k, .. }) => assert_eq!(k, key, "{table}"),
                other => panic!("{table}: {other:?}"),
            }
        }
    }
}
