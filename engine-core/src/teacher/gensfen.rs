//! Teacher generation: self-play games and replayed game records, each position searched
//! to a fixed depth or node count and turned into a [`PackedSfenValue`].
//!
//! No file-path policy lives here: the caller passes [`Worker`]s (a searcher with its own
//! transposition table) and a [`Sink`] for the records (a [`ShardWriter`], a `Vec`, ...).
//!
//! ## Conventions of the records written
//!
//! - `score`: the search score from the side to move's view, clamped to
//!   `±eval_limit` (and to the `i16` range).
//! - `mv`: the search's best move (Move16); 0 only when the search found no move (a
//!   declaration-win position of a replayed record).
//! - `game_ply`: `pos.ply()`, the SFEN move number (1 at the start position).
//! - `game_result`: the final result of the game from the side to move's view: +1 won,
//!   -1 lost, 0 draw.
//!
//! Skipped (and counted): positions with `ply < write_minply`, positions in check, positions
//! where a random opening move was played (not searched), duplicates (same Zobrist key as a
//! record already written in this run; a bounded [`KeyFilter`]).
//!
//! ## Self-play game end
//!
//! Checked before every move with [`Game::outcome`]: no legal move (the side to move
//! loses), fourfold repetition (draw) or perpetual check (the checker loses), entering-king
//! declaration (the declarer wins), `max_ply` moves from the game's start position (draw).
//! After each search, `|score| >= eval_limit` adjudicates the game for the side the score
//! favours (that position is still written, with its clamped score).
//!
//! ## Determinism
//!
//! Game `i` of a run uses its own PRNG seeded from `(seed, i)`; the worker's transposition
//! table and history/killer heuristics are cleared before each game; searches use a fixed
//! depth or node count only. So game `i` is the same whichever thread plays it, and
//! [`run_games`] hands finished games to the sink in game order: the output is byte-identical
//! for the same seed, settings and hash size, whatever the thread count.

pub use super::config::{GensfenConfig, SearchLimit, SelfPlayGames, TeacherSearch, UnknownResult};
pub use super::openings::Opening;
use super::psv::PackedSfenValue;
use super::shard::ShardWriter;
pub use super::stats::GensfenStats;
use crate::eval::Evaluator;
use crate::records::{GameRecord, Outcome};
use crate::rng::{Xoshiro256, mix64};
use crate::rules::game::{Game, GameRules};
use crate::rules::{Color, Move, Position};
use crate::search::{Searcher, TranspositionTable};
use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

// ---------------------------------------------------------------------------------------
// Seeds
// ---------------------------------------------------------------------------------------

/// The seed of game `index` of a run seeded with `seed`.
pub fn game_seed(seed: u64, index: u64) -> u64 {
    mix64(mix64(seed) ^ index.wrapping_mul(0xd1b5_4a32_d192_ed03))
}

// ---------------------------------------------------------------------------------------
// Sinks and the duplicate filter
// ---------------------------------------------------------------------------------------

/// Where records go. `write` returns `Ok(false)` when the record was refused.
pub trait Sink {
    fn write(&mut self, psv: &PackedSfenValue) -> io::Result<bool>;
}

impl Sink for ShardWriter {
    fn write(&mut self, psv: &PackedSfenValue) -> io::Result<bool> {
        ShardWriter::write(self, psv)
    }
}

impl Sink for Vec<PackedSfenValue> {
    fn write(&mut self, psv: &PackedSfenValue) -> io::Result<bool> {
        self.push(*psv);
        Ok(true)
    }
}

impl<S: Sink + ?Sized> Sink for &mut S {
    fn write(&mut self, psv: &PackedSfenValue) -> io::Result<bool> {
        (**self).write(psv)
    }
}

/// A bounded, direct-mapped set of position keys: slot `key & mask` remembers the last key
/// stored there. A key is a duplicate when its slot holds it; a collision forgets the
/// older key (so a duplicate may rarely pass, never a false duplicate except key 0, which
/// is never reported). Deterministic for a given insertion order.
pub struct KeyFilter {
    slots: Vec<u64>,
    mask: u64,
}

impl KeyFilter {
    /// `2^bits` slots (8 bytes each); `bits` is clamped to 4..=32.
    pub fn new(bits: u32) -> KeyFilter {
        let n = 1usize << bits.clamp(4, 32);
        KeyFilter { slots: vec![0; n], mask: n as u64 - 1 }
    }

    /// Inserts `key`; `true` if it was already present.
    pub fn check_and_insert(&mut self, key: u64) -> bool {
        let slot = &mut self.slots[(key & self.mask) as usize];
        if *slot == key && key != 0 {
            return true;
        }
        *slot = key;
        false
    }
}

/// A record waiting to be filtered and written.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    pub key: u64,
    pub psv: PackedSfenValue,
}

/// Everything one game produced.
#[derive(Clone, Debug, Default)]
pub struct GameBatch {
    pub records: Vec<Candidate>,
    /// Counters of this game (`positions_written` and `duplicates` are filled in by the
    /// [`Collector`]).
    pub stats: GensfenStats,
}

/// Applies the duplicate filter and writes batches to a sink, in the order given.
pub struct Collector<S: Sink> {
    sink: S,
    filter: KeyFilter,
    stats: GensfenStats,
}

impl<S: Sink> Collector<S> {
    pub fn new(sink: S, dedupe_bits: u32) -> Collector<S> {
        Collector { sink, filter: KeyFilter::new(dedupe_bits), stats: GensfenStats::default() }
    }

    pub fn push(&mut self, batch: &GameBatch) -> io::Result<()> {
        self.stats.merge(&batch.stats);
        for c in &batch.records {
            if self.filter.check_and_insert(c.key) {
                self.stats.duplicates += 1;
            } else if self.sink.write(&c.psv)? {
                self.stats.positions_written += 1;
            } else {
                self.stats.rejected += 1;
            }
        }
        Ok(())
    }

    pub fn stats(&self) -> &GensfenStats {
        &self.stats
    }

    pub fn into_parts(self) -> (S, GensfenStats) {
        (self.sink, self.stats)
    }
}

// ---------------------------------------------------------------------------------------
// Workers and games
// ---------------------------------------------------------------------------------------

/// A searcher with its own transposition table.
pub struct Worker {
    pub searcher: Searcher,
    tt: Arc<TranspositionTable>,
}

impl Worker {
    pub fn new(evaluator: Arc<Evaluator>, hash_mib: usize) -> Worker {
        let tt = Arc::new(TranspositionTable::new(hash_mib));
        Worker { searcher: Searcher::new(evaluator, tt.clone()), tt }
    }

    /// A worker whose every search uses `search_threads` threads (Lazy SMP over its
    /// table): for deep teachers when there are fewer games than cores. Searches with
    /// more than one thread are not reproducible.
    pub fn with_search_threads(evaluator: Arc<Evaluator>, hash_mib: usize, search_threads: usize) -> Worker {
        let mut w = Worker::new(evaluator, hash_mib);
        w.searcher.set_threads(search_threads);
        w
    }

    /// A worker over an existing searcher and the table it uses.
    pub fn from_parts(searcher: Searcher, tt: Arc<TranspositionTable>) -> Worker {
        Worker { searcher, tt }
    }

    /// Clears the table and the move-ordering heuristics (before each game).
    pub fn reset(&mut self) {
        self.tt.clear();
        self.searcher.clear_heuristics();
    }
}

fn clamp_score(score: i32, eval_limit: i32) -> i16 {
    let lim = eval_limit.clamp(1, i16::MAX as i32);
    score.clamp(-lim, lim) as i16
}

fn result_for(winner: Option<Color>, stm: Color) -> i8 {
    match winner {
        None => 0,
        Some(c) if c == stm => 1,
        Some(_) => -1,
    }
}

/// A searched position waiting for the game's result.
struct Pending {
    pos: Position,
    mv: Option<Move>,
    score: i16,
}

fn finish_batch(pending: Vec<Pending>, winner: Option<Color>, stats: GensfenStats) -> GameBatch {
    let records = pending
        .into_iter()
        .map(|p| Candidate {
            key: p.pos.key(),
            psv: PackedSfenValue::new(&p.pos, p.mv, p.score, result_for(winner, p.pos.side_to_move()))
                .expect("a position reached by legal moves from a valid start packs"),
        })
        .collect();
    GameBatch { records, stats }
}

/// Whether a searched position is written; counts the reason when it is not.
fn keep(pos: &Position, cfg: &GensfenConfig, stats: &mut GensfenStats) -> bool {
    if pos.ply() < cfg.search.write_minply {
        stats.skipped_min_ply += 1;
        false
    } else if pos.in_check() {
        stats.skipped_in_check += 1;
        false
    } else {
        true
    }
}

/// The plies (SFEN move numbers) at which game `rng` plays random moves.
fn random_plies(cfg: &SelfPlayGames, rng: &mut Xoshiro256) -> Vec<u32> {
    if cfg.random_moves == 0 || cfg.random_max_ply < cfg.random_min_ply {
        return Vec::new();
    }
    let mut range: Vec<u32> = (cfg.random_min_ply..=cfg.random_max_ply).collect();
    let n = (cfg.random_moves as usize).min(range.len());
    for i in 0..n {
        let j = i + rng.below(range.len() - i);
        range.swap(i, j);
    }
    range.truncate(n);
    range.sort_unstable();
    range
}

/// Plays one self-play game. `opening` moves are played first (not searched, not written);
/// then random moves at the plies drawn from `cfg`, and searched moves otherwise.
pub fn play_selfplay_game(
    worker: &mut Worker,
    cfg: &GensfenConfig,
    opening: &Opening,
    rng: &mut Xoshiro256,
) -> GameBatch {
    worker.reset();
    let mut stats = GensfenStats { games: 1, ..GensfenStats::default() };
    let mut game = Game::new(opening.start);
    for &m in &opening.moves {
        let legal = game.try_play(m);
        assert!(legal, "opening move {m} is illegal (openings are checked when parsed)");
    }
    let randoms = random_plies(&cfg.play, rng);
    let rules = GameRules { declaration: true, max_plies: Some(cfg.play.max_ply) };
    let limits = cfg.search.limit.limits();
    let mut pending = Vec::new();
    let winner = loop {
        if let Some(outcome) = game.outcome(&rules) {
            stats.count_end(outcome.reason);
            break outcome.winner;
        }
        let pos = *game.position();
        let stm = pos.side_to_move();
        if randoms.binary_search(&pos.ply()).is_ok() {
            let moves = pos.legal_moves();
            let m = moves.as_slice()[rng.below(moves.len())];
            stats.skipped_random_move += 1;
            game.play(m);
            continue;
        }
        worker.searcher.set_position(game.start(), game.moves());
        let r = worker.searcher.go(limits, |_| {});
        stats.nodes += r.nodes;
        stats.positions_searched += 1;
        if r.declare_win || r.best_move.is_none() {
            // Game::outcome above catches both; kept as a safety net.
            stats.end_declaration += 1;
            break Some(stm);
        }
        if keep(&pos, cfg, &mut stats) {
            pending.push(Pending {
                pos,
                mv: Some(r.best_move),
                score: clamp_score(r.score, cfg.search.eval_limit),
            });
        }
        if r.score.abs() >= cfg.search.eval_limit {
            stats.end_eval_limit += 1;
            break Some(if r.score > 0 { stm } else { stm.opponent() });
        }
        game.play(r.best_move);
    };
    stats.count_winner(winner);
    stats.total_plies = game.moves().len() as u64;
    finish_batch(pending, winner, stats)
}

/// Replays a game record: searches every position of its main line (the final one too,
/// unless the game is over there) and keeps the record's result.
///
/// A record whose result is unknown but whose final position has no legal move is a win
/// for the side that moved last; otherwise `cfg.unknown_result` decides.
pub fn teach_record(worker: &mut Worker, cfg: &GensfenConfig, record: &GameRecord) -> GameBatch {
    let moves = record.main_line();
    let skip = || {
        let stats = GensfenStats { skipped_unknown_result_games: 1, ..GensfenStats::default() };
        GameBatch { records: Vec::new(), stats }
    };
    let winner = match record.result.outcome {
        Outcome::BlackWin => Some(Color::Black),
        Outcome::WhiteWin => Some(Color::White),
        Outcome::Draw => None,
        Outcome::Unknown => {
            let last = record.final_position();
            if !last.has_legal_move() {
                Some(last.side_to_move().opponent())
            } else {
                match cfg.unknown_result {
                    UnknownResult::Skip => return skip(),
                    UnknownResult::Draw => None,
                    UnknownResult::LastMoverWins if moves.is_empty() => return skip(),
                    UnknownResult::LastMoverWins => Some(last.side_to_move().opponent()),
                }
            }
        }
    };
    worker.reset();
    let mut stats = GensfenStats { games: 1, ..GensfenStats::default() };
    let limits = cfg.search.limit.limits();
    let mut pending = Vec::new();
    let mut pos = record.start;
    for i in 0..=moves.len() {
        if keep(&pos, cfg, &mut stats) && (i < moves.len() || pos.has_legal_move()) {
            worker.searcher.set_position(&record.start, &moves[..i]);
            let r = worker.searcher.go(limits, |_| {});
            stats.nodes += r.nodes;
            stats.positions_searched += 1;
            let mv = if r.best_move.is_none() { None } else { Some(r.best_move) };
            pending.push(Pending { pos, mv, score: clamp_score(r.score, cfg.search.eval_limit) });
        }
        if let Some(&m) = moves.get(i) {
            pos.do_move(m);
        }
    }
    stats.count_winner(winner);
    stats.total_plies = moves.len() as u64;
    finish_batch(pending, winner, stats)
}

// ---------------------------------------------------------------------------------------
// Runs
// ---------------------------------------------------------------------------------------

/// Plays `games` jobs on `workers.len()` threads (one worker each); job `i` is
/// `job(worker, i)`. Finished batches go to `collector` in job order, and `progress` sees the
/// collector's running totals after each. Stops at the first sink error.
pub fn run_games<S, J>(
    workers: &mut [Worker],
    games: u64,
    job: J,
    collector: &mut Collector<S>,
    mut progress: impl FnMut(&GensfenStats),
) -> io::Result<()>
where
    S: Sink,
    J: Fn(&mut Worker, u64) -> GameBatch + Sync,
{
    assert!(!workers.is_empty(), "run_games needs at least one worker");
    if workers.len() == 1 {
        for i in 0..games {
            let batch = job(&mut workers[0], i);
            collector.push(&batch)?;
            progress(collector.stats());
        }
        return Ok(());
    }
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(u64, GameBatch)>();
    std::thread::scope(|scope| {
        for worker in workers.iter_mut() {
            let tx = tx.clone();
            let (next, stop, job) = (&next, &stop, &job);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= games {
                        break;
                    }
                    if tx.send((i, job(worker, i))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut waiting = BTreeMap::new();
        let mut expected = 0u64;
        let mut result = Ok(());
        for (i, batch) in rx {
            waiting.insert(i, batch);
            while let Some(batch) = waiting.remove(&expected) {
                expected += 1;
                if result.is_ok() {
                    result = collector.push(&batch);
                    if result.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    } else {
                        progress(collector.stats());
                    }
                }
            }
        }
        result
    })
}

/// Self-play: `games` games; game `i` takes the `i`-th of the openings in an order shuffled
/// by `cfg.seed` (repeating only after every opening is taken; the start position when
/// there are none), and plays with its own PRNG seeded by `game_seed(cfg.seed, i)`.
pub fn run_selfplay<S: Sink>(
    workers: &mut [Worker],
    cfg: &GensfenConfig,
    openings: &[Opening],
    games: u64,
    sink: S,
    progress: impl FnMut(&GensfenStats),
) -> io::Result<(S, GensfenStats)> {
    let startpos = Opening::startpos();
    // Games take the openings in a shuffled order, each once before any is taken again:
    // drawn with replacement, 40 games from 64 openings repeated about 10, and a repeated
    // opening without random moves replays the same game, all of its positions duplicates.
    let order = Xoshiro256::new(game_seed(cfg.seed, u64::MAX))
        .distinct_indices(openings.len(), games.min(openings.len() as u64) as usize);
    let job = |w: &mut Worker, i: u64| {
        let mut rng = Xoshiro256::new(game_seed(cfg.seed, i));
        let opening =
            if openings.is_empty() { &startpos } else { &openings[order[(i % order.len() as u64) as usize]] };
        play_selfplay_game(w, cfg, opening, &mut rng)
    };
    let mut collector = Collector::new(sink, cfg.search.dedupe_bits);
    run_games(workers, games, job, &mut collector, progress)?;
    Ok(collector.into_parts())
}

/// Record replay: every record in order.
pub fn run_records<S: Sink>(
    workers: &mut [Worker],
    cfg: &GensfenConfig,
    records: &[GameRecord],
    sink: S,
    progress: impl FnMut(&GensfenStats),
) -> io::Result<(S, GensfenStats)> {
    let job = |w: &mut Worker, i: u64| teach_record(w, cfg, &records[i as usize]);
    let mut collector = Collector::new(sink, cfg.search.dedupe_bits);
    run_games(workers, records.len() as u64, job, &mut collector, progress)?;
    Ok(collector.into_parts())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_spread() {
        let mut a = Xoshiro256::new(7);
        let mut b = Xoshiro256::new(7);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(Xoshiro256::new(8).next_u64(), xs[0]);
        let mut counts = [0u32; 5];
        for _ in 0..5000 {
            counts[a.below(5)] += 1;
        }
        assert!(counts.iter().all(|&c| (800..1200).contains(&c)), "{counts:?}");
        assert_ne!(game_seed(1, 0), game_seed(1, 1));
        assert_ne!(game_seed(1, 0), game_seed(2, 0));
    }

    #[test]
    fn random_plies_are_distinct_and_in_range() {
        let cfg =
            SelfPlayGames { random_moves: 5, random_min_ply: 3, random_max_ply: 9, ..Default::default() };
        let mut rng = Xoshiro256::new(1);
        for _ in 0..50 {
            let p = random_plies(&cfg, &mut rng);
            assert_eq!(p.len(), 5);
            assert!(p.windows(2).all(|w| w[0] < w[1]));
            assert!(p.iter().all(|x| (3..=9).contains(x)));
        }
        let many = SelfPlayGames { random_moves: 50, ..cfg };
        assert_eq!(random_plies(&many, &mut rng), (3..=9).collect::<Vec<_>>());
    }

    #[test]
    fn key_filter_finds_duplicates() {
        let mut f = KeyFilter::new(8);
        assert!(!f.check_and_insert(12345));
        assert!(f.check_and_insert(12345));
        assert!(!f.check_and_insert(12345 + 256)); // same slot: evicts
        assert!(!f.check_and_insert(12345));
        assert!(!f.check_and_insert(0));
        assert!(!f.check_and_insert(0));
    }

    #[test]
    fn scores_clamp_to_eval_limit_and_i16() {
        assert_eq!(clamp_score(31_990, 3000), 3000);
        assert_eq!(clamp_score(-31_990, 3000), -3000);
        assert_eq!(clamp_score(120, 3000), 120);
        assert_eq!(clamp_score(40_000, 100_000), i16::MAX);
    }
}
