//! Japanese move notation shared by KIF and KI2 (`７六歩`, `同　銀(68)`, `４二金寄`,
//! `６二金左上`, `７三桂不成`, `４五歩打`), Japanese piece names (also used by board
//! diagrams and hands), and the KI2 resolver that finds the move among the legal moves
//! using the disambiguation words 右 左 直 上 (行) 引 寄 and 打 / 成 / 不成 (生).

use crate::rules::{Color, Move, PieceType, Position, Square};

/// A move as written in Japanese notation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JaMove {
    pub to: Square,
    /// Whether `同` was written.
    pub same: bool,
    /// The piece before the move (a promoted name means the piece was already promoted).
    pub piece: PieceType,
    /// `Some(true)` for 成, `Some(false)` for 不成/生, `None` when neither was written.
    pub promote: Option<bool>,
    pub drop: bool,
    /// KIF origin `(77)`.
    pub origin: Option<Square>,
    /// Disambiguation words in order (右 左 直 上 引 寄; 行 is read as 上).
    pub relative: Vec<char>,
}

fn file_digit(c: char) -> Option<u8> {
    match c {
        '１'..='９' => Some((c as u32 - '０' as u32) as u8),
        '1'..='9' => Some(c as u8 - b'0'),
        _ => None,
    }
}

fn rank_digit(c: char) -> Option<u8> {
    const KANJI: [char; 9] = ['一', '二', '三', '四', '五', '六', '七', '八', '九'];
    if let Some(i) = KANJI.iter().position(|&k| k == c) {
        return Some(i as u8 + 1);
    }
    file_digit(c)
}

/// Piece names: one character, or 成香/成桂/成銀 (two). Returns the kind and the chars used.
pub(crate) fn piece_name(chars: &[char]) -> Option<(PieceType, usize)> {
    let first = *chars.first()?;
    if first == '成' {
        let pt = match chars.get(1)? {
            '香' => PieceType::ProLance,
            '桂' => PieceType::ProKnight,
            '銀' => PieceType::ProSilver,
            _ => return None,
        };
        return Some((pt, 2));
    }
    Some((board_piece_char(first)?, 1))
}

/// One-character piece names as used on moves and in board diagrams.
pub(crate) fn board_piece_char(c: char) -> Option<PieceType> {
    Some(match c {
        '歩' => PieceType::Pawn,
        '香' => PieceType::Lance,
        '桂' => PieceType::Knight,
        '銀' => PieceType::Silver,
        '金' => PieceType::Gold,
        '角' => PieceType::Bishop,
        '飛' => PieceType::Rook,
        '玉' | '王' => PieceType::King,
        'と' => PieceType::ProPawn,
        '杏' => PieceType::ProLance,
        '圭' => PieceType::ProKnight,
        '全' => PieceType::ProSilver,
        '馬' => PieceType::Horse,
        '龍' | '竜' => PieceType::Dragon,
        _ => return None,
    })
}

fn is_space(c: char) -> bool {
    c.is_whitespace()
}

/// Parses the move part of a KIF/KI2 move (after the number or ▲/△). Returns the move and
/// the unread rest of the text (times, `+` fork marks, ...).
pub(crate) fn parse_ja_move(text: &str, last_to: Option<Square>) -> Result<(JaMove, String), String> {
    let chars: Vec<char> = text.chars().collect();
    let mut i;
    let (to, same) = match chars.first() {
        Some('同' | '仝') => {
            i = 1;
            while i < chars.len() && is_space(chars[i]) {
                i += 1;
            }
            (last_to.ok_or("同 with no previous move")?, true)
        }
        Some(&c) => {
            let f = file_digit(c).ok_or_else(|| format!("bad destination in {text:?}"))?;
            let r = chars
                .get(1)
                .and_then(|&c| rank_digit(c))
                .ok_or_else(|| format!("bad destination in {text:?}"))?;
            i = 2;
            // Some writers add 同 after the square (`２四同歩`): accept and ignore it.
            if chars.get(i) == Some(&'同') {
                i += 1;
            }
            (Square::new(f - 1, r - 1), false)
        }
        None => return Err("empty move".to_string()),
    };
    let (piece, used) = piece_name(&chars[i..]).ok_or_else(|| format!("bad piece in {text:?}"))?;
    i += used;
    let mut mv = JaMove { to, same, piece, promote: None, drop: false, origin: None, relative: Vec::new() };
    while i < chars.len() {
        match chars[i] {
            c @ ('右' | '左' | '直' | '上' | '引' | '寄') => mv.relative.push(c),
            '行' => mv.relative.push('上'),
            '打' => mv.drop = true,
            '成' => mv.promote = Some(true),
            '生' => mv.promote = Some(false),
            '不' if chars.get(i + 1) == Some(&'成') => {
                mv.promote = Some(false);
                i += 1;
            }
            _ => break,
        }
        i += 1;
    }
    if chars.get(i) == Some(&'(') {
        let inner: Vec<char> = chars[i + 1..].iter().take_while(|&&c| c != ')').copied().collect();
        if inner.len() != 2 || chars.get(i + 3) != Some(&')') {
            return Err(format!("bad origin in {text:?}"));
        }
        let f = inner[0].to_digit(10).filter(|d| (1..=9).contains(d));
        let r = inner[1].to_digit(10).filter(|d| (1..=9).contains(d));
        match (f, r) {
            (Some(f), Some(r)) => mv.origin = Some(Square::new(f as u8 - 1, r as u8 - 1)),
            _ => return Err(format!("bad origin in {text:?}")),
        }
        i += 4;
    }
    Ok((mv, chars[i.min(chars.len())..].iter().collect()))
}

/// Finds the legal move meant by `m` in `pos`. With an origin (KIF) or 打 the move is
/// built directly; otherwise it is picked among the legal moves with the KI2 rules.
pub(crate) fn resolve(pos: &Position, m: &JaMove) -> Result<Move, String> {
    let us = pos.side_to_move();
    if m.drop {
        if m.piece.hand_index().is_none() || m.promote == Some(true) {
            return Err("cannot drop that piece".to_string());
        }
        let mv = Move::new_drop(m.piece, m.to, us);
        return if pos.is_legal(mv) { Ok(mv) } else { Err("illegal drop".to_string()) };
    }
    if let Some(from) = m.origin {
        let p = pos.piece_on(from);
        if p.is_empty() || p.color() != us {
            return Err("no own piece on the origin".to_string());
        }
        if p.piece_type() != m.piece {
            return Err("the piece on the origin is not the one named".to_string());
        }
        let mv = Move::new_board(from, m.to, m.promote == Some(true), p);
        return if pos.is_legal(mv) { Ok(mv) } else { Err("illegal move".to_string()) };
    }
    let promote = m.promote == Some(true);
    let legal = pos.legal_moves();
    let mut cands: Vec<Move> = legal
        .iter()
        .copied()
        .filter(|mv| {
            !mv.is_drop()
                && mv.to() == m.to
                && mv.moved_piece().piece_type() == m.piece
                && mv.is_promotion() == promote
        })
        .collect();
    if cands.is_empty() && m.promote.is_none() && m.relative.is_empty() {
        // No board move fits: a drop may be written without 打.
        let mv = Move::new_drop(m.piece, m.to, us);
        if m.piece.hand_index().is_some() && pos.is_legal(mv) {
            return Ok(mv);
        }
    }
    // Direction words are relative to the mover: "forward" is towards rank 1 for Black.
    let fwd = |mv: &Move| -> i32 {
        let d = mv.from().rank() as i32 - mv.to().rank() as i32;
        if us == Color::Black { d } else { -d }
    };
    // "Right" from the mover's view: smaller file for Black, larger for White.
    let rightness = |mv: &Move| -> i32 {
        let f = mv.from().file() as i32;
        if us == Color::Black { -f } else { f }
    };
    // Direction words first, then 右/左 among what is left ("左上": the left one of the
    // pieces moving up).
    let mut words = m.relative.clone();
    words.sort_by_key(|&w| matches!(w, '右' | '左'));
    for w in words {
        match w {
            '上' => cands.retain(|mv| fwd(mv) > 0),
            '引' => cands.retain(|mv| fwd(mv) < 0),
            '寄' => cands.retain(|mv| fwd(mv) == 0),
            '直' => cands.retain(|mv| fwd(mv) > 0 && mv.from().file() == mv.to().file()),
            '右' | '左' => {
                let key = |mv: &Move| if w == '右' { rightness(mv) } else { -rightness(mv) };
                if let Some(best) = cands.iter().map(key).max() {
                    cands.retain(|mv| key(mv) == best);
                }
            }
            _ => {}
        }
    }
    match cands.len() {
        1 => Ok(cands[0]),
        0 => Err("no legal move fits".to_string()),
        n => Err(format!("ambiguous: {n} legal moves fit")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usi(pos: &Position, text: &str, last: Option<Square>) -> String {
        let (m, _) = parse_ja_move(text, last).unwrap();
        resolve(pos, &m).unwrap().to_usi()
    }

    #[test]
    fn digits_and_names() {
        assert_eq!(file_digit('７'), Some(7));
        assert_eq!(file_digit('7'), Some(7));
        assert_eq!(rank_digit('六'), Some(6));
        let (m, rest) = parse_ja_move("７七角成(22)  (00:00 / 00:00:00)", None).unwrap();
        assert_eq!(m.piece, PieceType::Bishop);
        assert_eq!(m.promote, Some(true));
        assert_eq!(m.origin, Some(Square::new(1, 1)));
        assert!(rest.contains("00:00"));
        let (m, _) = parse_ja_move("同　成銀(23)", Some(Square::new(0, 0))).unwrap();
        assert_eq!((m.to, m.piece, m.same), (Square::new(0, 0), PieceType::ProSilver, true));
        assert!(parse_ja_move("同歩", None).is_err());
        assert!(parse_ja_move("７", None).is_err());
        assert!(parse_ja_move("７六歩(7", None).is_err());
    }

    #[test]
    fn ki2_disambiguation() {
        let pos = Position::startpos();
        assert_eq!(usi(&pos, "７六歩", None), "7g7f");
        // Golds on 6i and 4i; 5h can be reached by both.
        assert_eq!(usi(&pos, "５八金右", None), "4i5h");
        assert_eq!(usi(&pos, "５八金左", None), "6i5h");
        let (m, _) = parse_ja_move("５八金", None).unwrap();
        assert!(resolve(&pos, &m).unwrap_err().starts_with("ambiguous"));
        // Silver 7i to 6h vs gold 6i? Only the silver is a silver.
        assert_eq!(usi(&pos, "６八銀", None), "7i6h");
        // White: golds 4a and 6a to 5b; 右 from White's view is the 6a gold.
        let pos =
            Position::from_sfen("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1").unwrap();
        assert_eq!(usi(&pos, "５二金右", None), "6a5b");
        assert_eq!(usi(&pos, "５二金左", None), "4a5b");
    }

    #[test]
    fn direction_words() {
        // Black golds on 5i, 4h and 6h... gold at 5i moving to 5h is 直 (straight up).
        let pos = Position::from_sfen("4k4/9/9/9/9/9/9/3G1G3/4G3K b - 1").unwrap();
        assert_eq!(usi(&pos, "５八金直", None), "5i5h");
        assert_eq!(usi(&pos, "５八金右", None), "4h5h");
        assert_eq!(usi(&pos, "５八金左", None), "6h5h");
        // Gold 5i to 4i? 4i reachable from 5i (寄) and 4h (引).
        assert_eq!(usi(&pos, "４九金寄", None), "5i4i");
        assert_eq!(usi(&pos, "４九金引", None), "4h4i");
        // Silvers on 6i, 6g and 4i to 5h: 左上 is the 6i silver, 左引 the 6g one.
        let pos = Position::from_sfen("4k4/9/9/9/9/9/3S5/9/3S1S2K b - 1").unwrap();
        assert_eq!(usi(&pos, "５八銀左上", None), "6i5h");
        assert_eq!(usi(&pos, "５八銀上左", None), "6i5h");
        assert_eq!(usi(&pos, "５八銀引", None), "6g5h");
        assert_eq!(usi(&pos, "５八銀右", None), "4i5h");
        // A drop written without 打 when no piece can move there.
        let pos = Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b G 1").unwrap();
        assert_eq!(usi(&pos, "５五金", None), "G*5e");
    }
}
