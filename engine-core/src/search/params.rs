//! The search's tunable numbers: margins, reductions and windows, named, with their
//! defaults and the range a tuner may move them in.
//!
//! Most of these values came from chess engines, whose scores run on another scale (a
//! pawn is about 90 here) and whose trees are narrower, so they are worth tuning for
//! shogi. Changing one changes the search, so the defaults are pinned by the node-count
//! signature (`keima bench`); a non-default set is given to `keima usi` as the
//! `SearchParams` option (`name=value,name=value`) and tuned by `keima tune` (SPSA).
//!
//! The defaults are an SPSA tune of all of them (4,000 game pairs at 10,000 nodes a move),
//! which beat the hand-set values by +10.0 Elo [+2.1, +17.8] over 3,577 pairs, SPRT [0, 10]
//! accepting H1 (BENCHMARKS.md, "The tune again, shorter, to its end").

use thiserror::Error;

/// One tunable number: its name, default, the range a tuner may move it in, and the
/// perturbation a tuner ends with (SPSA's `c_end`: about the smallest change worth
/// measuring).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamSpec {
    pub name: &'static str,
    pub default: i32,
    pub min: i32,
    pub max: i32,
    pub step: i32,
    pub doc: &'static str,
}

macro_rules! search_params {
    ($( $(#[doc = $doc:literal])+ $name:ident = $default:literal, $min:literal ..= $max:literal, step $step:literal; )+) => {
        /// The search's tunable numbers (see the module comment); `Default` is the search
        /// as shipped.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct SearchParams {
            $( $(#[doc = $doc])+ pub $name: i32, )+
        }

        impl Default for SearchParams {
            fn default() -> Self {
                SearchParams { $( $name: $default, )+ }
            }
        }

        /// Every parameter, in the order of the struct.
        pub const PARAMS: &[ParamSpec] = &[
            $( ParamSpec {
                name: stringify!($name),
                default: $default,
                min: $min,
                max: $max,
                step: $step,
                doc: concat!($($doc),+),
            }, )+
        ];

        impl SearchParams {
            /// The value of the parameter called `name`.
            pub fn get(&self, name: &str) -> Option<i32> {
                match name {
                    $( stringify!($name) => Some(self.$name), )+
                    _ => None,
                }
            }

            fn slot(&mut self, name: &str) -> Option<&mut i32> {
                match name {
                    $( stringify!($name) => Some(&mut self.$name), )+
                    _ => None,
                }
            }
        }
    };
}

search_params! {
    /// Reverse futility: the margin per ply of depth (eval units).
    rfp_margin = 173, 60..=400, step 15;
    /// Reverse futility applies below this depth.
    rfp_depth = 10, 4..=16, step 1;
    /// Null move: the static evaluation may be this much below beta (plus the terms below).
    nmp_margin = 174, 0..=400, step 20;
    /// Null move: the margin shrinks by this much per ply of depth.
    nmp_depth_mul = 22, 0..=60, step 4;
    /// Null move: one ply more reduction per this much of eval above beta (up to 3).
    nmp_eval_div = 169, 60..=400, step 15;
    /// Null move: the reduction is depth/3 + this + the eval term.
    nmp_reduction = 4, 2..=7, step 1;
    /// Futility pruning of captures: the base margin (eval units).
    fut_capture_base = 84, 0..=300, step 15;
    /// Futility pruning of captures: the margin per ply of reduced depth.
    fut_capture_mul = 99, 30..=300, step 10;
    /// SEE pruning of captures and checks: what a move may lose per ply of depth.
    see_capture_mul = 202, 50..=400, step 15;
    /// Futility pruning of quiet moves: the base margin.
    fut_quiet_base = 250, 50..=500, step 20;
    /// Futility pruning of quiet moves: the margin per ply of reduced depth.
    fut_quiet_mul = 127, 40..=300, step 10;
    /// SEE pruning of quiet moves: a quiet move may lose (this − d)·d² at reduced depth d.
    see_quiet_base = 28, 10..=50, step 2;
    /// Late-move reductions: the table is this/100 · ln(i), and a reduction is
    /// table[depth] · table[move number] / 1024 plies.
    lmr_scale = 2167, 1600..=2800, step 60;
    /// Late-move reductions: added before the division by 1024 (rounding).
    lmr_base = 505, 0..=1024, step 50;
    /// Late-move reductions: one ply more when not improving and the product exceeds this.
    lmr_nonimproving = 904, 300..=2000, step 80;
    /// Late-move reductions: one ply less per this much of the move's history score.
    lmr_history_div = 13193, 5000..=30000, step 1000;
    /// Singular extension: the TT move must beat the others by this/16 per ply of depth.
    singular_margin = 32, 8..=64, step 3;
    /// Singular extension: by this much more, two plies (non-PV nodes).
    double_ext_margin = 72, 20..=200, step 10;
    /// Quiescence: futility margin over the stand-pat score.
    qs_futility = 137, 40..=300, step 12;
    /// Quiescence: a move losing more than this by SEE is skipped.
    qs_see = 93, 0..=250, step 12;
    /// Aspiration window: the first half-width (eval units).
    asp_delta = 20, 5..=50, step 2;
    /// Aspiration window: widened by one unit per this much of the previous score.
    asp_score_div = 65, 16..=256, step 8;
}

/// A `SearchParams` text that could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ParamError {
    #[error("{0:?}: expected name=value")]
    Syntax(String),
    #[error("unknown search parameter {0:?} (`keima tune --list` shows them)")]
    Unknown(String),
    #[error("search parameter {name}: {value:?} is not a whole number")]
    NotANumber { name: String, value: String },
    #[error("search parameter {name}: {value} is outside {min}..={max}")]
    OutOfRange { name: String, value: i64, min: i32, max: i32 },
}

/// The spec of the parameter called `name`.
pub fn spec(name: &str) -> Option<&'static ParamSpec> {
    PARAMS.iter().find(|p| p.name == name)
}

impl SearchParams {
    /// Sets one parameter, checked against its range.
    pub fn set(&mut self, name: &str, value: i64) -> Result<(), ParamError> {
        let spec = spec(name).ok_or_else(|| ParamError::Unknown(name.to_string()))?;
        if value < spec.min as i64 || value > spec.max as i64 {
            return Err(ParamError::OutOfRange {
                name: name.to_string(),
                value,
                min: spec.min,
                max: spec.max,
            });
        }
        *self.slot(name).expect("every spec has a field") = value as i32;
        Ok(())
    }

    /// The defaults with `text`'s overrides: `name=value` items separated by commas or
    /// whitespace (empty: the defaults). Any error leaves nothing half-applied.
    pub fn parse(text: &str) -> Result<SearchParams, ParamError> {
        let mut params = SearchParams::default();
        for item in text.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()) {
            let (name, value) = item.split_once('=').ok_or_else(|| ParamError::Syntax(item.to_string()))?;
            let (name, value) = (name.trim(), value.trim());
            if spec(name).is_none() {
                return Err(ParamError::Unknown(name.to_string()));
            }
            let number = value
                .parse::<i64>()
                .map_err(|_| ParamError::NotANumber { name: name.to_string(), value: value.to_string() })?;
            params.set(name, number)?;
        }
        Ok(params)
    }

    /// The parameters that differ from the defaults, as `parse` reads them (empty for
    /// the defaults).
    pub fn overrides(&self) -> String {
        PARAMS
            .iter()
            .filter_map(|p| {
                let v = self.get(p.name).expect("every spec has a field");
                (v != p.default).then(|| format!("{}={v}", p.name))
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `REDUCTIONS[i]` ≈ `lmr_scale`/100 · ln(i): the late-move reduction table.
    pub fn reductions(&self) -> [i32; 256] {
        let mut t = [0; 256];
        let scale = self.lmr_scale as f64 / 100.0;
        for (i, r) in t.iter_mut().enumerate().skip(1) {
            *r = (scale * (i as f64).ln()) as i32;
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_inside_their_ranges_and_names_are_unique() {
        let d = SearchParams::default();
        for (i, p) in PARAMS.iter().enumerate() {
            assert_eq!(d.get(p.name), Some(p.default), "{}", p.name);
            assert!(p.min <= p.default && p.default <= p.max, "{}", p.name);
            assert!(p.step > 0 && p.step <= p.max - p.min, "{}", p.name);
            assert!(PARAMS[..i].iter().all(|q| q.name != p.name), "{} twice", p.name);
        }
        assert_eq!(d.overrides(), "");
    }

    #[test]
    fn parse_and_overrides_round_trip() {
        let p = SearchParams::parse("rfp_margin=150, lmr_scale=2300 qs_see=0").unwrap();
        assert_eq!((p.rfp_margin, p.lmr_scale, p.qs_see), (150, 2300, 0));
        assert_eq!(p.fut_quiet_base, SearchParams::default().fut_quiet_base);
        assert_eq!(p.overrides(), "rfp_margin=150,lmr_scale=2300,qs_see=0");
        assert_eq!(SearchParams::parse(&p.overrides()).unwrap(), p);
        assert_eq!(SearchParams::parse("  ").unwrap(), SearchParams::default());
    }

    #[test]
    fn bad_text_is_named() {
        assert_eq!(SearchParams::parse("rfp_margin"), Err(ParamError::Syntax("rfp_margin".into())));
        assert_eq!(SearchParams::parse("nope=1"), Err(ParamError::Unknown("nope".into())));
        assert!(matches!(SearchParams::parse("rfp_margin=1.5"), Err(ParamError::NotANumber { .. })));
        assert!(matches!(
            SearchParams::parse("rfp_margin=99999999999"),
            Err(ParamError::OutOfRange { min: 60, max: 400, .. })
        ));
        assert!(matches!(SearchParams::parse("rfp_depth=3"), Err(ParamError::OutOfRange { .. })));
    }

    #[test]
    fn the_default_reduction_table_is_the_shipped_one() {
        // 21.67 · ln(i), from the tuned `lmr_scale` (21.5 before the tune).
        let t = SearchParams::default().reductions();
        for (i, &r) in t.iter().enumerate().skip(1) {
            assert_eq!(r, (21.67 * (i as f64).ln()) as i32);
        }
        assert_eq!((t[0], t[1], t[2], t[255]), (0, 0, 15, 120));
        let before = SearchParams { lmr_scale: 2150, ..SearchParams::default() }.reductions();
        assert_eq!((before[2], before[255]), (14, 119));
    }
}
