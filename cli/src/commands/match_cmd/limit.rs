//! What bounds each move of a match, from the arguments: `--nodes` (and `--nodes2`),
//! `--movetime`, or a clock (`--tc T+I`, `--byoyomi`); `keima_worker::usi::limit` describes it.

use super::MatchArgs;
use keima_worker::usi::limit::Limit;

/// The limit the arguments give: `--nodes` (and `--nodes2`), `--movetime`, or a clock.
pub(super) fn limit_from_args(args: &MatchArgs) -> Result<Limit, String> {
    match (args.nodes, args.movetime, args.tc, args.byoyomi) {
        (Some(n), ..) => Ok(Limit::Nodes([n, args.nodes2.unwrap_or(n)])),
        (_, Some(t), ..) => Ok(Limit::MoveTime(t)),
        (_, _, tc, byoyomi) => {
            let (main_ms, inc_ms) = tc.unwrap_or((0, 0));
            let byoyomi_ms = byoyomi.unwrap_or(0);
            if main_ms == 0 && inc_ms == 0 && byoyomi_ms == 0 {
                return Err("--tc / --byoyomi: the clock gives no time at all; use e.g. --tc 10+0.1 or \
                            --byoyomi 1000"
                    .to_string());
            }
            Ok(Limit::Clock { main_ms, inc_ms, byoyomi_ms })
        }
    }
}

/// Parses `--tc T+I` (seconds, decimals allowed) into milliseconds.
pub(super) fn parse_tc(text: &str) -> Result<(u64, u64), String> {
    const MAX_SECONDS: f64 = 1e6;
    let (t, i) = text
        .split_once('+')
        .ok_or_else(|| "expected T+I: main time and increment in seconds, e.g. 10+0.1 or 60+0".to_string())?;
    let seconds = |part: &str, name: &str| -> Result<u64, String> {
        let v: f64 =
            part.trim().parse().map_err(|_| format!("{name} {part:?} is not a number of seconds"))?;
        if !v.is_finite() || !(0.0..=MAX_SECONDS).contains(&v) {
            return Err(format!("{name} must be between 0 and {MAX_SECONDS} seconds, got {part}"));
        }
        Ok((v * 1000.0).round() as u64)
    };
    Ok((seconds(t, "main time")?, seconds(i, "increment")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tc_parses_seconds_to_milliseconds() {
        assert_eq!(parse_tc("10+0.1"), Ok((10_000, 100)));
        assert_eq!(parse_tc("60+0"), Ok((60_000, 0)));
        assert_eq!(parse_tc("0.5+0.0125"), Ok((500, 13)));
        for (bad, needle) in [
            ("10", "expected T+I"),
            ("-1+0", "main time must be between 0"),
            ("1+-0.5", "increment must be between 0"),
            ("x+1", "main time \"x\" is not a number"),
            ("nan+0", "main time must be between 0"),
            ("1e7+0", "main time must be between 0"),
        ] {
            let e = parse_tc(bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }
}
