//! The exact solution: enumerate every position reachable from a start, index them by
//! their sorted keys, and solve them all by retrograde analysis (unmove generation with
//! per-position counters of unresolved children).
//!
//! Conventions (the side to move's view):
//! - Keys are colour-normalised (`Position::key`) and mirror-folded (`table_key`): a
//!   position and its left-right mirror image have the same value, so the table stores the
//!   smaller of the two keys. This halves the table and is the convention of Tanaka's
//!   published count.
//! - A position where the side to move can capture the opponent's lion is a *win in 1*.
//!   Tanaka's analysis counts these positions (the lion is always taken when it can be, so
//!   they are terminal); the table does not store them, since their value needs no table,
//!   but `enumerate` counts them (`EnumStats::catch_positions`). One where the opponent's
//!   lion made a try the side to move cannot capture is a terminal *loss in 0*
//!   (`Status::Lost`): stored and counted, not expanded.
//! - A value byte is 0 for a draw (no forced result: with best play the game cycles, which
//!   the repetition rule makes a draw), else `distance + 1`; the side to move wins iff the
//!   distance (plies to the end with best play: the winner hurries, the loser delays) is odd.

use super::movegen::{MoveList, pseudo_moves};
use super::rules::{
    ATTACKS, CHICK, Color, EMPTY, HAND_KINDS, HEN, LION, Position, SQUARES, Status, WHITE_BIT, hand_index,
    kind_of, make_cell, rank_of,
};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// An exact value from the side to move's view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Win(u32),
    Loss(u32),
    Draw,
}

impl Value {
    pub fn from_byte(b: u8) -> Value {
        if b == 0 {
            Value::Draw
        } else {
            let d = (b - 1) as u32;
            if d % 2 == 1 { Value::Win(d) } else { Value::Loss(d) }
        }
    }
    pub fn to_byte(self) -> u8 {
        match self {
            Value::Draw => 0,
            Value::Win(d) | Value::Loss(d) => (d + 1) as u8,
        }
    }
    /// The value of the position before a move, given the value of the position after it.
    pub fn parent(self) -> Value {
        match self {
            Value::Draw => Value::Draw,
            Value::Win(d) => Value::Loss(d + 1),
            Value::Loss(d) => Value::Win(d + 1),
        }
    }
    /// Ordering for the side to move: quicker wins first, then draws, then slower losses.
    pub fn rank(self) -> i64 {
        match self {
            Value::Win(d) => 10_000 - d as i64,
            Value::Draw => 0,
            Value::Loss(d) => -10_000 + d as i64,
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Win(d) => write!(f, "win in {d}"),
            Value::Loss(d) => write!(f, "loss in {d}"),
            Value::Draw => write!(f, "draw"),
        }
    }
}

// ---- keys --------------------------------------------------------------------------------

/// Nibbles of file a (squares 0, 3, 6, 9) in a key; file c is these shifted by 8 bits.
const FILE_A_NIBBLES: u64 = 0x00F_00F_00F_00F;
const FILE_C_NIBBLES: u64 = FILE_A_NIBBLES << 8;

/// The key of the left-right mirror image (files a and c swapped; hands unchanged).
pub fn mirror_key(k: u64) -> u64 {
    (k & !(FILE_A_NIBBLES | FILE_C_NIBBLES)) | ((k & FILE_A_NIBBLES) << 8) | ((k & FILE_C_NIBBLES) >> 8)
}

/// A colour-normalised key folded over the mirror symmetry: the smaller of the key and
/// its mirror image's.
pub fn fold_key(k: u64) -> u64 {
    k.min(mirror_key(k))
}

/// The key under which the table stores a position (colour-normalised, mirror-folded).
pub fn table_key(p: &Position) -> u64 {
    fold_key(p.key())
}

/// Terminal value of a position for the solver, if it is terminal.
pub fn terminal_value(p: &Position) -> Option<Value> {
    if p.can_capture_lion() {
        Some(Value::Win(1))
    } else if p.status() == Status::Lost {
        Some(Value::Loss(0))
    } else {
        None
    }
}

// ---- enumeration ------------------------------------------------------------------------

/// A fixed-capacity concurrent set of non-zero u64 keys (open addressing, linear probing).
struct KeySet {
    slots: Vec<AtomicU64>,
}

impl KeySet {
    fn new(capacity: usize) -> KeySet {
        KeySet { slots: (0..capacity).map(|_| AtomicU64::new(0)).collect() }
    }
    /// Ok(true) if newly inserted; Err if the table is full.
    fn insert(&self, key: u64) -> Result<bool, ()> {
        let n = self.slots.len();
        let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (key >> 29);
        let mut i = ((h as u128 * n as u128) >> 64) as usize;
        for _ in 0..n {
            let cur = self.slots[i].load(Ordering::Relaxed);
            if cur == key {
                return Ok(false);
            }
            if cur == 0 {
                match self.slots[i].compare_exchange(0, key, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return Ok(true),
                    Err(now) if now == key => return Ok(false),
                    Err(_) => {}
                }
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
        Err(())
    }
}

/// What enumeration found.
#[derive(Clone, Debug, Default)]
pub struct EnumStats {
    /// Stored positions (non-terminal and try losses; mirror images folded).
    pub positions: u64,
    /// Distinct positions reached whose side to move can capture the lion (wins in 1:
    /// counted, not stored, not expanded). `positions + catch_positions` is the count in
    /// Tanaka's convention.
    pub catch_positions: u64,
    /// Moves (edges, not distinct positions) that lead to a position whose side to move
    /// can capture the lion.
    pub capture_win_edges: u64,
    /// Positions lost to a try (terminal losses).
    pub try_losses: u64,
    /// Breadth-first layers (plies from the start to the first occurrence).
    pub layers: u32,
}

/// Enumerates every position reachable from `start`, breadth-first, in parallel, with
/// folded keys (`table_key`). Try losses are included and not expanded; positions whose
/// side to move can capture the lion are counted and not expanded, and left out of the
/// returned keys. `capacity` bounds the number of positions of both kinds (8 bytes each
/// while enumerating). Returns the sorted keys of the stored positions.
pub fn enumerate(
    start: &Position,
    capacity: usize,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(Vec<u64>, EnumStats), String> {
    let capacity = capacity.max(16);
    let set = KeySet::new(capacity);
    let full = || format!("more than {capacity} positions: raise the capacity");
    set.insert(table_key(start)).map_err(|_| full())?;
    let mut frontier = vec![table_key(start)];
    let mut total = 1u64;
    let capture_edges = AtomicU64::new(0);
    let mut layers = 0;
    while !frontier.is_empty() {
        let next: Result<Vec<Vec<u64>>, ()> = frontier
            .par_chunks(4096)
            .map(|chunk| {
                let mut out = Vec::new();
                let mut list = MoveList::new();
                for &k in chunk {
                    let mut p = Position::from_key(k);
                    if terminal_value(&p).is_some() {
                        continue;
                    }
                    pseudo_moves(&p, &mut list);
                    for &m in list.as_slice() {
                        let u = p.do_move(m);
                        let ck = table_key(&p);
                        let catch = p.can_capture_lion();
                        p.undo_move(m, u);
                        if catch {
                            capture_edges.fetch_add(1, Ordering::Relaxed);
                            // Counted once in the set; never expanded (terminal).
                            set.insert(ck)?;
                            continue;
                        }
                        if set.insert(ck)? {
                            out.push(ck);
                        }
                    }
                }
                Ok(out)
            })
            .collect();
        let next = next.map_err(|_| full())?;
        frontier = next.concat();
        total += frontier.len() as u64;
        layers += 1;
        log(&format!("layer {layers}: {} new, {total} in all", frontier.len()));
        if total as f64 > 0.97 * capacity as f64 {
            return Err(full());
        }
    }
    drop(frontier);
    let all: Vec<u64> = set.slots.into_iter().map(AtomicU64::into_inner).filter(|&k| k != 0).collect();
    let found = all.len() as u64;
    let mut keys: Vec<u64> =
        all.into_par_iter().filter(|&k| !Position::from_key(k).can_capture_lion()).collect();
    keys.par_sort_unstable();
    let try_losses =
        keys.par_iter().filter(|&&k| terminal_value(&Position::from_key(k)).is_some()).count() as u64;
    let stats = EnumStats {
        positions: keys.len() as u64,
        catch_positions: found - keys.len() as u64,
        capture_win_edges: capture_edges.into_inner(),
        try_losses,
        layers,
    };
    Ok((keys, stats))
}

// ---- index ------------------------------------------------------------------------------

const BUCKET_SHIFT: u32 = 36;

/// Sorted keys with a bucket table over their top bits: key → index in 1–2 cache misses.
pub struct Index<'a> {
    pub keys: &'a [u64],
    buckets: Vec<u32>,
}

impl<'a> Index<'a> {
    pub fn new(keys: &'a [u64]) -> Index<'a> {
        let nb = (1usize << (60 - BUCKET_SHIFT)) + 1;
        let mut buckets = vec![0u32; nb];
        let mut b = 0usize;
        for (i, &k) in keys.iter().enumerate() {
            let kb = (k >> BUCKET_SHIFT) as usize;
            while b <= kb {
                buckets[b] = i as u32;
                b += 1;
            }
        }
        while b < nb {
            buckets[b] = keys.len() as u32;
            b += 1;
        }
        Index { keys, buckets }
    }
    pub fn len(&self) -> usize {
        self.keys.len()
    }
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
    pub fn find(&self, key: u64) -> Option<usize> {
        let b = (key >> BUCKET_SHIFT) as usize;
        if b + 1 >= self.buckets.len() {
            return None;
        }
        let (lo, hi) = (self.buckets[b] as usize, self.buckets[b + 1] as usize);
        self.keys[lo..hi].binary_search(&key).ok().map(|i| lo + i)
    }
}

// ---- unmoves ----------------------------------------------------------------------------

/// Every position `p` (White to move) with a legal White move leading to `c` (Black to
/// move, as decoded from a key), each once per move. Pushes the predecessors' keys
/// (colour-normalised, not mirror-folded).
pub fn predecessors(c: &Position, out: &mut Vec<u64>) {
    debug_assert_eq!(c.side, Color::Black);
    out.clear();
    let them = Color::White; // the side that just moved
    for t in 0..SQUARES {
        let x = c.board[t];
        if x == EMPTY || x & WHITE_BIT == 0 {
            continue;
        }
        let k = kind_of(x);
        // Drops: an unpromoted non-lion piece may have come from the hand.
        if k != LION && k != HEN {
            let mut p = *c;
            p.board[t] = EMPTY;
            p.hands[them.index()][hand_index(k)] += 1;
            p.side = them;
            out.push(p.key());
        }
        // Board moves: which piece stood on the origin before the move.
        let far = rank_of(t) == 3; // White's far rank
        let same = [k];
        let before: &[u8] = match (k, far) {
            (CHICK, true) => &[],         // a chick on the far rank was dropped there
            (HEN, true) => &[HEN, CHICK], // a hen on the far rank may have just promoted
            _ => &same,
        };
        for &y in before {
            let ycell = make_cell(y, them);
            for f in 0..SQUARES {
                if c.board[f] != EMPTY || ATTACKS[ycell as usize][f] & (1 << t) == 0 {
                    continue;
                }
                let mut p = *c;
                p.side = them;
                p.board[f] = ycell;
                p.board[t] = EMPTY;
                out.push(p.key());
                // Or the move captured a Black piece, now in White's hand.
                for (i, &hk) in HAND_KINDS.iter().enumerate() {
                    if c.hands[them.index()][i] == 0 {
                        continue;
                    }
                    let mut q = p;
                    q.hands[them.index()][i] -= 1;
                    q.board[t] = make_cell(hk, Color::Black);
                    out.push(q.key());
                    if hk == CHICK {
                        q.board[t] = make_cell(HEN, Color::Black);
                        out.push(q.key());
                    }
                }
            }
        }
    }
}

// ---- retrograde analysis ----------------------------------------------------------------

/// Summary of a solve.
#[derive(Clone, Debug, Default)]
pub struct SolveStats {
    pub wins: u64,
    pub losses: u64,
    pub draws: u64,
    pub max_distance: u32,
    /// Non-terminal positions without a move (counted as losses in 0).
    pub no_move: u64,
}

/// Solves every position of `keys` (sorted, closed under moves from non-terminal
/// positions) by retrograde analysis. Returns one value byte per key.
pub fn retrograde(keys: &[u64], log: &(dyn Fn(&str) + Sync)) -> Result<(Vec<u8>, SolveStats), String> {
    let index = Index::new(keys);
    let values: Vec<AtomicU8> = (0..keys.len()).map(|_| AtomicU8::new(0)).collect();
    let counters: Vec<AtomicU8> = (0..keys.len()).map(|_| AtomicU8::new(0)).collect();
    let no_move: u64 = keys
        .par_iter()
        .enumerate()
        .map_init(MoveList::new, |list, (i, &k)| {
            let p = Position::from_key(k);
            if let Some(v) = terminal_value(&p) {
                values[i].store(v.to_byte(), Ordering::Relaxed);
                return 0;
            }
            pseudo_moves(&p, list);
            if list.is_empty() {
                values[i].store(Value::Loss(0).to_byte(), Ordering::Relaxed);
                return 1;
            }
            // Children where the opponent can take our lion are wins in 1 for them and
            // are not stored: count only the stored children.
            let mut q = p;
            let mut stored = 0u8;
            for &m in list.as_slice() {
                let u = q.do_move(m);
                stored += !q.can_capture_lion() as u8;
                q.undo_move(m, u);
            }
            if stored == 0 {
                values[i].store(Value::Loss(2).to_byte(), Ordering::Relaxed);
            } else {
                counters[i].store(stored, Ordering::Relaxed);
            }
            0
        })
        .sum();
    log("terminal positions marked");
    let mut d: u32 = 0;
    let mut empty_rounds = 0;
    loop {
        if d + 2 > 255 {
            return Err("a distance above 253 plies does not fit the value byte".into());
        }
        let cur = (d + 1) as u8;
        let new_val = (d + 2) as u8;
        let child_is_loss = d.is_multiple_of(2);
        let scanned: u64 = (0..keys.len())
            .into_par_iter()
            .with_min_len(1 << 14)
            .map_init(Vec::new, |preds, i| {
                if values[i].load(Ordering::Relaxed) != cur {
                    return 0u64;
                }
                let child_symmetric = mirror_key(keys[i]) == keys[i];
                predecessors(&Position::from_key(keys[i]), preds);
                for &pk in preds.iter() {
                    let folded = fold_key(pk);
                    let Some(j) = index.find(folded) else { continue };
                    if values[j].load(Ordering::Relaxed) != 0 {
                        continue;
                    }
                    if child_is_loss {
                        let _ = values[j].compare_exchange(0, new_val, Ordering::Relaxed, Ordering::Relaxed);
                        continue;
                    }
                    // The counter of j counts the moves of j's representative into the
                    // stored classes. Unmoves list each raw parent of this (representative)
                    // child once per move: a symmetric child is reached from both a parent
                    // and its mirror image by mirrored moves (count one of them); a
                    // symmetric parent reaches the child and its mirror image, only one of
                    // which is unmoved here (count it twice).
                    let parent_symmetric = mirror_key(pk) == pk;
                    let take = match (child_symmetric, parent_symmetric) {
                        (true, false) if pk != folded => 0,
                        (false, true) => 2,
                        _ => 1,
                    };
                    if take > 0 && counters[j].fetch_sub(take, Ordering::Relaxed) == take {
                        values[j].store(new_val, Ordering::Relaxed);
                    }
                }
                1
            })
            .sum();
        // Loss-in-2 positions were set at the start, so round 1 may be empty while round 2
        // is not: stop after two empty rounds in a row.
        if scanned == 0 {
            empty_rounds += 1;
            if empty_rounds == 2 {
                break;
            }
        } else {
            empty_rounds = 0;
        }
        log(&format!("distance {d}: {scanned} positions"));
        d += 1;
    }
    let values: Vec<u8> = values.into_iter().map(AtomicU8::into_inner).collect();
    let stats = tally(&values, no_move);
    Ok((values, stats))
}

fn tally(values: &[u8], no_move: u64) -> SolveStats {
    let mut s = SolveStats { no_move, ..Default::default() };
    for &b in values {
        match Value::from_byte(b) {
            Value::Win(d) => {
                s.wins += 1;
                s.max_distance = s.max_distance.max(d);
            }
            Value::Loss(d) => {
                s.losses += 1;
                s.max_distance = s.max_distance.max(d);
            }
            Value::Draw => s.draws += 1,
        }
    }
    s
}

/// An independent solve for checking: forward value iteration (round r decides the
/// positions whose value has distance r from their children's values). Slow; for tests.
pub fn forward_solve(keys: &[u64]) -> Vec<u8> {
    let index = Index::new(keys);
    let mut values = vec![0u8; keys.len()];
    let mut open = Vec::new();
    for (i, &k) in keys.iter().enumerate() {
        match terminal_value(&Position::from_key(k)) {
            Some(v) => values[i] = v.to_byte(),
            None => open.push(i),
        }
    }
    let mut list = MoveList::new();
    let mut r = 1u32;
    while !open.is_empty() && r < 254 {
        let mut decided = Vec::new();
        for &i in &open {
            let mut p = Position::from_key(keys[i]);
            pseudo_moves(&p, &mut list);
            let mut any_loss = false;
            let mut all_win = true;
            for &m in list.as_slice() {
                let u = p.do_move(m);
                let b = if p.can_capture_lion() {
                    Value::Win(1).to_byte()
                } else {
                    values[index.find(table_key(&p)).expect("child of a reachable position is reachable")]
                };
                p.undo_move(m, u);
                let known = b != 0 && (b as u32) < r + 1; // distance ≤ r − 1
                match Value::from_byte(b) {
                    Value::Loss(_) if known => any_loss = true,
                    Value::Win(_) if known => {}
                    _ => all_win = false,
                }
            }
            if any_loss {
                decided.push((i, Value::Win(r)));
            } else if all_win {
                decided.push((i, Value::Loss(r)));
            }
        }
        for &(i, v) in &decided {
            values[i] = v.to_byte();
        }
        let done: std::collections::HashSet<usize> = decided.iter().map(|x| x.0).collect();
        open.retain(|i| !done.contains(i));
        r += 1;
    }
    values
}

/// The value of a position and of each legal move, looked up with `lookup` (table key, see
/// `table_key` → value byte, None if the position is not in the table).
pub fn move_values(
    pos: &Position,
    lookup: &dyn Fn(u64) -> Option<u8>,
) -> Vec<(super::rules::Move, Option<Value>)> {
    let mut list = MoveList::new();
    super::movegen::legal_moves(pos, &mut list);
    let mut p = *pos;
    list.as_slice()
        .iter()
        .map(|&m| {
            let captured = p.board[m.to()];
            if captured != EMPTY && kind_of(captured) == LION {
                return (m, Some(Value::Win(1)));
            }
            let u = p.do_move(m);
            let v = if p.status() == Status::Lost {
                Some(Value::Win(1))
            } else if p.can_capture_lion() {
                Some(Value::Loss(2))
            } else {
                lookup(table_key(&p)).map(|b| Value::from_byte(b).parent())
            };
            p.undo_move(m, u);
            (m, v)
        })
        .collect()
}
