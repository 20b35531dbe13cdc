//! The fields of a KIF/KI2 record around the moves: 手合割 names and their start
//! positions, hands of a board diagram (持駒), special moves (投了, 千日手, ...), `まで`
//! summaries and move times. The line-by-line reader is `kif.rs`.

use super::ja_notation::board_piece_char;
use super::record::{GameResult, Outcome, ResultReason};
use crate::rules::{Color, HANDICAPS, Position, STARTPOS_SFEN};

/// The start position for a 手合割 name; `None` for names without a standard position.
pub fn handicap_position(name: &str) -> Option<Position> {
    let name = name.trim();
    let key = match name {
        "平手" => return Position::from_sfen(STARTPOS_SFEN).ok(),
        "香落ち" => "lance",
        "右香落ち" => "right-lance",
        "角落ち" => "bishop",
        "飛車落ち" => "rook",
        "飛香落ち" => "rook-lance",
        "二枚落ち" => "2-piece",
        "四枚落ち" => "4-piece",
        "六枚落ち" => "6-piece",
        "八枚落ち" => "8-piece",
        "十枚落ち" => "10-piece",
        // Not in HANDICAPS: the usual Kakinoki layouts ("left"/"right" from the
        // handicapped White player's side: White's left is the 1-file side).
        "三枚落ち" => {
            return Position::from_sfen("lnsgkgsn1/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1").ok();
        }
        "五枚落ち" | "左五枚落ち" => {
            return Position::from_sfen("1nsgkgs2/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1").ok();
        }
        "右五枚落ち" => {
            return Position::from_sfen("2sgkgsn1/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1").ok();
        }
        "左七枚落ち" => {
            return Position::from_sfen("2sgkg3/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1").ok();
        }
        "七枚落ち" | "右七枚落ち" => {
            return Position::from_sfen("3gkgs2/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1").ok();
        }
        _ => return None,
    };
    HANDICAPS.iter().find(|(k, _)| *k == key).and_then(|(_, sfen)| Position::from_sfen(sfen).ok())
}

pub(super) enum Special {
    SideLoses(ResultReason),
    SideWins(ResultReason),
    Fixed(Outcome, ResultReason),
}

pub(super) fn special_move(text: &str) -> Option<Special> {
    use ResultReason as R;
    use Special::*;
    const TABLE: &[(&str, u8)] = &[
        ("投了", 0),
        ("中断", 1),
        ("千日手", 2),
        ("詰み", 3),
        ("持将棋", 4),
        ("切れ負け", 5),
        ("時間切れ", 5),
        ("Time-up", 5),
        ("反則勝ち", 6),
        ("反則負け", 7),
        ("入玉勝ち", 8),
        ("宣言勝ち", 8),
        ("不戦勝", 9),
        ("不戦敗", 10),
        ("不詰", 11),
        ("封じ手", 12),
    ];
    let (word, code) = TABLE.iter().find(|(w, _)| text.starts_with(w))?;
    Some(match code {
        0 => SideLoses(R::Resign),
        1 => Fixed(Outcome::Unknown, R::Abort),
        2 => Fixed(Outcome::Draw, R::Repetition),
        3 => SideLoses(R::Checkmate),
        4 => Fixed(Outcome::Draw, R::Impasse),
        5 => SideLoses(R::TimeUp),
        6 => SideWins(R::IllegalMove),
        7 => SideLoses(R::IllegalMove),
        8 => SideWins(R::Declaration),
        9 => SideWins(R::Other((*word).to_string())),
        10 => SideLoses(R::Other((*word).to_string())),
        _ => Fixed(Outcome::Unknown, R::Other((*word).to_string())),
    })
}

/// Reads a `まで...` summary: `まで77手で先手の勝ち`, `まで64手で千日手`, `まで11手詰`...
/// `side` is the side to move at the end of the main line.
pub(super) fn summary_result(text: &str, side: Color) -> Option<GameResult> {
    use ResultReason as R;
    let winner = if ["先手の勝ち", "下手の勝ち", "先手勝ち", "下手勝ち"].iter().any(|w| text.contains(w))
    {
        Some(Color::Black)
    } else if ["後手の勝ち", "上手の勝ち", "後手勝ち", "上手勝ち"].iter().any(|w| text.contains(w))
    {
        Some(Color::White)
    } else {
        None
    };
    let reason = if text.contains("連続王手") {
        R::PerpetualCheck
    } else if text.contains("千日手") {
        R::Repetition
    } else if text.contains("持将棋") {
        R::Impasse
    } else if text.contains("反則") {
        R::IllegalMove
    } else if text.contains("時間切れ") || text.contains("切れ負け") {
        R::TimeUp
    } else if text.contains("入玉") || text.contains("宣言") {
        R::Declaration
    } else if text.contains("中断") {
        R::Abort
    } else if text.contains("不詰") {
        R::Other("不詰".to_string())
    } else if text.contains('詰') {
        R::Checkmate
    } else if winner.is_some() {
        // Kakinoki writes a resignation as just "まで77手で先手の勝ち".
        R::Resign
    } else {
        return None;
    };
    let outcome = match (winner, &reason) {
        (Some(c), _) => Outcome::win_for(c),
        (None, R::Repetition | R::Impasse) => Outcome::Draw,
        (None, R::Checkmate) => Outcome::loss_for(side),
        _ => Outcome::Unknown,
    };
    Some(GameResult::new(outcome, reason))
}

/// Japanese numerals as used for hand counts: 一..九, 十, 十八.
pub(super) fn kanji_number(s: &str) -> Option<u32> {
    const DIGITS: [char; 9] = ['一', '二', '三', '四', '五', '六', '七', '八', '九'];
    let digit = |c: char| DIGITS.iter().position(|&d| d == c).map(|i| i as u32 + 1);
    let chars: Vec<char> = s.chars().collect();
    match chars.as_slice() {
        [] => Some(1),
        [c] if *c == '十' => Some(10),
        [c] => digit(*c).or_else(|| c.to_digit(10)),
        ['十', c] => digit(*c).map(|d| 10 + d),
        _ => s.parse::<u32>().ok(),
    }
}

pub(super) fn parse_hand(value: &str) -> Result<[u32; 8], String> {
    let mut hand = [0u32; 8];
    let v = value.trim();
    if v.is_empty() || v == "なし" {
        return Ok(hand);
    }
    for tok in v.split(|c: char| c.is_whitespace() || c == '、') {
        if tok.is_empty() {
            continue;
        }
        let mut chars = tok.chars();
        let c = chars.next().ok_or("empty hand entry")?;
        let pt = board_piece_char(c)
            .filter(|pt| pt.hand_index().is_some())
            .ok_or_else(|| format!("bad piece in hand {tok:?}"))?;
        let n = kanji_number(chars.as_str()).ok_or_else(|| format!("bad count in hand {tok:?}"))?;
        if n > pt.max_count() as u32 {
            return Err(format!("too many in hand {tok:?}"));
        }
        hand[pt.index()] += n;
    }
    Ok(hand)
}

/// This move's time from a KIF time field `( 0:16/00:00:16)` (`m:ss`, or `h:mm:ss`).
pub(super) fn move_seconds(rest: &str) -> Option<f64> {
    let open = rest.find('(')?;
    let inner = &rest[open + 1..];
    let inner = &inner[..inner.find(')').unwrap_or(inner.len())];
    let first = inner.split('/').next()?.trim();
    if !first.contains(':') {
        return None;
    }
    let mut total = 0f64;
    for part in first.split(':') {
        let v: f64 = part.trim().parse().ok()?;
        total = total * 60.0 + v;
    }
    total.is_finite().then_some(total)
}
