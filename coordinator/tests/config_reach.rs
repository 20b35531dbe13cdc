//! Every key documented in `configs/full-scale.toml` parses and reaches the code that uses
//! it. The file is read with its optional keys (`# key = value`) uncommented, and each key
//! has a check below that finds its value where the code takes it: the shard specs the
//! queue is built from and the loss, as a worker reads them off the wire; or the config
//! field the coordinator reads directly. Three runs: the documented values must arrive;
//! a probe value for every key (none of them a default) must arrive; and with every key
//! left out, no probe value may show (so the probe proves something). A key that is parsed
//! but dropped on the way fails the first or the second run; a documented key without a
//! check, or a check of a key that is not documented, fails too.
//!
//! The file paths the specs read (`[selfplay] openings`, `[teacher] paths`, `[records]
//! paths`) are replaced by test data.
//!
//! `[[generation]]` tables: a key's value is that of the last table holding it, and its
//! check looks at that generation's shards; a base table's key (`[selfplay] shards`,
//! `limit`, ...) is checked in the first generation that does not override it, so the
//! documented schedule must leave one that takes the base values (its first does).

use engine_core::learn::config::LossConfig;
use engine_core::rules::Position;
use engine_core::teacher::config::{SearchLimit, SelfPlayGames, TeacherSearch, UnknownResult};
use engine_core::teacher::gensfen::game_seed;
use engine_core::teacher::{PackedSfenValue, ShardSettings, ShardWriter};
use keima_coordinator::TrainConfig;
use keima_coordinator::config::Generation;
use keima_coordinator::generations;
use keima_coordinator::queue::ShardSpec;
use keima_coordinator::specs::{generation_specs, load_sources};
use keima_proto::v1;
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use toml::{Table, Value};

fn full_scale_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/full-scale.toml");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The file with its optional keys and tables (`# key = value`, `# [table]`) uncommented.
fn uncommented(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let rest = line.strip_prefix("# ").unwrap_or("");
        let key = rest.split(" = ").next().unwrap_or("");
        let is_key = rest.contains(" = ")
            && !key.is_empty()
            && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
        let is_table = rest.starts_with('[') && rest.ends_with(']') && !rest.contains(' ');
        out.push_str(if is_key || is_table { rest } else { line });
        out.push('\n');
    }
    out
}

/// Test data the specs read, one set for the documented run and one for the probe run.
struct Data {
    openings: PathBuf,
    opening_lines: Vec<String>,
    teacher: PathBuf,
    records: PathBuf,
}

fn write_teacher(path: &Path, n: u64) {
    let pos = Position::startpos();
    let mut w = ShardWriter::create(path, ShardSettings::default()).unwrap();
    for i in 0..n {
        w.write(&PackedSfenValue::new(&pos, None, (i % 1000) as i16, 0).unwrap()).unwrap();
    }
    w.finish().unwrap();
}

fn data(dir: &Path, name: &str, openings: &[&str], teacher_records: u64, record_files: usize) -> Data {
    let openings_path = dir.join(format!("{name}-openings.sfen"));
    std::fs::write(&openings_path, openings.join("\n")).unwrap();
    let teacher = dir.join(format!("{name}-teacher.psv.zst"));
    write_teacher(&teacher, teacher_records);
    let records = dir.join(format!("{name}-records"));
    std::fs::create_dir_all(&records).unwrap();
    for i in 0..record_files {
        std::fs::write(records.join(format!("g{i:03}.usi")), "startpos moves 7g7f 3c3d\n").unwrap();
    }
    Data {
        openings: openings_path,
        opening_lines: openings.iter().map(|s| s.to_string()).collect(),
        teacher,
        records,
    }
}

fn s(p: &Path) -> Value {
    Value::String(p.to_str().unwrap().to_string())
}

/// Points the keys that name input files at `data`.
fn use_data(doc: &mut Table, d: &Data) {
    let table = |doc: &mut Table, name: &str| doc.get_mut(name).unwrap().as_table_mut().unwrap().clone();
    let mut sp = table(doc, "selfplay");
    sp.insert("openings".into(), s(&d.openings));
    doc.insert("selfplay".into(), Value::Table(sp));
    let mut t = table(doc, "teacher");
    t.insert("paths".into(), Value::Array(vec![s(&d.teacher)]));
    doc.insert("teacher".into(), Value::Table(t));
    let mut r = table(doc, "records");
    r.insert("paths".into(), Value::Array(vec![s(&d.records)]));
    doc.insert("records".into(), Value::Table(r));
}

/// What the code takes from one generation.
struct GenerationReach {
    /// The first shard of each kind, as a worker reads it off the wire.
    selfplay: Option<ShardSpec>,
    teacher: Option<ShardSpec>,
    records: Option<ShardSpec>,
    selfplay_shards: usize,
    record_shards: usize,
    /// The loss a worker computes with (after the wire).
    loss: LossConfig,
    /// η of the generation's merges.
    eta: f64,
}

/// What the code takes from a config.
struct Reached {
    cfg: TrainConfig,
    generations: Vec<GenerationReach>,
    /// Per `[[generation]]` key, the generation whose value `get` reads.
    generation_of: HashMap<String, usize>,
    /// The opening files the test wrote, to tell which one the openings came from.
    opening_files: Vec<(PathBuf, Vec<String>)>,
}

fn over_the_wire(spec: ShardSpec) -> ShardSpec {
    ShardSpec::try_from(v1::lease::Kind::from(spec)).unwrap()
}

fn reach(doc: &Table, data: &[&Data]) -> Reached {
    let cfg: TrainConfig = toml::from_str(&toml::to_string(doc).unwrap()).unwrap();
    let sources = load_sources(&cfg).unwrap();
    let generations = (0..generations::count(&cfg))
        .map(|g| {
            let mut r = GenerationReach {
                selfplay: None,
                teacher: None,
                records: None,
                selfplay_shards: 0,
                record_shards: 0,
                loss: LossConfig::try_from(v1::LossSpec::from(generations::loss(&cfg, g))).unwrap(),
                eta: generations::adagrad(&cfg, g, 1.0).eta,
            };
            for spec in generation_specs(&cfg, &sources, g) {
                let (first, count) = match spec {
                    ShardSpec::SelfPlay { .. } => (&mut r.selfplay, Some(&mut r.selfplay_shards)),
                    ShardSpec::Records { .. } => (&mut r.records, Some(&mut r.record_shards)),
                    ShardSpec::Teacher { .. } => (&mut r.teacher, None),
                    ShardSpec::Match { .. } => unreachable!("match shards are queued at checkpoints"),
                };
                count.into_iter().for_each(|n| *n += 1);
                if first.is_none() {
                    *first = Some(over_the_wire(spec));
                }
            }
            r
        })
        .collect();
    let mut generation_of = HashMap::new();
    for (i, t) in doc.get("generation").and_then(Value::as_array).into_iter().flatten().enumerate() {
        for k in t.as_table().unwrap().keys() {
            generation_of.insert(k.clone(), i);
        }
    }
    Reached {
        generations,
        generation_of,
        opening_files: data.iter().map(|d| (d.openings.clone(), d.opening_lines.clone())).collect(),
        cfg,
    }
}

fn v<T: Serialize>(x: T) -> Value {
    Value::try_from(x).unwrap()
}

fn opt<T: Serialize>(x: &Option<T>) -> Value {
    x.as_ref().map_or(Value::String("(none)".into()), v)
}

type Check = fn(&Reached) -> Value;

/// The first generation whose table does not override what `overrides` looks at (the one
/// where the base table's value is used).
fn base_generation(r: &Reached, overrides: fn(&Generation) -> bool) -> &GenerationReach {
    let g = r.cfg.generation.iter().position(|x| !overrides(x)).unwrap_or(0);
    &r.generations[g]
}

fn selfplay(r: &Reached) -> (u64, u32, &[String], &TeacherSearch, &SelfPlayGames) {
    let spec = base_generation(r, |x| x.shards.is_some() || x.limit.is_some()).selfplay.as_ref();
    let Some(ShardSpec::SelfPlay { seed, games, openings, search, play }) = spec else { unreachable!() };
    (*seed, *games, openings, search, play)
}

fn records(r: &Reached) -> (&[String], &TeacherSearch, &UnknownResult) {
    let spec = base_generation(r, |x| x.limit.is_some() || x.record_shards == 0).records.as_ref();
    let Some(ShardSpec::Records { paths, search, unknown_result }) = spec else { unreachable!() };
    (paths, search, unknown_result)
}

fn teacher(r: &Reached) -> (&str, u64) {
    let Some(ShardSpec::Teacher { path, count, .. }) = &r.generations[0].teacher else { unreachable!() };
    (path, *count)
}

fn base_loss(r: &Reached) -> &LossConfig {
    &base_generation(r, |x| x.lambda.is_some()).loss
}

/// The generation whose `[[generation]]` table gave `key`, or `None` without a schedule.
fn generation<'a>(r: &'a Reached, key: &str) -> Option<&'a GenerationReach> {
    r.generation_of.get(key).map(|&g| &r.generations[g])
}

fn limit_of(spec: &Option<ShardSpec>) -> Option<SearchLimit> {
    match spec {
        Some(ShardSpec::SelfPlay { search, .. } | ShardSpec::Records { search, .. }) => Some(search.limit),
        _ => None,
    }
}

const NO_SCHEDULE: &str = "(no [[generation]])";

/// (table, key, probe value, where the code takes it). Probe "": the key names test data.
fn checks() -> Vec<(&'static str, &'static str, &'static str, Check)> {
    fn k(
        t: &'static str,
        key: &'static str,
        probe: &'static str,
        f: Check,
    ) -> (&'static str, &'static str, &'static str, Check) {
        (t, key, probe, f)
    }
    vec![
        k("", "run_dir", "\"runs/probe\"", |r| v(&r.cfg.run_dir)),
        // Self-play seeds derive from it (the base generation is the first).
        k("", "seed", "5", |r| {
            if selfplay(r).0 == game_seed(r.cfg.seed, 1_000_000) {
                v(r.cfg.seed)
            } else {
                v("(not the shards' seed)")
            }
        }),
        k("", "deterministic", "true", |r| v(r.cfg.deterministic)),
        k("", "cpu_hours", "2.5", |r| opt(&r.cfg.cpu_hours)),
        k("", "check_disk_space", "false", |r| v(r.cfg.learn.check_disk_space)),
        k("loss", "lambda", "0.25", |r| v(base_loss(r).lambda)),
        k("loss", "eval_limit", "2222", |r| v(base_loss(r).eval_limit)),
        k("loss", "skip_draws", "true", |r| v(base_loss(r).skip_draws)),
        k("adagrad", "eta", "1.5", |r| v(base_generation(r, |x| x.eta.is_some()).eta)),
        k("adagrad", "eta_turn", "0.25", |r| v(r.cfg.learn.adagrad.eta_turn)),
        k("adagrad", "epsilon", "0.5", |r| v(r.cfg.learn.adagrad.epsilon)),
        k("adagrad", "eta_decay", "0.5", |r| v(r.cfg.learn.adagrad.eta_decay)),
        k("adagrad", "eta_factors", "2.5", |r| v(r.cfg.learn.adagrad.eta_factors)),
        k("init", "kppt", "\"probe/kppt\"", |r| opt(&r.cfg.learn.init.kppt)),
        k("init", "weights", "\"probe/w.kw\"", |r| opt(&r.cfg.learn.init.weights)),
        k("init", "patterns", "\"probe/p.kpat\"", |r| opt(&r.cfg.learn.init.patterns)),
        k("init", "factors", "{ mirror = true, kp = true, pp = true }", |r| v(r.cfg.learn.init.factors)),
        k("validation", "shard", "\"probe/val.psv.zst\"", |r| opt(&r.cfg.learn.validation.shard)),
        k("validation", "max_records", "77", |r| v(r.cfg.learn.validation.max_records)),
        k("validation", "depth", "3", |r| v(r.cfg.learn.validation.depth)),
        k("selfplay", "shards", "3", |r| v(base_generation(r, |x| x.shards.is_some()).selfplay_shards)),
        k("selfplay", "games_per_shard", "4", |r| v(selfplay(r).1)),
        // The file whose lines the shard's openings are.
        k("selfplay", "openings", "", |r| {
            let openings = selfplay(r).2;
            let from = r.opening_files.iter().find(|(_, lines)| openings.iter().all(|o| lines.contains(o)));
            from.map_or(v("(openings from no file)"), |(p, _)| s(p))
        }),
        k("selfplay", "openings_per_shard", "2", |r| v(selfplay(r).2.len())),
        k("selfplay", "limit", "{ depth = 3 }", |r| v(selfplay(r).3.limit)),
        k("selfplay", "eval_limit", "1500", |r| v(selfplay(r).3.eval_limit)),
        k("selfplay", "write_minply", "5", |r| v(selfplay(r).3.write_minply)),
        k("selfplay", "dedupe_bits", "12", |r| v(selfplay(r).3.dedupe_bits)),
        k("selfplay", "max_ply", "99", |r| v(selfplay(r).4.max_ply)),
        k("selfplay", "random_moves", "3", |r| v(selfplay(r).4.random_moves)),
        k("selfplay", "random_min_ply", "2", |r| v(selfplay(r).4.random_min_ply)),
        k("selfplay", "random_max_ply", "9", |r| v(selfplay(r).4.random_max_ply)),
        k("teacher", "paths", "", |r| Value::Array(vec![v(teacher(r).0)])),
        k("teacher", "records_per_shard", "7", |r| v(teacher(r).1)),
        // The directory the shard's files were found in.
        k("records", "paths", "", |r| Value::Array(vec![s(Path::new(&records(r).0[0]).parent().unwrap())])),
        k("records", "files_per_shard", "2", |r| v(records(r).0.len())),
        k("records", "limit", "{ depth = 2 }", |r| v(records(r).1.limit)),
        k("records", "eval_limit", "1234", |r| v(records(r).1.eval_limit)),
        k("records", "write_minply", "3", |r| v(records(r).1.write_minply)),
        k("records", "dedupe_bits", "10", |r| v(records(r).1.dedupe_bits)),
        k("records", "unknown_result", "\"draw\"", |r| v(records(r).2)),
        k("generation", "shards", "4", |r| {
            generation(r, "shards").map_or(v(NO_SCHEDULE), |g| v(g.selfplay_shards))
        }),
        // Self-play and record shards alike.
        k("generation", "limit", "{ nodes = 777 }", |r| match generation(r, "limit") {
            Some(g) if limit_of(&g.records).is_none_or(|l| Some(l) == limit_of(&g.selfplay)) => {
                opt(&limit_of(&g.selfplay))
            }
            Some(_) => v("(self-play and record shards differ)"),
            None => v(NO_SCHEDULE),
        }),
        k("generation", "eta", "0.75", |r| generation(r, "eta").map_or(v(NO_SCHEDULE), |g| v(g.eta))),
        k("generation", "lambda", "0.75", |r| {
            generation(r, "lambda").map_or(v(NO_SCHEDULE), |g| v(g.loss.lambda))
        }),
        k("generation", "record_shards", "2", |r| {
            generation(r, "record_shards").map_or(v(NO_SCHEDULE), |g| v(g.record_shards))
        }),
        k("newbob", "decay", "0.25", |r| opt(&r.cfg.newbob.map(|n| n.decay))),
        k("newbob", "min_improvement", "0.125", |r| opt(&r.cfg.newbob.map(|n| n.min_improvement))),
        k("newbob", "max_decays", "7", |r| opt(&r.cfg.newbob.map(|n| n.max_decays))),
        k("elo", "every", "6", |r| opt(&r.cfg.elo.as_ref().map(|e| e.every))),
        k("elo", "baseline", "\"previous\"", |r| opt(&r.cfg.elo.as_ref().map(|e| &e.baseline))),
        k("elo", "games", "8", |r| opt(&r.cfg.elo.as_ref().map(|e| e.games))),
        k("elo", "games_per_shard", "4", |r| opt(&r.cfg.elo.as_ref().map(|e| e.games_per_shard))),
        k("elo", "nodes", "321", |r| opt(&r.cfg.elo.as_ref().map(|e| e.nodes))),
        k("elo", "max_ply", "99", |r| opt(&r.cfg.elo.as_ref().map(|e| e.max_ply))),
        k("elo", "openings", "\"probe/elo.sfen\"", |r| opt(&r.cfg.elo.as_ref().map(|e| &e.openings))),
        k("elo", "seed", "11", |r| opt(&r.cfg.elo.as_ref().map(|e| e.seed))),
        k("coordinator", "listen", "\"127.0.0.1:9\"", |r| v(&r.cfg.coordinator.listen)),
        k("coordinator", "metrics_listen", "\"\"", |r| v(&r.cfg.coordinator.metrics_listen)),
        k("coordinator", "token", "\"probe-token\"", |r| v(&r.cfg.coordinator.token)),
        k("coordinator", "token_file", "\"probe/token\"", |r| opt(&r.cfg.coordinator.token_file)),
        k("coordinator", "tls_cert", "\"probe/cert.pem\"", |r| opt(&r.cfg.coordinator.tls_cert)),
        k("coordinator", "tls_key", "\"probe/key.pem\"", |r| opt(&r.cfg.coordinator.tls_key)),
        k("coordinator", "tls_ca", "\"probe/ca.pem\"", |r| opt(&r.cfg.coordinator.tls_ca)),
        k("coordinator", "lease_seconds", "33", |r| v(r.cfg.coordinator.lease_seconds)),
        k("coordinator", "heartbeat_ms", "444", |r| v(r.cfg.coordinator.heartbeat_ms)),
        k("coordinator", "max_attempts", "2", |r| v(r.cfg.coordinator.max_attempts)),
        k("coordinator", "max_staleness", "3", |r| v(r.cfg.coordinator.max_staleness)),
        k("coordinator", "stale_policy", "\"reject\"", |r| v(r.cfg.coordinator.stale_policy)),
        k("coordinator", "checkpoint_every", "7", |r| v(r.cfg.coordinator.checkpoint_every)),
        k("coordinator", "keep_checkpoints", "5", |r| v(r.cfg.coordinator.keep_checkpoints)),
        k("coordinator", "validate_every", "3", |r| v(r.cfg.coordinator.validate_every)),
        k("coordinator", "max_push_mib", "9", |r| v(r.cfg.coordinator.max_push_mib)),
        k("coordinator", "keep_teacher_records", "false", |r| v(r.cfg.coordinator.keep_teacher_records)),
        k("coordinator", "batch_pool_records", "9", |r| v(r.cfg.coordinator.batch_pool_records)),
        k("coordinator", "batch_pool_draws", "3", |r| v(r.cfg.coordinator.batch_pool_draws)),
        k("coordinator", "delta_versions", "4", |r| v(r.cfg.coordinator.delta_versions)),
        k("coordinator", "fold_every", "3", |r| v(r.cfg.coordinator.fold_every)),
        k("coordinator", "export", "false", |r| v(r.cfg.coordinator.export)),
        k("local_workers", "count", "3", |r| v(r.cfg.local_workers.count)),
        k("local_workers", "threads", "2", |r| v(r.cfg.local_workers.threads)),
    ]
}

/// The value of `table.key` in `doc` (`table` "" = the top; in an array of tables, the last
/// table holding the key).
fn get<'a>(doc: &'a Table, table: &str, key: &str) -> Option<&'a Value> {
    if table.is_empty() {
        return doc.get(key);
    }
    match doc.get(table)? {
        Value::Array(tables) => tables.iter().rev().find_map(|t| t.as_table()?.get(key)),
        t => t.as_table()?.get(key),
    }
}

/// Sets `table.key` (in an array of tables, in the last table).
fn set(doc: &mut Table, table: &str, key: &str, value: Value) {
    let t = if table.is_empty() {
        doc
    } else {
        match doc.entry(table).or_insert(Value::Table(Table::new())) {
            Value::Array(tables) => tables.last_mut().unwrap().as_table_mut().unwrap(),
            t => t.as_table_mut().unwrap(),
        }
    };
    t.insert(key.to_string(), value);
}

/// Every (table, key) of a document, tables one level deep (an array of tables: the keys
/// of any of them).
fn keys(doc: &Table) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, val) in doc {
        match val {
            Value::Table(t) => out.extend(t.keys().map(|kk| (k.clone(), kk.clone()))),
            Value::Array(a) if a.iter().all(Value::is_table) && !a.is_empty() => {
                for kk in a.iter().flat_map(|t| t.as_table().unwrap().keys()) {
                    if !out.contains(&(k.clone(), kk.clone())) {
                        out.push((k.clone(), kk.clone()));
                    }
                }
            }
            _ => out.push((String::new(), k.clone())),
        }
    }
    out
}

/// The probe run's schedule before the probe values go into its last table: a first
/// generation that takes the base tables' values (and mixes in a record shard, so that the
/// `[records]` keys show).
fn probe_schedule() -> Value {
    let first: Table = toml::from_str("record_shards = 1").unwrap();
    Value::Array(vec![Value::Table(first), Value::Table(Table::new())])
}

#[test]
fn every_documented_key_parses_and_reaches_its_use() {
    let text = full_scale_text();
    // The shipped file as it is: a valid config.
    TrainConfig::from_toml(&text).unwrap();
    let documented: Table = toml::from_str(&uncommented(&text)).unwrap();
    let checks = checks();

    // The documented keys and the checked keys are the same.
    let doc_keys = keys(&documented);
    for (t, k) in &doc_keys {
        assert!(
            checks.iter().any(|(ct, ck, ..)| ct == t && ck == k),
            "{t}.{k} is documented in configs/full-scale.toml but has no reach check here: add one"
        );
    }
    for (t, k, ..) in &checks {
        assert!(
            doc_keys.iter().any(|(dt, dk)| dt == t && dk == k),
            "{t}.{k} is not documented in full-scale.toml"
        );
    }

    let tmp = tempfile::Builder::new()
        .prefix("keima-config-reach-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let dir = tmp.path();
    let doc_data =
        data(dir, "doc", &["startpos moves 7g7f", "startpos moves 2g2f", "startpos moves 5g5f"], 100_001, 65);
    let probe_data = data(dir, "probe", &["startpos moves 7g7f 3c3d", "startpos moves 2g2f 8c8d"], 10, 3);
    let all = [&doc_data, &probe_data];

    // 1. The documented values arrive.
    let mut doc = documented.clone();
    use_data(&mut doc, &doc_data);
    // 2. A probe value for every key arrives.
    let mut probe = Table::new();
    probe.insert("generation".into(), probe_schedule());
    for (t, k, value, _) in &checks {
        if !value.is_empty() {
            let parsed: Table = toml::from_str(&format!("x = {value}")).unwrap();
            set(&mut probe, t, k, parsed["x"].clone());
        }
    }
    use_data(&mut probe, &probe_data);
    for (run, values) in [("documented", &doc), ("probe", &probe)] {
        let r = reach(values, &all);
        for (t, k, _, check) in &checks {
            let want = get(values, t, k).unwrap();
            assert_eq!(&check(&r), want, "{t}.{k}: the {run} value does not reach its use");
        }
    }

    // 3. Without the keys, no probe value shows: each probe is not a default.
    let mut defaults = Table::new();
    for t in ["selfplay", "teacher", "records"] {
        defaults.insert(t.into(), Value::Table(Table::new()));
    }
    use_data(&mut defaults, &doc_data);
    let r = reach(&defaults, &all);
    for (t, k, _, check) in &checks {
        assert_ne!(&check(&r), get(&probe, t, k).unwrap(), "{t}.{k}: the probe value is the default");
    }
}

#[test]
fn an_unknown_key_is_refused_by_name_in_every_table() {
    let documented: Table = toml::from_str(&uncommented(&full_scale_text())).unwrap();
    let tables: Vec<String> = std::iter::once(String::new())
        .chain(documented.iter().filter(|(_, v)| v.is_table() || v.is_array()).map(|(k, _)| k.clone()))
        .chain(["loss", "adagrad", "init", "validation"].map(String::from))
        .collect();
    for t in tables {
        let mut doc = documented.clone();
        set(&mut doc, &t, "bogus_key", Value::Integer(1));
        let e = TrainConfig::from_toml(&toml::to_string(&doc).unwrap()).unwrap_err();
        assert!(e.to_string().contains("bogus_key"), "[{t}]: {e}");
    }
}

/// The recipes shipped for `keima train` parse and pass the config checks as written (a
/// renamed key or a value the checks refuse would otherwise only show when a user runs it).
#[test]
fn shipped_train_recipes_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
    // Each recipe's teacher limit per generation (one entry without a schedule), and the
    // CPU-hours it stops at (the recipes named for their hours stop there by themselves).
    let recipes = [
        ("quickstart.toml", vec![SearchLimit::Nodes(1500)], None),
        ("strength-1h.toml", vec![SearchLimit::Depth(4)], Some(1.0)),
        ("curve-3h.toml", vec![SearchLimit::Depth(4), SearchLimit::Depth(5)], Some(3.0)),
        (
            "cluster-1000h.toml",
            vec![SearchLimit::Depth(6), SearchLimit::Depth(8), SearchLimit::Depth(10)],
            None,
        ),
    ];
    for (name, limits, cpu_hours) in recipes {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let mut cfg = TrainConfig::from_toml(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(cfg.cpu_hours, cpu_hours, "{name}");
        // The openings are read (paths are relative to the project root) and the random
        // moves checked against them: the plies 1..=24 these recipes once asked for lay
        // inside their 24-move openings and were never played.
        if let Some(sp) = cfg.selfplay.as_mut()
            && let Some(openings) = sp.openings.as_mut()
        {
            *openings = dir.join("..").join(&openings);
            load_sources(&cfg).unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut void = cfg.clone();
            let play = &mut void.selfplay.as_mut().unwrap().play;
            (play.random_moves, play.random_min_ply, play.random_max_ply) = (8, 1, 24);
            let err = load_sources(&void).err().unwrap_or_else(|| panic!("{name}: plies 1..=24 accepted"));
            assert!(err.contains("[selfplay] random_max_ply"), "{name}: {err}");
        }
        // Every `[elo] every` merges gets its point (none is skipped for lack of a checkpoint).
        if let Some(e) = &cfg.elo {
            assert_eq!(e.sparse_points_warning(cfg.coordinator.checkpoint_every), None, "{name}");
        }
        let selfplay = cfg.selfplay.as_ref().unwrap_or_else(|| panic!("{name}: no [selfplay]"));
        assert_eq!(selfplay.search.limit, limits[0], "{name}");
        if limits.len() > 1 {
            assert_eq!(cfg.generation.len(), limits.len(), "{name}: generations");
            for (g, (generation, limit)) in cfg.generation.iter().zip(&limits).enumerate() {
                assert_eq!(
                    generation.limit.unwrap_or(selfplay.search.limit),
                    *limit,
                    "{name}: generation {g}"
                );
            }
        }
    }
}
