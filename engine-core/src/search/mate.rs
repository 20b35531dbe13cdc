//! Fast mate knowledge: mate in one (used at search nodes) and a df-pn mate search
//! (proof-number search with depth-first iterative deepening of thresholds).

use crate::rules::{Move, MoveList, Position};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// A checking move after which the opponent has no legal move, if there is one.
pub fn mate_in_one(pos: &Position) -> Option<Move> {
    let mut checks = MoveList::new();
    pos.generate_checks(&mut checks);
    checks.iter().copied().find(|&m| {
        let mut after = *pos;
        after.do_move(m);
        !after.has_legal_move()
    })
}

const INF: u32 = 100_000_000;

#[derive(Clone, Copy)]
struct Entry {
    pn: u32,
    dn: u32,
}

/// Result of a df-pn search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MateResult {
    /// The side to move mates: a mating line (attacker's checks and the defender's replies).
    Mate(Vec<Move>),
    /// Proven: no mate by continuous checks.
    NoMate,
    /// The node budget or the time ran out, or the search was stopped.
    Unknown,
}

/// df-pn over checking sequences: OR nodes are the attacker's checks, AND nodes the
/// defender's evasions. Positions are keyed by Zobrist key and side; `max_nodes` bounds
/// the work. `max_ply` bounds the line length (repetitions count as no mate).
pub struct DfPn {
    table: HashMap<u64, Entry>,
    nodes: u64,
    max_nodes: u64,
    max_ply: usize,
    path: Vec<u64>,
    stop: Option<Arc<AtomicBool>>,
    deadline: Option<Instant>,
    /// The stop flag or the deadline was seen: every node returns at once.
    halted: bool,
}

impl DfPn {
    pub fn new(max_nodes: u64, max_ply: usize) -> DfPn {
        DfPn {
            table: HashMap::new(),
            nodes: 0,
            max_nodes,
            max_ply,
            path: Vec::new(),
            stop: None,
            deadline: None,
            halted: false,
        }
    }

    /// Also stops when `stop` is set (looked at every 256 nodes).
    pub fn with_stop(mut self, stop: Arc<AtomicBool>) -> DfPn {
        self.stop = Some(stop);
        self
    }

    /// Also stops at `deadline` (looked at every 256 nodes).
    pub fn with_deadline(mut self, deadline: Instant) -> DfPn {
        self.deadline = Some(deadline);
        self
    }

    fn out_of_budget(&mut self) -> bool {
        if !self.halted && self.nodes.is_multiple_of(256) {
            self.halted = self.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed))
                || self.deadline.is_some_and(|d| Instant::now() >= d);
        }
        self.halted || self.nodes >= self.max_nodes
    }

    pub fn nodes(&self) -> u64 {
        self.nodes
    }

    fn lookup(&self, key: u64) -> Entry {
        self.table.get(&key).copied().unwrap_or(Entry { pn: 1, dn: 1 })
    }

    fn children(pos: &Position, or_node: bool) -> MoveList {
        let mut list = MoveList::new();
        if or_node {
            pos.generate_checks(&mut list);
        } else {
            pos.generate_legal(&mut list);
        }
        list
    }

    /// Searches for a mate for the side to move.
    pub fn search(&mut self, pos: &Position) -> MateResult {
        let mut p = *pos;
        self.path.clear();
        self.mid(&mut p, INF - 1, INF - 1, true);
        let root = self.lookup(p.key());
        if root.pn == 0 {
            MateResult::Mate(self.mating_line(pos))
        } else if root.dn == 0 {
            MateResult::NoMate
        } else {
            MateResult::Unknown
        }
    }

    fn mid(&mut self, pos: &mut Position, th_pn: u32, th_dn: u32, or_node: bool) {
        let key = pos.key();
        self.nodes += 1;
        let moves = Self::children(pos, or_node);
        if moves.is_empty() {
            // OR node without checks: no mate here. AND node without evasions: mated.
            let e = if or_node { Entry { pn: INF, dn: 0 } } else { Entry { pn: 0, dn: INF } };
            self.table.insert(key, e);
            return;
        }
        if self.path.len() >= self.max_ply || self.path.contains(&key) {
            // Too long, or a repetition: treated as a failed attack.
            self.table.insert(key, Entry { pn: INF, dn: 0 });
            return;
        }
        self.path.push(key);
        let child_keys: Vec<(Move, u64)> = moves
            .iter()
            .map(|&m| {
                let mut c = *pos;
                c.do_move(m);
                (m, c.key())
            })
            .collect();
        loop {
            // Gather children: at OR nodes pn = min, dn = sum; at AND nodes the reverse.
            let mut best = 0usize;
            let (mut min_a, mut second_a, mut sum_b) = (INF, INF, 0u32);
            for (i, &(_, ck)) in child_keys.iter().enumerate() {
                let e = self.lookup(ck);
                let (a, b) = if or_node { (e.pn, e.dn) } else { (e.dn, e.pn) };
                if a < min_a {
                    second_a = min_a;
                    min_a = a;
                    best = i;
                } else if a < second_a {
                    second_a = a;
                }
                sum_b = sum_b.saturating_add(b).min(INF);
            }
            let entry = if or_node { Entry { pn: min_a, dn: sum_b } } else { Entry { pn: sum_b, dn: min_a } };
            self.table.insert(key, entry);
            let (th_a, th_b) = if or_node { (th_pn, th_dn) } else { (th_dn, th_pn) };
            if min_a >= th_a || sum_b >= th_b || self.out_of_budget() {
                break;
            }
            let (m, ck) = child_keys[best];
            let child = self.lookup(ck);
            let child_b = if or_node { child.dn } else { child.pn };
            let new_th_a = th_a.min(second_a.saturating_add(1));
            let new_th_b = (th_b - sum_b).saturating_add(child_b).min(INF - 1);
            let d = pos.do_move(m);
            if or_node {
                self.mid(pos, new_th_a, new_th_b, false);
            } else {
                self.mid(pos, new_th_b, new_th_a, true);
            }
            pos.undo_move(&d);
        }
        self.path.pop();
    }

    /// Follows proven children: the attacker's quickest proof, the defender's longest.
    fn mating_line(&self, root: &Position) -> Vec<Move> {
        let mut line = Vec::new();
        let mut pos = *root;
        let mut or_node = true;
        let mut seen = Vec::new();
        while line.len() < self.max_ply {
            let moves = Self::children(&pos, or_node);
            let next = moves
                .iter()
                .filter_map(|&m| {
                    let mut c = pos;
                    c.do_move(m);
                    let e = self.table.get(&c.key())?;
                    (e.pn == 0 && !seen.contains(&c.key())).then_some((m, e.dn))
                })
                .reduce(|a, b| if (or_node && b.1 < a.1) || (!or_node && b.1 > a.1) { b } else { a });
            let Some((m, _)) = next else { break };
            pos.do_move(m);
            seen.push(pos.key());
            line.push(m);
            or_node = !or_node;
        }
        line
    }
}
