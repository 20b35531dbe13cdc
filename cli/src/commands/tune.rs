//! `keima tune`: SPSA over game pairs (`engine_core::play::spsa`) of the search's numbers
//! (`engine_core::search::params`). Each pair is one engine with θ + cδ against the same
//! engine with θ − cδ, given as its `SearchParams` option, at a node budget, from an
//! opening played with colours swapped. The state is written after every pair, atomically,
//! so `--resume` goes on after a stop or a crash; the last line says how to check the
//! result with `keima match --sprt`.

use super::CommandResult;
use clap::Args;
use engine_core::play::spsa::{Perturbation, SpsaState};
use engine_core::rng::SplitMix64;
use engine_core::rules::UsiPosition;
use engine_core::search::params::{PARAMS, ParamSpec, spec};
use engine_core::teacher::load_openings;
use indicatif::{ProgressBar, ProgressStyle};
use keima_worker::usi::client::{UsiClient, engine_argv};
use keima_worker::usi::game::{GameSettings, UsiOpening, play_game};
use keima_worker::usi::limit::Limit;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The state file in `--out`.
pub const STATE_FILE: &str = "spsa.json";

#[derive(Args)]
pub struct TuneArgs {
    /// Print the tunable parameters (name, default, range, step) and exit.
    #[arg(long)]
    list: bool,
    /// The engine: a command line (split on whitespace), or `self` for `keima usi`. It must
    /// take the `SearchParams` option as `keima usi` does [default: self].
    #[arg(long)]
    engine: Option<String>,
    /// A USI option for both sides, `NAME=VALUE` (repeatable), e.g. `EvalDir=runs/x/eval`.
    #[arg(long = "option", value_name = "NAME=VALUE")]
    option: Vec<String>,
    /// Parameters to tune, comma-separated (default: all of `--list`).
    #[arg(long, value_delimiter = ',')]
    params: Vec<String>,
    /// Game pairs (SPSA iterations) of the whole tune; its schedules are set by it.
    #[arg(long, default_value_t = 2000)]
    pairs: u64,
    /// Nodes per move [default: 10000].
    #[arg(long)]
    nodes: Option<u64>,
    /// The step per won pair at the end, as a fraction of a parameter's step (fishtest's
    /// r_end). Larger moves faster and noisier.
    #[arg(long, default_value_t = 0.002)]
    r_end: f64,
    /// Openings, as `keima match --openings` takes them; without it the initial position.
    #[arg(long)]
    openings: Option<PathBuf>,
    /// Seed of the perturbations and of the openings' order.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Pairs played at the same time (each with its own two engine processes).
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// A game reaching this many plies is a draw [default: 256].
    #[arg(long)]
    max_plies: Option<u32>,
    /// Seconds to wait for usiok / readyok and for a move.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Directory of the state (`spsa.json`).
    #[arg(long, required_unless_present = "list")]
    out: Option<PathBuf>,
    /// Go on with the tune in `--out`: its parameters, pairs, rates and seed, and the games'
    /// engine, options, nodes, openings and move cap as it was started with (given again,
    /// they must be the same).
    #[arg(long)]
    resume: bool,
    /// Print where the tune in `--out` stands (each parameter's start, estimate, how far
    /// it moved and how far in the last tenth of the pairs) and exit; plays nothing, so it
    /// may be run while the tune plays.
    #[arg(long, conflicts_with = "resume")]
    status: bool,
}

impl TuneArgs {
    /// `--list` and `--status` only print; a tune talks to the engines it started.
    pub fn only_prints(&self) -> bool {
        self.list || self.status
    }
}

/// How a tune's games are played: part of the tune, so stored with it and taken back on
/// `--resume` (a resumed tune at another budget would tune something else).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct TuneGames {
    engine: String,
    options: Vec<String>,
    nodes: u64,
    openings: Option<PathBuf>,
    max_plies: u32,
}

/// The state file: the SPSA state and the games' settings. Files written before the
/// settings were stored have none; a resume of one takes the settings given (or the
/// defaults), as it did then.
#[derive(Serialize, Deserialize)]
struct TuneFile {
    #[serde(flatten)]
    spsa: SpsaState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    games: Option<TuneGames>,
}

impl TuneGames {
    /// The settings given on the command line, defaults for those left out.
    fn from_args(args: &TuneArgs) -> TuneGames {
        TuneGames {
            engine: args.engine.clone().unwrap_or_else(|| "self".to_string()),
            options: args.option.clone(),
            nodes: args.nodes.unwrap_or(10_000),
            openings: args.openings.clone(),
            max_plies: args.max_plies.unwrap_or(256),
        }
    }

    /// The stored settings, checked against those given again: each given one must be the
    /// same as stored.
    fn resumed(stored: TuneGames, args: &TuneArgs, path: &Path) -> Result<TuneGames, String> {
        let differs = |flag: &str, given: String, had: String| {
            Err(format!(
                "--resume: {flag} {given} differs from the tune's {had} (stored in {}); leave it out to go on as started",
                path.display()
            ))
        };
        if let Some(e) = &args.engine
            && *e != stored.engine
        {
            return differs("--engine", format!("{e:?}"), format!("{:?}", stored.engine));
        }
        if !args.option.is_empty() && args.option != stored.options {
            return differs("--option", format!("{:?}", args.option), format!("{:?}", stored.options));
        }
        if let Some(n) = args.nodes
            && n != stored.nodes
        {
            return differs("--nodes", n.to_string(), stored.nodes.to_string());
        }
        if let Some(o) = &args.openings
            && Some(o) != stored.openings.as_ref()
        {
            let had = stored.openings.as_ref().map_or("none".to_string(), |p| p.display().to_string());
            return differs("--openings", o.display().to_string(), had);
        }
        if let Some(m) = args.max_plies
            && m != stored.max_plies
        {
            return differs("--max-plies", m.to_string(), stored.max_plies.to_string());
        }
        Ok(stored)
    }
}

fn list() -> CommandResult {
    println!("{:<20} {:>8} {:>15} {:>6}  meaning", "name", "default", "range", "step");
    for p in PARAMS {
        println!(
            "{:<20} {:>8} {:>15} {:>6}  {}",
            p.name,
            p.default,
            format!("{}..={}", p.min, p.max),
            p.step,
            p.doc.trim()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The table of `keima tune --status` (and of a tune's end): per parameter its start, the
/// estimate, the move from the start and over the last tenth of the pairs in steps (the
/// perturbation at the end, `c_end`): a parameter still moving in the last tenth has not
/// settled.
fn print_status(st: &SpsaState, path: &Path) {
    let [m2, m1, z, p1, p2] = st.outcomes;
    println!(
        "tune {}: {} of {} pairs ({:.0}%); plus side's wins − losses per pair: −2 {m2}, −1 {m1}, 0 {z}, +1 {p1}, +2 {p2}",
        path.display(),
        st.done,
        st.iterations,
        100.0 * st.done as f64 / st.iterations as f64
    );
    let recent = st.values_at(st.done.saturating_sub(st.iterations / 10));
    println!(
        "{:<20} {:>8} {:>10} {:>15} {:>14} {:>16}",
        "name", "start", "estimate", "range", "moved (steps)", "last 10% (steps)"
    );
    for (i, p) in st.params.iter().enumerate() {
        let last = match &recent {
            Some(v) => format!("{:+.2}", (p.value - v[i]) / p.c_end),
            None => "unknown".to_string(),
        };
        println!(
            "{:<20} {:>8} {:>10.1} {:>15} {:>+14.2} {:>16}",
            p.name,
            p.start,
            p.value,
            format!("{}..={}", p.min, p.max),
            (p.value - p.start) / p.c_end,
            last
        );
    }
    // The estimate as it stands, ready for `keima match --option1 SearchParams=...`.
    println!("SearchParams={}", st.values_text());
}

fn chosen_params(names: &[String]) -> Result<Vec<&'static ParamSpec>, String> {
    if names.is_empty() {
        return Ok(PARAMS.iter().collect());
    }
    let mut out: Vec<&'static ParamSpec> = Vec::new();
    for n in names {
        let s = spec(n.trim())
            .ok_or_else(|| format!("--params: unknown parameter {n:?} (see `keima tune --list`)"))?;
        if out.iter().any(|p| p.name == s.name) {
            return Err(format!("--params: {n} given twice"));
        }
        out.push(s);
    }
    Ok(out)
}

fn read_state(path: &Path, flag: &str) -> Result<TuneFile, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("{flag}: reading {}: {e}", path.display()))?;
    let file: TuneFile =
        serde_json::from_str(&text).map_err(|e| format!("{flag}: {}: {e}", path.display()))?;
    let state = &file.spsa;
    state.validate().map_err(|e| format!("{flag}: {}: {e}", path.display()))?;
    for p in &state.params {
        if spec(&p.name).is_none() {
            return Err(format!(
                "{flag}: {}: parameter {:?} is not one of this build's (see `keima tune --list`)",
                path.display(),
                p.name
            ));
        }
    }
    Ok(file)
}

fn write_state(path: &Path, state: &SpsaState, games: &TuneGames) -> Result<(), String> {
    let file = TuneFile { spsa: state.clone(), games: Some(games.clone()) };
    let text = serde_json::to_string_pretty(&file).expect("json");
    engine_core::fsutil::write_atomic(path, text.as_bytes())
        .map_err(|e| format!("{e} (the tune stopped here)"))
}

fn openings(games: &TuneGames, seed: u64) -> Result<Vec<UsiOpening>, String> {
    let Some(path) = &games.openings else {
        let root = engine_core::rules::Position::startpos();
        return Ok(vec![UsiOpening { index: 0, root_cmd: "startpos".into(), root, moves: Vec::new() }]);
    };
    let mut list = load_openings(path).map_err(|e| format!("--openings {e}"))?;
    let mut rng = SplitMix64::new(seed);
    for i in (1..list.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        list.swap(i, j);
    }
    Ok(list
        .iter()
        .enumerate()
        .map(|(i, o)| UsiOpening {
            index: i,
            root_cmd: UsiPosition::format(&o.start, []),
            root: o.start,
            moves: o.moves.clone(),
        })
        .collect())
}

/// Starts an engine and checks that it takes `SearchParams`: one that does not would play
/// every pair with its own numbers, and the tune would measure nothing.
fn start_engine(ctx: &Ctx) -> Result<UsiClient, String> {
    let c = UsiClient::start(&ctx.argv, &ctx.options, ctx.settings.timeout)?;
    if !c.option_names.iter().any(|n| n.eq_ignore_ascii_case("SearchParams")) {
        let label = c.label().to_string();
        c.quit();
        return Err(format!(
            "engine {label:?} has no SearchParams option: it cannot be tuned (give a Keima build that has it)"
        ));
    }
    Ok(c)
}

fn parse_options(list: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for o in list {
        let (n, v) = o.split_once('=').ok_or_else(|| format!("--option {o:?}: expected NAME=VALUE"))?;
        if n.trim().eq_ignore_ascii_case("SearchParams") {
            return Err("--option SearchParams: the tune sets it; leave it out".to_string());
        }
        if n.trim().eq_ignore_ascii_case("EvalDir") && !v.trim().is_empty() {
            // Keima given an eval it cannot load plays material only, saying so only in an
            // info string: the tune would tune the wrong search.
            engine_core::eval::kppt_file::load_kppt_dir(Path::new(v.trim())).map_err(|e| {
                format!("--option {o}: {e} (export an eval there first, e.g. `keima export`)")
            })?;
        }
        out.push((n.trim().to_string(), v.trim().to_string()));
    }
    Ok(out)
}

struct Ctx<'a> {
    argv: Vec<String>,
    options: Vec<(String, String)>,
    openings: Vec<UsiOpening>,
    settings: GameSettings,
    state: &'a Mutex<SpsaState>,
    games: TuneGames,
    path: PathBuf,
    abort: AtomicBool,
    faults: Mutex<u64>,
}

/// Plays pairs until the tune has handed out all of its iterations.
fn worker(ctx: &Ctx, pb: &ProgressBar) -> Result<(), String> {
    let mut engines: [Option<UsiClient>; 2] = [None, None];
    loop {
        if ctx.abort.load(Ordering::SeqCst) {
            break;
        }
        let (pert, texts) = {
            let mut st = ctx.state.lock().unwrap_or_else(PoisonError::into_inner);
            if st.started >= st.iterations {
                break;
            }
            let p: Perturbation = st.next_perturbation();
            let texts = [st.text_of(&p.plus), st.text_of(&p.minus)];
            (p, texts)
        };
        let opening = &ctx.openings[pert.k as usize % ctx.openings.len()];
        let mut plus_points = 0i32;
        for (slot, text) in engines.iter_mut().zip(&texts) {
            if slot.is_none() {
                *slot = Some(start_engine(ctx)?);
            }
            let c = slot.as_mut().expect("started above");
            c.send(&format!("setoption name SearchParams value {text}"))
                .map_err(|e| format!("{}: {e}", c.label()))?;
        }
        for plus_black in [true, false] {
            // engine1 (slot 0) is always the plus side.
            let played = play_game(&mut engines, opening, plus_black, &ctx.settings)?;
            if played.fault.is_some() {
                *ctx.faults.lock().unwrap_or_else(PoisonError::into_inner) += 1;
            }
            plus_points += match played.engine1_won {
                Some(true) => 1,
                Some(false) => -1,
                None => 0,
            };
            // An engine that died is started again, with this pair's parameters.
            for (slot, text) in engines.iter_mut().zip(&texts) {
                if slot.is_none() {
                    let mut c = start_engine(ctx)?;
                    c.send(&format!("setoption name SearchParams value {text}"))
                        .map_err(|e| format!("{}: {e}", c.label()))?;
                    *slot = Some(c);
                }
            }
        }
        let message = {
            let mut st = ctx.state.lock().unwrap_or_else(PoisonError::into_inner);
            st.apply(&pert, plus_points);
            write_state(&ctx.path, &st, &ctx.games)?;
            st.values_text()
        };
        pb.set_message(message);
        pb.inc(1);
    }
    for c in engines.into_iter().flatten() {
        c.quit();
    }
    Ok(())
}

pub fn run(args: TuneArgs) -> CommandResult {
    if args.list {
        return list();
    }
    let out = args.out.clone().expect("clap requires --out without --list");
    let path = out.join(STATE_FILE);
    if args.status {
        let file = read_state(&path, "--status")?;
        print_status(&file.spsa, &path);
        return Ok(ExitCode::SUCCESS);
    }
    let (state, games) = if args.resume {
        let file = read_state(&path, "--resume")?;
        let games = match file.games {
            Some(stored) => TuneGames::resumed(stored, &args, &path)?,
            None => TuneGames::from_args(&args),
        };
        (file.spsa, games)
    } else {
        if path.exists() {
            return Err(format!(
                "{} exists: give --resume to go on with that tune, or another --out",
                path.display()
            ));
        }
        if args.pairs == 0 {
            return Err("--pairs must be at least 1".to_string());
        }
        if !(args.r_end.is_finite() && args.r_end > 0.0 && args.r_end <= 1.0) {
            return Err(format!("--r-end {}: expected a number in (0, 1]", args.r_end));
        }
        let specs = chosen_params(&args.params)?;
        (SpsaState::new(&specs, args.pairs, args.r_end, args.seed), TuneGames::from_args(&args))
    };
    if games.nodes == 0 {
        return Err("--nodes must be at least 1".to_string());
    }
    // Pairs that were running when the last run stopped start again.
    let mut state = state;
    state.started = state.done;
    std::fs::create_dir_all(&out).map_err(|e| format!("--out {}: {e}", out.display()))?;
    write_state(&path, &state, &games)?;
    let (done_before, total) = (state.done, state.iterations);
    let state = Mutex::new(state);
    let seed = state.lock().unwrap_or_else(PoisonError::into_inner).seed;
    let ctx = Ctx {
        argv: engine_argv(&games.engine)?,
        options: parse_options(&games.options)?,
        openings: openings(&games, seed)?,
        settings: GameSettings {
            limit: Limit::Nodes([games.nodes, games.nodes]),
            max_plies: games.max_plies,
            time_margin: Duration::from_secs(1),
            timeout: Duration::from_secs(args.timeout),
            event: "keima tune".to_string(),
        },
        state: &state,
        games: games.clone(),
        path: path.clone(),
        abort: AtomicBool::new(false),
        faults: Mutex::new(0),
    };
    let pb = ProgressBar::new(total);
    pb.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} pairs {elapsed_precise} eta {eta}  {wide_msg}")
            .expect("valid template"),
    );
    pb.set_position(done_before);
    let errors = Mutex::new(Vec::<String>::new());
    let threads = args.concurrency.clamp(1, (total - done_before).max(1) as usize);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                if let Err(e) = worker(&ctx, &pb) {
                    ctx.abort.store(true, Ordering::SeqCst);
                    errors.lock().unwrap_or_else(PoisonError::into_inner).push(e);
                }
            });
        }
    });
    pb.finish_and_clear();
    let faults = *ctx.faults.lock().unwrap_or_else(PoisonError::into_inner);
    drop(ctx);
    let st = state.into_inner().unwrap_or_else(PoisonError::into_inner);
    if let Some(e) = errors.into_inner().unwrap_or_else(PoisonError::into_inner).first() {
        return Err(format!(
            "{e} ({} of {} pairs done; `--resume` goes on from there)",
            st.done, st.iterations
        ));
    }
    for p in &st.params {
        tracing::info!(param = %p.name, start = p.start, value = p.value, "tuned");
    }
    // The status table already gives the outcomes; the summary adds the faults.
    print_status(&st, &path);
    println!(
        "tune: {} of {} pairs ({faults} games ended by a fault); state {}",
        st.done,
        st.iterations,
        path.display()
    );
    println!(
        "check it: keima match --engine1 self --engine2 self --option1 SearchParams={} --nodes {} --sprt 0,5 ... (the same --option for both sides)",
        st.values_text(),
        games.nodes
    );
    Ok(ExitCode::SUCCESS)
}
