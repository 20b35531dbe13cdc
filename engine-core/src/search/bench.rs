//! The search's signature: the total node count of fixed-depth searches, one thread,
//! material evaluation, a fresh 16 MiB table per position, over a fixed set of positions
//! (the start position, "matsuri", and positions after 20, 45 and 70 moves of ten
//! professional games). Any change that alters the search tree changes the count, so an
//! unintended change shows up; a test pins it, and a commit that changes the search on
//! purpose states the new count.

use super::{Limits, Searcher, TranspositionTable};
use crate::eval::Evaluator;
use crate::rules::Position;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const BENCH_POSITIONS: [&str; 32] = [
    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1",
    "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1",
    "ln3k1nl/1r1s1sgb1/p1pp1g1pp/1p2ppp2/9/2P1PPP2/PPSP3PP/1BG1GS1R1/LN1K3NL b - 21",
    "l4k1nl/1r4gb1/2ns1gsp1/p1ppppp1p/1p7/P1PSS1PPP/1P1P2N2/1BG1G2R1/LN1K4L w 2P 46",
    "l6n1/6gk1/2ns1gspl/2pbPpp2/p2p4p/P1r1S1PP1/1P1PSGN2/1BG4R1/LN1K4L b P4p 71",
    "ln1gk1snl/1r4gb1/p1ppsp1pp/6p2/1p2p4/2P6/PP1PPPP1P/1BGS1S1R1/LN1K1G1NL b P 21",
    "ln3k1nl/1r2gsgb1/3p3p1/p1ps1pp1p/4PP3/P1PSS1P2/1P1P4P/1BG1G2R1/LN1K3NL w P2p 46",
    "ln3k1nl/1r4gb1/3psg1p1/p1p1s1P1p/4pS3/P1PS2R2/1P1P2N1P/2G1G4/LNBK4L b 3P3p 71",
    "ln1g1kbnl/1r1s2g2/p1pp1pspp/4p1p2/1p5P1/2PP5/PPS1PPP1P/2GBG2R1/LN2K1SNL b - 21",
    "ln4knl/1r4gs1/p1bpsg1pp/2p1p1p2/1p3p2S/2PPP3P/PPSG1PP2/1KGB3R1/LN5NL w P 46",
    "1n4kn1/1r4gs1/l1bp2gp1/p1p3p2/1p3ps1S/P1PPP4/1PSG1PPL1/1KGB3R1/LN5N1 b Pl3p 71",
    "ln1g1k1nl/1r1s2gs1/2pppp1p1/p5p1p/1p3B1P1/P1P5P/1PSPPPP2/2G4R1/LN2KGSNL b b 21",
    "ln5nl/1r2g1gk1/2pps4/p4p1Rp/1p2p4/P1PP4P/1PSBPPP2/2G6/LN2KG1NL w S2Pbsp 46",
    "ln5nS/1r7/2pp1g3/p3s1kg1/1p2pp2L/P1PP5/1PSBPPPL1/2G4R1/LN2KG3 b Pbsn4p 71",
    "ln1g1k1nl/1r3sgb1/p1ppspppp/4p4/1pP6/P5R2/1P1PPPP1P/1BG6/LNS1KGSNL b P 21",
    "ln5nl/1r3bgk1/p1p1ss1p1/1g1pppp1p/PpPP5/2R5P/BPNGPPP2/6S2/L3SGKNL w P 46",
    "ln+P4nl/1r3bgk1/2p2s1p1/3sppp1p/9/pPR5P/2N1PPP2/1g4S2/L3SGKNL b G4Pbp 71",
    "ln1g1g1nl/1ks2r1b1/1pppps1pp/p4pp2/9/P1P1P2P1/1PBPSPP1P/2K1G2R1/LNSG3NL b - 21",
    "l6nl/1kg3r2/1sng1sbp1/ppppppp1p/7P1/PPPPPP2P/1S1GS1P2/LBG4R1/KN5NL w - 46",
    "l6n1/1kg6/1sng2bp1/ppp2ps1r/3pp1pPl/PPP2P1Rp/1SBG2P2/LSG5P/KN5NL b 2p 71",
    "lnsg3n1/2k1gs2r/1pppp1bpp/p4p3/6pPP/P1P6/1P1PPPP2/1BK1GS1R1/LNSG3NL w - 21",
    "ln1g5/1ks1g1r2/1pppbs1pp/p3pp3/5PPP1/P1P1P1R2/1P1P5/1BK1GS3/LNSG3N1 b NPlp 46",
    "ln1g5/1ks1g1R2/1ppp2+P1p/p4s1p1/4Pp3/P1l1p4/1PNP5/2KBG2r1/LNSG3N1 w B2Ps3p 71",
    "lnsg1g1nl/1r4kb1/p1ppps1p1/5p2p/1pP3p2/P2P5/1PBSPPPPP/2R2KS2/LN1G1G1NL b - 21",
    "ln5nl/1r4gb1/p1ppg2k1/3spPspp/1pP3p2/P3S3P/1PB1PGPP1/3R2S2/LN3GKNL w 2P 46",
    "ln5nl/6g2/p1pp1g1k1/3sps1pp/2P4P1/Pr3PP1P/2+b1PG3/3R2S2/L4GKNL b BS2Pn3p 71",
    "lnsg3nl/3kgr1b1/ppppp2p1/4s1p1p/2P2p3/P2P5/1P1SPPPPP/1BR1G1K2/LN3GSNL b - 21",
    "ln6l/1skgg2b1/ppppp1n2/4srp1p/1PRP5/P6P1/B1NSPPP1P/4G1KS1/L4G1NL w 2Pp 46",
    "ln6l/1skgg4/ppp1p3b/3p2r1p/1P3s1n1/P1RS2PS1/B1N1PPpPP/4GGK2/L6NL b 3Pp 71",
    "ln1gkg1nl/2s2r3/1p2psbpp/p1pp1pp2/7P1/2PSP4/PPBP1PP1P/2K4R1/LNSG1G1NL b - 21",
    "l2g3nl/1ks2b1r1/2ng1s1pp/1pp1ppp2/p2p3P1/1PP1P3P/PSSP1PP2/KGGB3R1/LN5NL w - 46",
    "l6nl/1kg4r1/1sng+b2p1/1pp2s2p/p3PppR1/1PPP2P1P/PSS2P2L/KGGB5/LN5N1 b 3P 71",
];

/// The depth `keima bench` searches by default.
pub const DEFAULT_BENCH_DEPTH: i32 = 13;

#[derive(Clone, Debug)]
pub struct BenchResult {
    /// Nodes of each position's search, in `BENCH_POSITIONS` order.
    pub nodes: Vec<u64>,
    pub elapsed: Duration,
}

impl BenchResult {
    pub fn total_nodes(&self) -> u64 {
        self.nodes.iter().sum()
    }

    pub fn nodes_per_second(&self) -> u64 {
        (self.total_nodes() as f64 / self.elapsed.as_secs_f64().max(1e-9)) as u64
    }
}

/// Runs the signature searches to `depth` (one thread, deterministic).
pub fn run(depth: i32) -> BenchResult {
    let evaluator = Arc::new(Evaluator::material_only());
    let mut nodes = Vec::with_capacity(BENCH_POSITIONS.len());
    let start = Instant::now();
    for sfen in BENCH_POSITIONS {
        let pos = Position::from_sfen(sfen).expect("bench positions are valid");
        let mut s = Searcher::new(evaluator.clone(), Arc::new(TranspositionTable::new(16)));
        // Every technique of the played search, the correction history included (the
        // teachers' default leaves it off), so that the signature covers all of them.
        s.options.correction_history = true;
        s.set_position(&pos, &[]);
        let r = s.go(Limits::depth(depth), |_| {});
        nodes.push(r.nodes);
    }
    BenchResult { nodes, elapsed: start.elapsed() }
}
