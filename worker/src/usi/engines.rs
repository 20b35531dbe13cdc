//! The external USI engines a worker was given on its own command line (`--usi-engine
//! NAME=COMMAND`, `--usi-option NAME:OPTION=VALUE`): the only programs a match shard can
//! make it run, asked for by name. The coordinator learns the names, never the commands.

use super::client::engine_argv;
use keima_proto::usi_engine_name::{self, EngineNameError};

/// A declared engine: its name, command line, and USI options in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsiEngine {
    pub name: String,
    pub argv: Vec<String>,
    pub options: Vec<(String, String)>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UsiEngineError {
    #[error("--usi-engine {0:?}: expected NAME=COMMAND")]
    EngineSyntax(String),
    #[error("--usi-engine {flag:?}: {source}")]
    Name { flag: String, source: EngineNameError },
    #[error("--usi-engine {flag:?}: {problem}")]
    Command { flag: String, problem: String },
    #[error("--usi-engine {0:?} is given twice")]
    Duplicate(String),
    #[error("more than {} USI engines", usi_engine_name::MAX_ENGINES)]
    TooMany,
    #[error("--usi-option {0:?}: expected NAME:OPTION=VALUE, the option one word, the value one line")]
    OptionSyntax(String),
    #[error("--usi-option {flag:?}: no --usi-engine {name}")]
    OptionForUnknown { flag: String, name: String },
}

/// The engines the flags declare, each with its options.
pub fn declare(engines: &[String], options: &[String]) -> Result<Vec<UsiEngine>, UsiEngineError> {
    if engines.len() > usi_engine_name::MAX_ENGINES {
        return Err(UsiEngineError::TooMany);
    }
    let mut out: Vec<UsiEngine> = Vec::new();
    for flag in engines {
        let (name, command) =
            flag.split_once('=').ok_or_else(|| UsiEngineError::EngineSyntax(flag.clone()))?;
        usi_engine_name::check(name).map_err(|source| UsiEngineError::Name { flag: flag.clone(), source })?;
        if out.iter().any(|e| e.name == name) {
            return Err(UsiEngineError::Duplicate(name.to_string()));
        }
        let argv = engine_argv(command)
            .map_err(|problem| UsiEngineError::Command { flag: flag.clone(), problem })?;
        out.push(UsiEngine { name: name.to_string(), argv, options: Vec::new() });
    }
    for flag in options {
        let syntax = || UsiEngineError::OptionSyntax(flag.clone());
        let (name, setting) = flag.split_once(':').ok_or_else(syntax)?;
        let (option, value) = setting.split_once('=').ok_or_else(syntax)?;
        let (option, value) = (option.trim(), value.trim());
        if !usi_engine_name::option_is_plain(option, value) {
            return Err(syntax());
        }
        let engine = out
            .iter_mut()
            .find(|e| e.name == name)
            .ok_or_else(|| UsiEngineError::OptionForUnknown { flag: flag.clone(), name: name.to_string() })?;
        engine.options.push((option.to_string(), value.to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_declare_engines_with_their_options() {
        let e = declare(
            &strings(&["gps=/usr/games/gpsusi", "fairy=fairy-stockfish --x"]),
            &strings(&["gps:Thread=1", "fairy:UCI_Variant=shogi"]),
        )
        .unwrap();
        assert_eq!(e[0].argv, ["/usr/games/gpsusi"]);
        assert_eq!(e[0].options, [("Thread".to_string(), "1".to_string())]);
        assert_eq!((e[1].name.as_str(), e[1].argv.len()), ("fairy", 2));
        assert_eq!(declare(&[], &[]).unwrap(), []);
    }

    #[test]
    fn bad_flags_are_refused() {
        let one = |engine: &str, option: &[&str]| declare(&strings(&[engine]), &strings(option)).unwrap_err();
        assert_eq!(one("gps", &[]), UsiEngineError::EngineSyntax("gps".into()));
        assert!(matches!(one("gps shogi=/x", &[]), UsiEngineError::Name { .. }));
        assert!(matches!(one("=/x", &[]), UsiEngineError::Name { source: EngineNameError::Empty, .. }));
        assert!(matches!(one("gps= ", &[]), UsiEngineError::Command { .. }));
        assert!(matches!(one("gps=/x", &["gps:Thread"]), UsiEngineError::OptionSyntax(_)));
        assert!(matches!(one("gps=/x", &["gps:Thread=1\nquit"]), UsiEngineError::OptionSyntax(_)));
        assert!(matches!(one("gps=/x", &["fairy:Thread=1"]), UsiEngineError::OptionForUnknown { .. }));
        let twice = declare(&strings(&["gps=/x", "gps=/y"]), &[]).unwrap_err();
        assert_eq!(twice, UsiEngineError::Duplicate("gps".into()));
    }
}
