//! Score conventions: mate scores count plies from the root, and are stored in the
//! transposition table relative to the node so that they stay right when the same
//! position is reached at another ply.

pub const MATE: i32 = 32000;
/// Scores at or beyond this are mates (within `MAX_PLY`).
pub const MATE_IN_MAX_PLY: i32 = MATE - 1000;
/// Score of a repetition won because the opponent checked with every move.
pub const PERPETUAL_WIN: i32 = 28000;
/// Score of reaching a position seen before with the same pieces on the board and the
/// same side to move, holding more pieces in hand than then (a "superior" position; its
/// negation, "inferior", for fewer): the opponent's moves in between gave material away
/// for nothing, so the opponent will not play into it. Below `PERPETUAL_WIN`, which the
/// rules award.
pub const SUPERIOR_REPETITION: i32 = 27000;
pub const INFINITE: i32 = 32001;
/// "No value" in the transposition table (never a real score).
pub const VALUE_NONE: i32 = 32002;
pub const MAX_PLY: usize = 120;

/// The score of being mated at `ply`.
#[inline]
pub const fn mated_in(ply: usize) -> i32 {
    -MATE + ply as i32
}

/// The score of mating at `ply`.
#[inline]
pub const fn mate_in(ply: usize) -> i32 {
    MATE - ply as i32
}

#[inline]
pub fn score_to_tt(s: i32, ply: usize) -> i32 {
    if s == VALUE_NONE {
        s
    } else if s >= MATE_IN_MAX_PLY {
        s + ply as i32
    } else if s <= -MATE_IN_MAX_PLY {
        s - ply as i32
    } else {
        s
    }
}

#[inline]
pub fn score_from_tt(s: i32, ply: usize) -> i32 {
    if s == VALUE_NONE {
        s
    } else if s >= MATE_IN_MAX_PLY {
        s - ply as i32
    } else if s <= -MATE_IN_MAX_PLY {
        s + ply as i32
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mate_scores_are_stored_relative_to_the_node() {
        // Mate in 5 from the root, seen at ply 3: mate in 2 from that node.
        let s = mate_in(5);
        let stored = score_to_tt(s, 3);
        assert_eq!(stored, mate_in(2));
        // Read back at ply 7 (another path to the same node): mate at ply 9.
        assert_eq!(score_from_tt(stored, 7), mate_in(9));
        assert_eq!(score_from_tt(score_to_tt(mated_in(4), 2), 2), mated_in(4));
        assert_eq!(score_to_tt(123, 9), 123);
        assert_eq!(score_from_tt(VALUE_NONE, 9), VALUE_NONE);
    }
}
