//! A position and its colour-flipped, 180°-rotated twin with the other side to move
//! evaluate equally (side to move's view), for tables with the ecosystem's symmetries.

use engine_core::eval::patterns::{Pattern, PatternSet, Triple};
use engine_core::eval::{Evaluator, KpptTables};
use engine_core::rules::{Color, PieceType, Position, Square};
use std::sync::Arc;

/// Swaps colours, rotates the board, swaps hands and the side to move.
fn flipped(pos: &Position) -> Position {
    let sfen = pos.to_sfen();
    let fields: Vec<&str> = sfen.split(' ').collect();
    let swap_case = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_ascii_uppercase() { c.to_ascii_lowercase() } else { c.to_ascii_uppercase() })
            .collect()
    };
    // Rotating 180°: ranks in reverse order, each rank read backwards (keeping '+' before
    // its piece).
    let ranks: Vec<String> = fields[0]
        .split('/')
        .rev()
        .map(|rank| {
            let mut tokens: Vec<String> = Vec::new();
            let mut promoted = false;
            for c in rank.chars() {
                if c == '+' {
                    promoted = true;
                    continue;
                }
                tokens.push(if promoted { format!("+{c}") } else { c.to_string() });
                promoted = false;
            }
            tokens.reverse();
            swap_case(&tokens.concat())
        })
        .collect();
    let side = if fields[1] == "b" { "w" } else { "b" };
    let hand = if fields[2] == "-" { "-".to_string() } else { swap_case(fields[2]) };
    Position::from_sfen(&format!("{} {side} {hand} 1", ranks.join("/"))).unwrap()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn symmetric_patterns(rng: &mut Rng) -> PatternSet {
    let kinds = [PieceType::King, PieceType::Gold, PieceType::Silver, PieceType::Pawn, PieceType::Rook];
    let mut patterns = Vec::new();
    let mut weights = Vec::new();
    while patterns.len() < 2000 {
        let size = 2 + (rng.next() % 3) as usize;
        let triples: Vec<Triple> = (0..size)
            .map(|_| Triple {
                color: if rng.next().is_multiple_of(2) { Color::Black } else { Color::White },
                piece_type: kinds[(rng.next() % kinds.len() as u64) as usize],
                square: Square::from_index((rng.next() % 81) as usize),
            })
            .collect();
        let relative = rng.next().is_multiple_of(2);
        let Some(p) = Pattern::new(triples, relative) else { continue };
        let w = (rng.next() % 2001) as i32 - 1000;
        if relative {
            patterns.push(p);
            weights.push(w);
        } else if p.flipped() != p {
            // An absolute pattern's mirror counts for the other side: negated weight.
            patterns.push(p.flipped());
            weights.push(-w);
            patterns.push(p);
            weights.push(w);
        }
    }
    PatternSet::new(patterns, weights)
}

#[test]
fn flipped_twin_evaluates_equally() {
    let mut tables = KpptTables::random(3, 2000);
    tables.symmetrize_flip();
    let mut rng = Rng(77);
    let mut eval = Evaluator::with_kppt(Arc::new(tables));
    eval.patterns = Some(Arc::new(symmetric_patterns(&mut rng)));
    let mut checked = 0;
    for game in 0..60 {
        let mut pos = Position::startpos();
        for _ in 0..120 {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            pos.do_move(moves[(rng.next() % moves.len() as u64) as usize]);
            let twin = flipped(&pos);
            assert_eq!(flipped(&twin).to_sfen().split(' ').next(), pos.to_sfen().split(' ').next());
            let (a, b) = (eval.evaluate_full(&pos), eval.evaluate_full(&twin));
            assert_eq!(a, b, "game {game}: {} vs {}", pos.to_sfen(), twin.to_sfen());
            checked += 1;
        }
    }
    assert!(checked > 5000);
}

#[test]
fn asymmetric_tables_are_detected() {
    // Without symmetrization the twins differ: the test above can fail.
    let eval = Evaluator::with_kppt(Arc::new(KpptTables::random(5, 2000)));
    let pos =
        Position::from_sfen("lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2").unwrap();
    assert_ne!(eval.evaluate_full(&pos), eval.evaluate_full(&flipped(&pos)));
}
