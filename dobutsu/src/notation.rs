//! Text forms. Positions in a SFEN-like string: ranks top (rank 1, White's home) to
//! bottom separated by `/`, files a..c left to right, `L` lion, `G` giraffe, `E` elephant,
//! `C` chick, `H` hen (upper case Black, lower case White), digits for empty runs; then
//! `b`/`w` for the side to move, the hands (`-` or e.g. `2Ce`), and the ply number.
//! The start is `gle/1c1/1C1/ELG b - 1`.
//!
//! Moves in a USI-like form: `b3b2` (from, to; squares are file letter a..c + rank 1..4)
//! and `C*b2` for drops. A chick reaching the far rank always promotes, so no `+`.

use super::rules::{
    CHICK, Color, ELEPHANT, EMPTY, GIRAFFE, HAND_KINDS, HEN, LION, Move, Position, SQUARES, color_of,
    kind_of, make_cell,
};

pub const STARTPOS: &str = "gle/1c1/1C1/ELG b - 1";

fn kind_letter(kind: u8) -> char {
    match kind {
        LION => 'L',
        GIRAFFE => 'G',
        ELEPHANT => 'E',
        CHICK => 'C',
        HEN => 'H',
        _ => '?',
    }
}

fn letter_kind(c: char) -> Option<u8> {
    match c.to_ascii_uppercase() {
        'L' => Some(LION),
        'G' => Some(GIRAFFE),
        'E' => Some(ELEPHANT),
        'C' => Some(CHICK),
        'H' => Some(HEN),
        _ => None,
    }
}

pub fn square_name(sq: usize) -> String {
    format!("{}{}", (b'a' + (sq % 3) as u8) as char, sq / 3 + 1)
}

fn parse_square(s: &[u8]) -> Option<usize> {
    if s.len() != 2 {
        return None;
    }
    let f = s[0].to_ascii_lowercase().checked_sub(b'a')?;
    let r = s[1].checked_sub(b'1')?;
    if f < 3 && r < 4 { Some(r as usize * 3 + f as usize) } else { None }
}

impl Position {
    /// Parses the SFEN-like form (or `startpos`). Errors name the field at fault.
    pub fn from_sfen(s: &str) -> Result<Position, String> {
        let s = s.trim();
        let s = s.strip_prefix("sfen ").unwrap_or(s);
        if s == "startpos" {
            return Ok(Position::startpos());
        }
        let fields: Vec<&str> = s.split_whitespace().collect();
        if fields.len() < 3 || fields.len() > 4 {
            return Err(format!(
                "expected 3 or 4 fields (board, side, hands[, ply]), found {}",
                fields.len()
            ));
        }
        let mut board = [EMPTY; SQUARES];
        let ranks: Vec<&str> = fields[0].split('/').collect();
        if ranks.len() != 4 {
            return Err(format!("board field: expected 4 ranks separated by '/', found {}", ranks.len()));
        }
        for (r, rank) in ranks.iter().enumerate() {
            let mut f = 0usize;
            for ch in rank.chars() {
                if let Some(d) = ch.to_digit(10) {
                    if d == 0 || d > 3 {
                        return Err(format!("board rank {}: bad empty count {ch:?}", r + 1));
                    }
                    f += d as usize;
                } else if let Some(k) = letter_kind(ch) {
                    if f >= 3 {
                        return Err(format!("board rank {}: more than 3 files", r + 1));
                    }
                    let c = if ch.is_ascii_uppercase() { Color::Black } else { Color::White };
                    board[r * 3 + f] = make_cell(k, c);
                    f += 1;
                } else {
                    return Err(format!("board rank {}: unknown piece letter {ch:?} (use L G E C H)", r + 1));
                }
                if f > 3 {
                    return Err(format!("board rank {}: more than 3 files", r + 1));
                }
            }
            if f != 3 {
                return Err(format!("board rank {}: {f} files instead of 3", r + 1));
            }
        }
        let side = match fields[1] {
            "b" => Color::Black,
            "w" => Color::White,
            x => return Err(format!("side field: {x:?} is not 'b' or 'w'")),
        };
        let mut hands = [[0u8; 3]; 2];
        if fields[2] != "-" {
            let mut count: Option<u32> = None;
            for ch in fields[2].chars() {
                if let Some(d) = ch.to_digit(10) {
                    if count.is_some() {
                        return Err("hands field: counts have one digit".into());
                    }
                    count = Some(d);
                    continue;
                }
                let k = letter_kind(ch).filter(|k| HAND_KINDS.contains(k)).ok_or_else(|| {
                    format!("hands field: {ch:?} cannot be in hand (use C E G, upper case Black)")
                })?;
                let c = if ch.is_ascii_uppercase() { 0 } else { 1 };
                let n = count.take().unwrap_or(1);
                if n == 0 || n > 2 {
                    return Err(format!("hands field: count {n} out of range 1..2"));
                }
                let i = HAND_KINDS.iter().position(|&x| x == k).unwrap_or(0);
                hands[c][i] += n as u8;
            }
            if count.is_some() {
                return Err("hands field: a count without a piece letter".into());
            }
        }
        let ply = match fields.get(3) {
            None => 1,
            Some(p) => match p.parse::<u32>() {
                Ok(n) if (1..1_000_000).contains(&n) => n,
                _ => return Err(format!("ply field: {p:?} is not a number ≥ 1")),
            },
        };
        let pos = Position { board, hands, side, ply };
        pos.validate()?;
        Ok(pos)
    }

    pub fn to_sfen(&self) -> String {
        let mut s = String::new();
        for r in 0..4 {
            if r > 0 {
                s.push('/');
            }
            let mut empty = 0;
            for f in 0..3 {
                let x = self.board[r * 3 + f];
                if x == EMPTY {
                    empty += 1;
                    continue;
                }
                if empty > 0 {
                    s.push(char::from(b'0' + empty));
                    empty = 0;
                }
                let l = kind_letter(kind_of(x));
                s.push(if color_of(x) == Color::Black { l } else { l.to_ascii_lowercase() });
            }
            if empty > 0 {
                s.push(char::from(b'0' + empty));
            }
        }
        s.push_str(if self.side == Color::Black { " b " } else { " w " });
        let mut h = String::new();
        for c in 0..2 {
            for i in 0..3 {
                let n = self.hands[c][i];
                if n == 0 {
                    continue;
                }
                if n > 1 {
                    h.push(char::from(b'0' + n));
                }
                let l = kind_letter(HAND_KINDS[i]);
                h.push(if c == 0 { l } else { l.to_ascii_lowercase() });
            }
        }
        s.push_str(if h.is_empty() { "-" } else { &h });
        s.push_str(&format!(" {}", self.ply));
        s
    }
}

impl Move {
    pub fn to_text(self) -> String {
        if self.is_drop() {
            format!("{}*{}", kind_letter(HAND_KINDS[self.drop_index()]), square_name(self.to()))
        } else {
            format!("{}{}", square_name(self.from()), square_name(self.to()))
        }
    }

    /// Parses `b3b2` or `C*b2` (syntax only; check legality with `movegen::is_legal`).
    pub fn from_text(s: &str) -> Result<Move, String> {
        let b = s.trim().as_bytes();
        if b.len() == 4 && b[1] == b'*' {
            let k = letter_kind(b[0] as char)
                .and_then(|k| HAND_KINDS.iter().position(|&x| x == k))
                .ok_or_else(|| format!("move {s:?}: {:?} cannot be dropped (C, E or G)", b[0] as char))?;
            let to = parse_square(&b[2..]).ok_or_else(|| format!("move {s:?}: bad square"))?;
            return Ok(Move::drop(k, to));
        }
        if b.len() == 4 || (b.len() == 5 && b[4] == b'+') {
            let from = parse_square(&b[0..2]).ok_or_else(|| format!("move {s:?}: bad from-square"))?;
            let to = parse_square(&b[2..4]).ok_or_else(|| format!("move {s:?}: bad to-square"))?;
            return Ok(Move::board(from, to));
        }
        Err(format!("move {s:?}: expected e.g. b3b2 or C*b2"))
    }
}
