//! The features active in a position and the sign each has in the evaluation, seen from a
//! given ("root") side. See shared/spec/formats.md for the formula:
//! eval(stm) = ((Black to move ? board : −board) + turn) / 32, so from the root side's view
//! a board term counts `root is Black ? +1 : −1` and a turn term counts
//! `stm == root ? +1 : −1`. The White-half KPP enters `board` with a minus sign.

use super::weights::{kk_index, kkp_index, kpp_index, pattern_index};
use crate::eval::bona_piece::BonaPiece;
use crate::eval::patterns::PatternSet;
use crate::eval::piece_list::{PIECE_LIST_LEN, PieceList};
use crate::rules::{Color, Position};

/// One active feature: its global index and the factors of its board and turn parts in
/// the root side's evaluation (each +1 or −1; for patterns only `[0]` is used).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Active {
    pub index: u32,
    pub sign: [f32; 2],
}

fn half(k: usize, list: &[BonaPiece; PIECE_LIST_LEN], sign: [f32; 2], out: &mut Vec<Active>) {
    for i in 1..PIECE_LIST_LEN {
        let a = list[i] as usize;
        if a == 0 {
            continue;
        }
        for &b in &list[..i] {
            let b = b as usize;
            if b == 0 || b == a {
                continue;
            }
            out.push(Active { index: kpp_index(k, a, b) as u32, sign });
        }
    }
}

/// Appends the features active in `pos` with their signs from `root`'s view.
/// `pattern_buf` is scratch space.
pub fn active_features(
    pos: &Position,
    root: Color,
    patterns: Option<&PatternSet>,
    pattern_buf: &mut Vec<u32>,
    out: &mut Vec<Active>,
) {
    let sb = if root == Color::Black { 1.0 } else { -1.0 };
    let st = if pos.side_to_move() == root { 1.0 } else { -1.0 };
    if let (Some(bk), Some(wk)) = (pos.king_square(Color::Black), pos.king_square(Color::White)) {
        let list = PieceList::new(pos);
        let (bk, wk) = (bk.index(), wk.index());
        out.push(Active { index: kk_index(bk, wk) as u32, sign: [sb, st] });
        for &p in list.black_view() {
            if p != 0 {
                out.push(Active { index: kkp_index(bk, wk, p as usize) as u32, sign: [sb, st] });
            }
        }
        half(bk, list.black_view(), [sb, st], out);
        half(80 - wk, list.white_view(), [-sb, st], out);
    }
    if let Some(set) = patterns {
        pattern_buf.clear();
        set.active_patterns(pos, pattern_buf);
        for &i in pattern_buf.iter() {
            let s = if set.patterns()[i as usize].is_relative() { st } else { sb };
            out.push(Active { index: pattern_index(i as usize) as u32, sign: [s, 0.0] });
        }
    }
}
