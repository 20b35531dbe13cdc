//! Pattern extraction by random counting (research.md §2): at each position pick a few
//! random pieces, count that combination, and in the end keep the combinations whose
//! counts fall in a band — the most frequent are immobile pieces, the rarest are noise.

use super::pattern::{Pattern, Triple};
use crate::rng::SplitMix64;
use crate::rules::{Color, Position};
use std::collections::HashMap;

#[derive(Clone, Copy, Debug)]
pub struct ExtractConfig {
    /// Pieces per pattern (2..=4).
    pub size: usize,
    /// Record combinations from the side to move's view.
    pub relative: bool,
    /// Random combinations drawn per position.
    pub samples_per_position: usize,
    pub seed: u64,
}

/// Which counts to keep.
#[derive(Clone, Copy, Debug)]
pub struct Band {
    /// Drop combinations seen in more than this share of the observed positions.
    pub max_share: f64,
    /// Also drop this many of the most frequent combinations (immobile pieces: a sampled
    /// triple is rare in absolute terms, so a share alone does not catch them).
    pub drop_top: usize,
    /// Drop combinations seen fewer times than this.
    pub min_count: u64,
    /// Keep at most this many (the most frequent inside the band).
    pub keep: usize,
}

pub struct Extraction {
    pub positions: u64,
    pub distinct: usize,
    /// Counts at the band's edges: kept patterns have lower <= count <= upper.
    pub lower: u64,
    pub upper: u64,
    /// Dropped as too frequent / too rare.
    pub dropped_frequent: usize,
    pub dropped_rare: usize,
    /// Kept patterns with their counts, most frequent first (ties by pattern order).
    pub kept: Vec<(Pattern, u64)>,
}

pub struct PatternCounter {
    config: ExtractConfig,
    rng: SplitMix64,
    counts: HashMap<Pattern, u64>,
    positions: u64,
}

impl PatternCounter {
    pub fn new(config: ExtractConfig) -> PatternCounter {
        assert!((2..=4).contains(&config.size), "pattern size must be 2..=4");
        PatternCounter {
            config,
            // Reproducible from the seed on every platform.
            rng: SplitMix64::new(config.seed ^ 0x5DEE_CE66_D1CE_4E5B),
            counts: HashMap::new(),
            positions: 0,
        }
    }

    /// Draws `samples_per_position` random combinations of the board's pieces.
    pub fn observe(&mut self, pos: &Position) {
        let mut pieces: Vec<Triple> = pos
            .occupied()
            .iter()
            .map(|sq| {
                let p = pos.piece_on(sq);
                Triple { color: p.color(), piece_type: p.piece_type(), square: sq }
            })
            .collect();
        let size = self.config.size;
        if pieces.len() < size {
            return;
        }
        self.positions += 1;
        let flip = self.config.relative && pos.side_to_move() == Color::White;
        for _ in 0..self.config.samples_per_position {
            // Partial Fisher-Yates: the first `size` entries become a random subset.
            for i in 0..size {
                let j = i + (self.rng.next_u64() % (pieces.len() - i) as u64) as usize;
                pieces.swap(i, j);
            }
            let triples = pieces[..size].iter().map(|t| if flip { t.flipped() } else { *t }).collect();
            let pattern = Pattern::new(triples, self.config.relative).expect("distinct board squares");
            *self.counts.entry(pattern).or_insert(0) += 1;
        }
    }

    pub fn finish(self, band: Band) -> Extraction {
        let upper_limit = (band.max_share * self.positions as f64).floor() as u64;
        let mut all: Vec<(Pattern, u64)> = self.counts.into_iter().collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let distinct = all.len();
        let over_share = all.iter().take_while(|(_, c)| *c > upper_limit).count();
        let dropped_frequent = over_share.max(band.drop_top).min(all.len());
        let in_band: Vec<(Pattern, u64)> =
            all.into_iter().skip(dropped_frequent).filter(|(_, c)| *c >= band.min_count).collect();
        let dropped_rare = distinct - dropped_frequent - in_band.len();
        let kept: Vec<(Pattern, u64)> = in_band.into_iter().take(band.keep).collect();
        Extraction {
            positions: self.positions,
            distinct,
            lower: kept.last().map_or(0, |k| k.1),
            upper: kept.first().map_or(0, |k| k.1),
            dropped_frequent,
            dropped_rare,
            kept,
        }
    }
}
