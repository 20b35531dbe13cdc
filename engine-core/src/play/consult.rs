//! Consultation (合議, research.md §3): several players search the same position and
//! vote. Players differ by random evaluation noise (`random`: one eval, player i adds
//! N(0, D²) noise fixed per position by its own seed) or by their evaluation files
//! (`evals`). The move played is the majority's (ties broken by the summed scores of the
//! voters) or the move of the player with the highest score (`max_eval`).
//!
//! Players run on their own searchers and hash tables, `threads` of them at a time; with a
//! clock, each round of players gets an equal share of the move's time, so the whole vote
//! fits the time of one move. Node and depth limits apply to each player.

use crate::eval::Evaluator;
use crate::eval::noise::EvalNoise;
use crate::rules::{Move, Position};
use crate::search::{Limits, SearchResult, Searcher, TranspositionTable};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How the players differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One player (consultation off).
    None,
    /// One evaluation, Gaussian noise per player.
    Random,
    /// One evaluation directory per player.
    Evals,
}

/// How the move is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vote {
    Majority,
    MaxEval,
}

/// The USI options of consultation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsultOptions {
    pub mode: Mode,
    pub players: usize,
    /// Standard deviation of the noise, eval units (`random`).
    pub noise: i32,
    /// One KPPT directory per player (`evals`).
    pub eval_dirs: Vec<String>,
    pub vote: Vote,
    pub seed: u64,
}

impl Default for ConsultOptions {
    fn default() -> Self {
        ConsultOptions {
            mode: Mode::None,
            players: 10,
            noise: 175,
            eval_dirs: Vec::new(),
            vote: Vote::Majority,
            seed: 1,
        }
    }
}

/// The `option` lines of the `usi` answer.
pub const USI_OPTIONS: [&str; 6] = [
    "option name Consultation type combo default none var none var random var evals",
    "option name ConsultPlayers type spin default 10 min 1 max 64",
    "option name ConsultNoise type spin default 175 min 0 max 10000",
    "option name ConsultEvalDirs type string default <empty>",
    "option name ConsultVote type combo default majority var majority var max_eval",
    "option name ConsultSeed type spin default 1 min 0 max 4294967295",
];

impl ConsultOptions {
    /// Applies `setoption name <name> value <value>` if `name` is a consultation option
    /// (`None` otherwise); an error names the option and the value.
    pub fn set(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        let bad = |what: &str| Err(format!("option {name}: {what} {value:?}"));
        let number = |v: &str| v.parse::<u64>().map_err(|_| format!("option {name}: bad number {v:?}"));
        Some(match name.to_ascii_lowercase().as_str() {
            "consultation" => match value.to_ascii_lowercase().as_str() {
                "none" => self.set_mode(Mode::None),
                "random" => self.set_mode(Mode::Random),
                "evals" => self.set_mode(Mode::Evals),
                _ => bad("expected none, random or evals, got"),
            },
            "consultplayers" => number(value).map(|v| self.players = v.clamp(1, 64) as usize),
            "consultnoise" => number(value).map(|v| self.noise = v.min(10_000) as i32),
            "consultevaldirs" => {
                // Separated by `;` (paths may contain spaces and commas).
                self.eval_dirs =
                    value.split(';').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
                Ok(())
            }
            "consultvote" => match value.to_ascii_lowercase().as_str() {
                "majority" => self.set_vote(Vote::Majority),
                "max_eval" => self.set_vote(Vote::MaxEval),
                _ => bad("expected majority or max_eval, got"),
            },
            "consultseed" => number(value).map(|v| self.seed = v),
            _ => return None,
        })
    }

    fn set_mode(&mut self, mode: Mode) -> Result<(), String> {
        self.mode = mode;
        Ok(())
    }

    fn set_vote(&mut self, vote: Vote) -> Result<(), String> {
        self.vote = vote;
        Ok(())
    }

    /// Whether more than one player searches.
    pub fn active(&self) -> bool {
        match self.mode {
            Mode::None => false,
            Mode::Random => self.players > 1,
            Mode::Evals => !self.eval_dirs.is_empty(),
        }
    }

    /// Number of players (`evals`: one per directory).
    pub fn player_count(&self) -> usize {
        match self.mode {
            Mode::None => 1,
            Mode::Random => self.players,
            Mode::Evals => self.eval_dirs.len(),
        }
    }

    /// Player `i`'s noise (`random` only), its seed derived from `seed` and `i`.
    pub fn noise_of(&self, i: usize) -> Option<EvalNoise> {
        (self.mode == Mode::Random && self.noise > 0).then(|| EvalNoise {
            sigma: self.noise,
            seed: self.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)
                ^ (i as u64 + 1).wrapping_mul(0xd1b5_4a32_d192_ed03),
        })
    }
}

/// The players: one searcher each (own hash table of `hash_mib / players`, at least 1 MiB).
pub fn make_players(opts: &ConsultOptions, evaluators: &[Arc<Evaluator>], hash_mib: usize) -> Vec<Searcher> {
    let n = opts.player_count();
    let hash = (hash_mib / n).max(1);
    (0..n)
        .map(|i| {
            let ev = evaluators[i % evaluators.len()].clone();
            let mut s = Searcher::new(ev, Arc::new(TranspositionTable::new(hash)));
            s.options.eval_noise = opts.noise_of(i);
            s
        })
        .collect()
}

/// The chosen player's index: the majority move (ties: the larger sum of the voters'
/// scores, then the lower player index), or the highest score (`MaxEval`; ties: lower
/// index). Players without a move (resignation) vote for no move.
pub fn choose(results: &[SearchResult], vote: Vote) -> usize {
    match vote {
        Vote::MaxEval => (0..results.len())
            .max_by_key(|&i| (results[i].score, std::cmp::Reverse(i)))
            .expect("at least one player"),
        Vote::Majority => {
            let mut tally: Vec<(Move, usize, i64, usize)> = Vec::new(); // move, votes, score sum, first voter
            for (i, r) in results.iter().enumerate() {
                match tally
                    .iter_mut()
                    .find(|t| t.0 == r.best_move && r.declare_win == results[t.3].declare_win)
                {
                    Some(t) => {
                        t.1 += 1;
                        t.2 += r.score as i64;
                    }
                    None => tally.push((r.best_move, 1, r.score as i64, i)),
                }
            }
            let best =
                tally.iter().max_by_key(|t| (t.1, t.2, std::cmp::Reverse(t.3))).expect("at least one player");
            // The voter with the highest score speaks for the move (its PV and score).
            (0..results.len())
                .filter(|&i| {
                    results[i].best_move == best.0 && results[i].declare_win == results[best.3].declare_win
                })
                .max_by_key(|&i| (results[i].score, std::cmp::Reverse(i)))
                .expect("the move has a voter")
        }
    }
}

/// Searches `start` + `moves` with every player (`threads` at a time; with a clock each
/// round gets `1 / rounds` of the time) and returns each player's result and the chosen
/// index. `stop` stops every player (USI `stop`).
pub fn search(
    players: &mut [Searcher],
    start: &Position,
    moves: &[Move],
    limits: Limits,
    threads: usize,
    stop: &AtomicBool,
) -> Vec<SearchResult> {
    let threads = threads.max(1);
    let rounds = players.len().div_ceil(threads) as u32;
    let share = |d: Option<Duration>| d.map(|d| d / rounds);
    let limits = Limits {
        time: share(limits.time),
        soft_time: share(limits.soft_time),
        free_time: share(limits.free_time),
        ..limits
    };
    let mut results: Vec<Option<SearchResult>> = vec![None; players.len()];
    for (round, group) in players.chunks_mut(threads).enumerate() {
        let flags: Vec<Arc<AtomicBool>> = group.iter().map(Searcher::stop_flag).collect();
        let done = AtomicBool::new(false);
        let round_results: Vec<SearchResult> = std::thread::scope(|scope| {
            // Forward an outer stop to this round's players until they all finished (a
            // search clears its own flag when it starts, so keep setting it).
            scope.spawn(|| {
                while !done.load(Ordering::SeqCst) {
                    if stop.load(Ordering::SeqCst) {
                        for f in &flags {
                            f.store(true, Ordering::SeqCst);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
            let handles: Vec<_> = group
                .iter_mut()
                .map(|s| {
                    std::thread::Builder::new()
                        .stack_size(16 << 20)
                        .spawn_scoped(scope, move || {
                            s.set_position(start, moves);
                            s.go(limits, |_| {})
                        })
                        .expect("spawn a consultation player")
                })
                .collect();
            let out = handles.into_iter().map(|h| h.join().expect("a player's search panicked")).collect();
            done.store(true, Ordering::SeqCst);
            out
        });
        for (j, r) in round_results.into_iter().enumerate() {
            results[round * threads + j] = Some(r);
        }
    }
    results.into_iter().map(|r| r.expect("every player searched")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(m: &str, score: i32, pos: &Position) -> SearchResult {
        SearchResult {
            best_move: {
                let _ = pos;
                crate::rules::UsiPosition::parse(&format!("startpos moves {m}"))
                    .expect("legal test move")
                    .moves[0]
            },
            declare_win: false,
            score,
            depth: 1,
            seldepth: 1,
            nodes: 1,
            elapsed: Duration::ZERO,
            pv: Vec::new(),
        }
    }

    #[test]
    fn majority_then_summed_scores_then_max_eval() {
        let p = Position::startpos();
        let rs = vec![result("7g7f", 10, &p), result("2g2f", 90, &p), result("7g7f", 20, &p)];
        assert_eq!(choose(&rs, Vote::Majority), 2, "7g7f has two votes; its best voter speaks");
        assert_eq!(choose(&rs, Vote::MaxEval), 1);
        // A tie in votes: the larger sum of scores wins (2g2f: 90 + 5 > 7g7f: 10 + 20).
        let rs = vec![
            result("7g7f", 10, &p),
            result("2g2f", 90, &p),
            result("7g7f", 20, &p),
            result("2g2f", 5, &p),
        ];
        assert_eq!(rs[choose(&rs, Vote::Majority)].best_move, rs[1].best_move);
        // Equal scores under max_eval: the lower index.
        let rs = vec![result("7g7f", 30, &p), result("2g2f", 30, &p)];
        assert_eq!(choose(&rs, Vote::MaxEval), 0);
    }

    #[test]
    fn options_parse_and_reject_bad_values() {
        let mut o = ConsultOptions::default();
        assert!(!o.active());
        assert_eq!(o.set("Consultation", "random"), Some(Ok(())));
        assert_eq!(o.set("ConsultPlayers", "5"), Some(Ok(())));
        assert_eq!(o.set("ConsultVote", "max_eval"), Some(Ok(())));
        assert_eq!(o.set("ConsultEvalDirs", "a b; c,d ;"), Some(Ok(())));
        assert_eq!(o.eval_dirs, ["a b", "c,d"]);
        assert!(o.active());
        assert_eq!(o.player_count(), 5);
        assert!(matches!(o.set("Consultation", "bagging"), Some(Err(e)) if e.contains("Consultation")));
        assert!(matches!(o.set("ConsultNoise", "-3"), Some(Err(_))));
        assert_eq!(o.set("Hash", "3"), None);
        let seeds: std::collections::HashSet<u64> = (0..5).map(|i| o.noise_of(i).unwrap().seed).collect();
        assert_eq!(seeds.len(), 5, "each player its own noise");
        o.set("Consultation", "evals");
        assert_eq!(o.noise_of(0), None);
        assert_eq!(o.player_count(), 2);
    }
}
