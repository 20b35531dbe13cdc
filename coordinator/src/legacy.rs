//! What an older keima wrote differently (before the learner's and the teacher's settings
//! were engine-core's types, protocol 2): config keys, refused in config files with their
//! new spelling and migrated in the config a checkpoint stores, and the shard specs of a
//! format-1 checkpoint's queue.

use engine_core::config::{Migration, table_mut};
use engine_core::learn::config::LearnSettings;
use serde_json::{Map, Value, json};

/// The search limit that `depth` and `nodes` meant ("depth 0 means nodes"; the defaults
/// were 0 and 2000), and how it is written now.
fn old_limit(depth: Option<Value>, nodes: Option<Value>) -> (Value, String) {
    let depth = depth.as_ref().and_then(Value::as_i64).unwrap_or(0);
    if depth > 0 {
        (json!({ "depth": depth }), format!("limit = {{ depth = {depth} }}"))
    } else {
        let nodes = nodes.as_ref().and_then(Value::as_u64).unwrap_or(2000);
        (json!({ "nodes": nodes }), format!("limit = {{ nodes = {nodes} }}"))
    }
}

/// `depth` and `nodes` of `table` to its `limit`.
fn migrate_limit(t: &mut Map<String, Value>, table: &str, m: &mut Migration) {
    let (depth, nodes) = (t.remove("depth"), t.remove("nodes"));
    if depth.is_none() && nodes.is_none() {
        return;
    }
    let (limit, spelling) = old_limit(depth, nodes);
    t.entry("limit").or_insert(limit);
    m.note(format!("[{table}] depth, nodes"), format!("[{table}] {spelling}"));
}

/// An older `keima train` config's keys to their places: `[learn]` to the shared tables
/// (and `validate_every` to `[coordinator]`, `check_disk_space` to the top), `depth` and
/// `nodes` to `limit`, `[selfplay] max_plies` to `max_ply`.
pub fn migrate_config(root: &mut Map<String, Value>, m: &mut Migration) {
    if let Some(Value::Object(mut learn)) = root.remove("learn") {
        let from = Some("learn");
        LearnSettings::migrate(&mut learn, from, root, m);
        m.move_key(&mut learn, from, "validate_every", root, Some("coordinator"), "validate_every");
        m.move_key(&mut learn, from, "check_disk_space", root, None, "check_disk_space");
        if !learn.is_empty() {
            // Keys no keima had: the typed parse refuses the table.
            root.insert("learn".into(), Value::Object(learn));
        }
    }
    for table in ["selfplay", "records"] {
        if let Some(t) = table_mut(root, table) {
            migrate_limit(t, table, m);
        }
    }
    if let Some(t) = table_mut(root, "selfplay")
        && let Some(v) = t.remove("max_plies")
    {
        t.entry("max_ply").or_insert(v);
        m.note("[selfplay] max_plies".into(), "[selfplay] max_ply".into());
    }
}

/// A shard spec of a format-1 checkpoint to the current layout. The settings protocol 2
/// did not carry are those its workers used: duplicate filter 2^22, random moves at plies
/// 1..=24, and for records eval_limit 3000 and write_minply 16.
pub fn migrate_spec(spec: &mut Value) {
    if let Some(s) = spec.get_mut("self_play").and_then(Value::as_object_mut)
        && !s.contains_key("search")
    {
        let (limit, _) = old_limit(s.remove("depth"), s.remove("nodes"));
        let search = json!({
            "limit": limit,
            "eval_limit": s.remove("eval_limit").unwrap_or(json!(3000)),
            "write_minply": s.remove("write_minply").unwrap_or(json!(16)),
            "dedupe_bits": 22,
        });
        let play = json!({
            "max_ply": s.remove("max_plies").unwrap_or(json!(256)),
            "random_moves": s.remove("random_moves").unwrap_or(json!(8)),
            "random_min_ply": 1,
            "random_max_ply": 24,
        });
        s.insert("search".into(), search);
        s.insert("play".into(), play);
    }
    if let Some(r) = spec.get_mut("records").and_then(Value::as_object_mut)
        && !r.contains_key("search")
    {
        let (limit, _) = old_limit(r.remove("depth"), r.remove("nodes"));
        r.insert(
            "search".into(),
            json!({ "limit": limit, "eval_limit": 3000, "write_minply": 16, "dedupe_bits": 22 }),
        );
        let unknown = match r.get("unknown_result").and_then(Value::as_i64) {
            Some(1) => "draw",
            Some(2) => "last_mover_wins",
            _ => "skip",
        };
        r.insert("unknown_result".into(), json!(unknown));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::CheckpointState;
    use crate::config::TrainConfig;
    use engine_core::config::ConfigError;
    use engine_core::learn::checkpoint::{CheckpointState as _, StateError};
    use engine_core::teacher::config::{SearchLimit, TeacherSearch, UnknownResult};
    use keima_proto::spec::ShardSpec;

    #[test]
    fn an_older_config_file_is_refused_with_every_new_spelling() {
        let old = "run_dir = \"r\"\n[learn]\neta = 3.0\nvalidate_every = 5\ncheck_disk_space = false\n\
                   [selfplay]\ndepth = 0\nnodes = 1500\nmax_plies = 80\n[records]\npaths = [\"x\"]\ndepth = 8\n";
        let e = TrainConfig::from_toml(old).unwrap_err();
        let ConfigError::Moved(moved) = &e else { panic!("{e:?}") };
        let news: Vec<&str> = moved.iter().map(|m| m.new.as_str()).collect();
        assert_eq!(
            news,
            [
                "[adagrad] eta",
                "[coordinator] validate_every",
                "check_disk_space",
                "[selfplay] limit = { nodes = 1500 }",
                "[records] limit = { depth = 8 }",
                "[selfplay] max_ply",
            ]
        );
    }

    #[test]
    fn a_format_1_checkpoint_reads_as_its_run_meant() {
        let old_config = json!({
            "run_dir": "r", "seed": 1, "deterministic": false,
            "learn": { "eta": 3.0, "eta_turn": 0.75, "epsilon": 1e-8, "eta_decay": 1.0, "lambda": 0.4,
                "eval_limit": 2500, "skip_draws": false, "init_kppt": null, "init_weights": null,
                "patterns": null, "validation": null, "validation_max": 1000, "validation_depth": 0,
                "validate_every": 10, "check_disk_space": true },
            "selfplay": { "shards": 4, "games_per_shard": 2, "openings": null, "openings_per_shard": 64,
                "depth": 0, "nodes": 300, "random_moves": 8, "max_plies": 80, "eval_limit": 3000,
                "write_minply": 16 },
            "teacher": null,
            "records": { "paths": ["k"], "files_per_shard": 3, "depth": 6, "nodes": 2000, "unknown_result": "draw" },
            "coordinator": {}, "local_workers": { "count": 0, "threads": 1 }
        });
        let old_state = json!({
            "format": 1, "run_id": "r1", "weights_version": 3, "weights_checksum": 9, "created_unix": 1,
            "queue": { "sequential": false, "max_failures": 5, "shards": [
                { "id": 0, "state": "pending", "leases": 0, "failures": 0, "spec": { "self_play": {
                    "seed": 5, "games": 2, "openings": [], "depth": 0, "nodes": 300, "random_moves": 8,
                    "max_plies": 80, "eval_limit": 3000, "write_minply": 16 } } },
                { "id": 1, "state": { "done": { "merge_seq": 1, "positions": 5 } }, "leases": 1, "failures": 0,
                  "spec": { "records": { "paths": ["a"], "depth": 0, "nodes": 1000, "unknown_result": 2 } } },
                { "id": 2, "state": "pending", "leases": 0, "failures": 0,
                  "spec": { "teacher": { "path": "t", "start": 0, "count": 10 } } },
            ] },
            "totals": { "merges": 1, "positions_merged": 5, "positions_used": 5, "gradient_entries_merged": 7,
                "loss_sum": 1.0, "duplicate_pushes": 0, "stale_pushes": 0, "rejected_pushes": 0,
                "staleness_sum": 0, "bytes_in": 0, "bytes_out": 0, "teacher_records_kept": 0 },
            "config": old_config,
        });
        let read = |v: &serde_json::Value| CheckpointState::from_json(v.to_string().as_bytes());
        let state = read(&old_state).unwrap();
        let c = &state.config;
        assert_eq!(c.learn.adagrad.eta, 3.0);
        assert_eq!((c.learn.validation.max_records, c.learn.validation.depth), (1000, 0));
        let s = c.selfplay.as_ref().unwrap();
        assert_eq!((s.search.limit, s.play.max_ply), (SearchLimit::Nodes(300), 80));
        let r = c.records.as_ref().unwrap();
        assert_eq!((r.search.limit, r.unknown_result), (SearchLimit::Depth(6), UnknownResult::Draw));
        // The shard specs, with what protocol-2 workers used for the settings they lacked.
        let specs: Vec<&ShardSpec> = state.queue.shards.iter().map(|s| &s.spec).collect();
        let ShardSpec::SelfPlay { seed, search, play, .. } = specs[0] else { panic!("{specs:?}") };
        let expected = TeacherSearch { limit: SearchLimit::Nodes(300), ..TeacherSearch::default() };
        assert_eq!((*seed, *search, play.max_ply, play.random_max_ply), (5, expected, 80, 24));
        let ShardSpec::Records { search, unknown_result, .. } = specs[1] else { panic!("{specs:?}") };
        let expected = TeacherSearch { limit: SearchLimit::Nodes(1000), ..TeacherSearch::default() };
        assert_eq!((*search, *unknown_result), (expected, UnknownResult::LastMoverWins));
        assert_eq!(specs[2], &ShardSpec::Teacher { path: "t".into(), start: 0, count: 10 });
        // The current format reads back as written; an unknown one is refused.
        let now = serde_json::to_value(&state).unwrap();
        assert_eq!(read(&now).unwrap().queue, state.queue);
        let future = json!({ "format": 4 });
        assert!(matches!(read(&future), Err(StateError::Format { found: 4, .. })));
    }
}
