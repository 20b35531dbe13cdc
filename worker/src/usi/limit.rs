//! What bounds each move of a game between USI engines: a node budget per engine, a fixed
//! time per move, or a clock (main time, increment, byoyomi), and how it is described in
//! summaries and records.

use std::fmt::Write as _;

/// What bounds each move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// Nodes per move of engine1 and engine2.
    Nodes([u64; 2]),
    MoveTime(u64),
    /// A clock per engine, in milliseconds: the increment is credited when a move starts,
    /// byoyomi is use-it-or-lose-it.
    Clock {
        main_ms: u64,
        inc_ms: u64,
        byoyomi_ms: u64,
    },
}

impl Limit {
    /// For the summary and the records: `nodes 300`, `10+0.1 s`, `60+0 s, byoyomi 1000 ms`.
    pub fn describe(self) -> String {
        match self {
            Limit::Nodes([a, b]) if a == b => format!("nodes {a}"),
            Limit::Nodes([a, b]) => format!("nodes {a} (engine1), {b} (engine2)"),
            Limit::MoveTime(t) => format!("movetime {t} ms"),
            Limit::Clock { main_ms: 0, inc_ms: 0, byoyomi_ms } => format!("byoyomi {byoyomi_ms} ms"),
            Limit::Clock { main_ms, inc_ms, byoyomi_ms } => {
                let secs = |ms: u64| ms as f64 / 1000.0;
                let mut d = format!("{}+{} s", secs(main_ms), secs(inc_ms));
                if byoyomi_ms > 0 {
                    let _ = write!(d, ", byoyomi {byoyomi_ms} ms");
                }
                d
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_describe_themselves() {
        let clock = |main_ms, inc_ms, byoyomi_ms| Limit::Clock { main_ms, inc_ms, byoyomi_ms };
        assert_eq!(clock(10_000, 100, 0).describe(), "10+0.1 s");
        assert_eq!(clock(60_000, 0, 1000).describe(), "60+0 s, byoyomi 1000 ms");
        assert_eq!(clock(0, 0, 100).describe(), "byoyomi 100 ms");
        assert_eq!(Limit::Nodes([300, 300]).describe(), "nodes 300");
        assert_eq!(Limit::Nodes([300, 3000]).describe(), "nodes 300 (engine1), 3000 (engine2)");
    }
}
