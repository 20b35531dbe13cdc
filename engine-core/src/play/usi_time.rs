//! Time management ([`time_limits`]): the time this move may use without losing is
//! `remaining + increment + byoyomi`; a safety margin (`NetworkDelay`, default 120 ms, but
//! never more than half of that total) is kept back, so the hard limit (the search stops)
//! is at most `total - margin`. Within that, a move's shares come from the main time less
//! the margin: hard `(remaining - margin) / 8 + increment + byoyomi`, soft (no new
//! iteration starts once it is used, scaled by how settled the search is)
//! `(remaining - margin) / 40 + increment + byoyomi`. (Taking the margin off each share
//! instead left nothing of a short clock's share: at 3 s sudden death, 75 ms − 120 ms.)
//! Byoyomi is use-it-or-lose-it: the search never stops before `byoyomi - margin` (the free
//! time), and in pure byoyomi soft = hard. `movetime T` is treated as a byoyomi of `T`.

use crate::rules::Color;
use crate::search::Limits;
use std::time::Duration;

/// The arguments of a `go` command. Times are in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GoParams {
    pub depth: Option<i32>,
    pub nodes: Option<u64>,
    pub btime: Option<u64>,
    pub wtime: Option<u64>,
    pub binc: Option<u64>,
    pub winc: Option<u64>,
    pub byoyomi: Option<u64>,
    pub movetime: Option<u64>,
    pub infinite: bool,
    pub ponder: bool,
    /// `go mate T` / `go mate infinite`: solve the position as a mate problem.
    pub mate: Option<MateLimit>,
}

/// How long `go mate` may search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MateLimit {
    Millis(u64),
    /// Until a result or `stop`.
    Infinite,
}

impl GoParams {
    /// Parses the words after `go`. Unknown words are errors.
    pub fn parse(args: &str) -> Result<GoParams, String> {
        let mut p = GoParams::default();
        let mut words = args.split_whitespace();
        while let Some(w) = words.next() {
            let mut num = |name: &str| -> Result<u64, String> {
                let v = words.next().ok_or_else(|| format!("go {name}: missing value"))?;
                // Some GUIs send negative remaining times; treat them as 0.
                match v.parse::<i64>() {
                    Ok(n) => Ok(n.max(0) as u64),
                    Err(_) => Err(format!("go {name}: bad number {v:?}")),
                }
            };
            match w {
                "depth" => p.depth = Some(num(w)?.min(1000) as i32),
                "nodes" => p.nodes = Some(num(w)?),
                "btime" => p.btime = Some(num(w)?),
                "wtime" => p.wtime = Some(num(w)?),
                "binc" => p.binc = Some(num(w)?),
                "winc" => p.winc = Some(num(w)?),
                "byoyomi" => p.byoyomi = Some(num(w)?),
                "movetime" => p.movetime = Some(num(w)?),
                "infinite" => p.infinite = true,
                "mate" => {
                    p.mate = Some(match words.next() {
                        Some("infinite") => MateLimit::Infinite,
                        Some(v) => {
                            MateLimit::Millis(v.parse::<u64>().map_err(|_| {
                                format!("go mate: expected milliseconds or infinite, got {v:?}")
                            })?)
                        }
                        None => return Err("go mate: missing time (milliseconds or infinite)".to_string()),
                    })
                }
                "ponder" => p.ponder = true,
                other => return Err(format!("go: unsupported argument {other:?}")),
            }
        }
        Ok(p)
    }

    fn has_clock(&self) -> bool {
        self.btime.is_some()
            || self.wtime.is_some()
            || self.byoyomi.is_some()
            || self.binc.is_some()
            || self.winc.is_some()
            || self.movetime.is_some()
    }

    /// Nothing bounds the search: it runs until `stop`.
    fn unbounded(&self) -> bool {
        self.infinite || self.ponder || (!self.has_clock() && self.depth.is_none() && self.nodes.is_none())
    }
}

/// The time limits of one move (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// The search stops here.
    pub hard: Duration,
    /// Planned use, scaled by the search's stability.
    pub soft: Duration,
    /// Lost if not used: never stop before it.
    pub free: Duration,
}

/// The time limits for `side`'s move, or `None` when the command gives no clock. See the
/// module documentation for the rule.
pub fn time_limits(go: &GoParams, side: Color, network_delay_ms: u64) -> Option<Clock> {
    let ms = Duration::from_millis;
    if let Some(total) = go.movetime {
        let hard = ms(total - network_delay_ms.min(total / 2));
        return Some(Clock { hard, soft: hard, free: hard });
    }
    if !go.has_clock() {
        return None;
    }
    let (remaining, inc) = match side {
        Color::Black => (go.btime.unwrap_or(0), go.binc.unwrap_or(0)),
        Color::White => (go.wtime.unwrap_or(0), go.winc.unwrap_or(0)),
    };
    let byoyomi = go.byoyomi.unwrap_or(0);
    let total = remaining + inc + byoyomi;
    let margin = network_delay_ms.min(total / 2);
    let ceiling = total - margin;
    let usable = remaining.saturating_sub(margin);
    let hard = ceiling.min(usable / 8 + inc + byoyomi);
    let soft = hard.min(usable / 40 + inc + byoyomi);
    let free = hard.min(byoyomi.saturating_sub(margin));
    Some(Clock { hard: ms(hard), soft: ms(soft), free: ms(free) })
}

/// The search limits of a `go` command for `side` to move: depth and nodes as given, the
/// clock's limits unless the search is unbounded (`infinite`, `ponder`); also the clock
/// and whether the search is unbounded.
pub fn search_limits(go: &GoParams, side: Color, network_delay_ms: u64) -> (Limits, Option<Clock>, bool) {
    let clock = time_limits(go, side, network_delay_ms);
    let unbounded = go.unbounded();
    let mut limits = Limits { depth: go.depth, nodes: go.nodes, ..Limits::default() };
    if !unbounded && let Some(c) = clock {
        limits.time = Some(c.hard);
        limits.soft_time = Some(c.soft);
        limits.free_time = Some(c.free);
    }
    (limits, clock, unbounded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn go_arguments_parse() {
        let p = GoParams::parse("btime 1000 wtime -5 byoyomi 100").unwrap();
        assert_eq!(p.btime, Some(1000));
        assert_eq!(p.wtime, Some(0));
        assert_eq!(p.byoyomi, Some(100));
        assert!(!p.unbounded());
        assert!(GoParams::parse("").unwrap().unbounded());
        assert!(GoParams::parse("ponder btime 0 wtime 0 byoyomi 1000").unwrap().unbounded());
        assert!(GoParams::parse("depth x").is_err());
        assert_eq!(GoParams::parse("mate 5000").unwrap().mate, Some(MateLimit::Millis(5000)));
        assert_eq!(GoParams::parse("mate infinite").unwrap().mate, Some(MateLimit::Infinite));
        assert!(GoParams::parse("mate").unwrap_err().contains("missing time"));
        assert!(GoParams::parse("mate soon").unwrap_err().contains("\"soon\""));
    }

    #[test]
    fn time_rule() {
        let go = |s: &str| GoParams::parse(s).unwrap();
        // 100 ms byoyomi: the margin is capped at half of it.
        let c = |hard, soft, free| Some(Clock { hard: ms(hard), soft: ms(soft), free: ms(free) });
        assert_eq!(time_limits(&go("btime 0 wtime 0 byoyomi 100"), Color::Black, 120), c(50, 50, 50));
        // 10 s byoyomi: all of it but the network delay.
        assert_eq!(time_limits(&go("btime 0 wtime 0 byoyomi 10000"), Color::White, 120), c(9880, 9880, 9880));
        // Main time and byoyomi: the byoyomi is used whatever the search thinks.
        assert_eq!(
            time_limits(&go("btime 60000 wtime 60000 byoyomi 1000"), Color::White, 120),
            c(8485, 2497, 880)
        );
        // 80 s left, no byoyomi: an eighth and a fortieth of the time less the margin.
        assert_eq!(time_limits(&go("btime 80000 wtime 1000"), Color::Black, 120), c(9985, 1997, 0));
        // Short sudden death: the margin comes off the clock, not off each share (which
        // left 75 ms − 120 ms = nothing to think with).
        assert_eq!(time_limits(&go("btime 3000 wtime 3000"), Color::Black, 120), c(360, 72, 0));
        // The side to move's clock is the one used; nearly out of time: never past the flag
        // less the margin (half of what is left).
        assert_eq!(time_limits(&go("btime 80000 wtime 100"), Color::White, 120), c(6, 1, 0));
        // Fischer: the increment is added.
        assert_eq!(
            time_limits(&go("btime 40000 wtime 40000 binc 2000 winc 2000"), Color::Black, 100),
            c(6987, 2997, 0)
        );
        assert_eq!(
            time_limits(&go("btime 2000 wtime 2000 binc 50 winc 50"), Color::White, 120),
            c(285, 97, 0)
        );
        assert_eq!(time_limits(&go("movetime 1000"), Color::Black, 120), c(880, 880, 880));
        // Over a grid of clocks: the hard limit keeps the margin before the flag, and
        // soft and free never pass it.
        for remaining in [0, 1, 50, 100, 999, 3000, 60_000, 3_600_000] {
            for inc in [0, 10, 2000] {
                for byoyomi in [0, 100, 10_000] {
                    for delay in [0, 120, 5000] {
                        let g = go(&format!("btime {remaining} wtime 0 binc {inc} byoyomi {byoyomi}"));
                        let c = time_limits(&g, Color::Black, delay).expect("a clock");
                        let total = remaining + inc + byoyomi;
                        assert!(c.hard <= ms(total - delay.min(total / 2)), "{g:?} {delay}: {c:?}");
                        assert!(c.soft <= c.hard && c.free <= c.hard, "{g:?} {delay}: {c:?}");
                    }
                }
            }
        }
        assert_eq!(time_limits(&go("depth 5"), Color::Black, 120), None);
    }
}
