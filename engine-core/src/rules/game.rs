//! A game in progress: positions with their history, and the rules that end a game
//! (no legal move, fourfold repetition with the perpetual-check exception, the 27-point
//! entering-king declaration, an optional move limit).

use super::bitboard::Bitboard;
use super::position::{MoveDelta, Position};
use super::types::{Color, Move, PieceType};

/// How a game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GameEnd {
    /// The side to move has no legal move (checkmate, or the rare stalemate: both lose).
    NoLegalMove,
    /// The same position arose for the fourth time without perpetual check.
    Repetition,
    /// Fourth occurrence where one side checked with every move of the cycle: it loses.
    PerpetualCheck,
    /// Entering-king declaration under the 27-point rule.
    Declaration,
    /// The configured move limit was reached.
    MaxPlies,
}

/// The result of a finished game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GameOutcome {
    /// `None` for a draw.
    pub winner: Option<Color>,
    pub reason: GameEnd,
}

/// Options that change when a game ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GameRules {
    /// End the game as soon as the side to move may declare under the 27-point rule.
    pub declaration: bool,
    /// Declare a draw after this many moves (from the game's start position).
    pub max_plies: Option<u32>,
}

impl Default for GameRules {
    fn default() -> Self {
        GameRules { declaration: true, max_plies: None }
    }
}

#[derive(Clone)]
pub struct Game {
    start: Position,
    pos: Position,
    moves: Vec<Move>,
    deltas: Vec<MoveDelta>,
    /// Key of every position so far (index 0 = start).
    keys: Vec<u64>,
    /// Whether the side to move in that position was in check.
    checks: Vec<bool>,
}

impl Game {
    pub fn new(start: Position) -> Game {
        Game {
            start,
            pos: start,
            moves: Vec::new(),
            deltas: Vec::new(),
            keys: vec![start.key()],
            checks: vec![start.in_check()],
        }
    }

    pub fn start(&self) -> &Position {
        &self.start
    }

    pub fn position(&self) -> &Position {
        &self.pos
    }

    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// Plays a move that the caller knows to be legal.
    pub fn play(&mut self, m: Move) -> MoveDelta {
        let d = self.pos.do_move(m);
        self.moves.push(m);
        self.deltas.push(d);
        self.keys.push(self.pos.key());
        self.checks.push(self.pos.in_check());
        d
    }

    /// Plays a move after checking its legality; `false` (and no change) if illegal.
    pub fn try_play(&mut self, m: Move) -> bool {
        if !self.pos.is_legal(m) {
            return false;
        }
        self.play(m);
        true
    }

    /// Takes back the last move.
    pub fn undo(&mut self) -> Option<Move> {
        let d = self.deltas.pop()?;
        self.pos.undo_move(&d);
        self.keys.pop();
        self.checks.pop();
        self.moves.pop()
    }

    /// How many times the current position has occurred (1 the first time).
    pub fn repetition_count(&self) -> usize {
        let key = self.pos.key();
        // Same side to move only: step back two plies at a time.
        self.keys.iter().rev().step_by(2).filter(|&&k| k == key).count()
    }

    /// The game's result if it has ended.
    pub fn outcome(&self, rules: &GameRules) -> Option<GameOutcome> {
        let us = self.pos.side_to_move();
        if !self.pos.has_legal_move() {
            return Some(GameOutcome { winner: Some(us.opponent()), reason: GameEnd::NoLegalMove });
        }
        if let Some(outcome) = self.repetition_outcome() {
            return Some(outcome);
        }
        if rules.declaration && can_declare_win(&self.pos) {
            return Some(GameOutcome { winner: Some(us), reason: GameEnd::Declaration });
        }
        if rules.max_plies.is_some_and(|max| self.moves.len() as u32 >= max) {
            return Some(GameOutcome { winner: None, reason: GameEnd::MaxPlies });
        }
        None
    }

    /// Fourfold repetition: a draw, unless one side gave check with every one of its moves
    /// from the first of the four occurrences on, in which case that side loses.
    pub fn repetition_outcome(&self) -> Option<GameOutcome> {
        let n = self.keys.len() - 1;
        let key = self.keys[n];
        let occurrences: Vec<usize> = (0..=n).rev().step_by(2).filter(|&i| self.keys[i] == key).collect();
        if occurrences.len() < 4 {
            return None;
        }
        let first = *occurrences.last().expect("four occurrences");
        let side_now = self.pos.side_to_move();
        // Position i (i > first) was reached by a move of the side not to move in it.
        let all_checks_by = |checker: Color| {
            (first + 1..=n)
                .filter(|&i| {
                    let mover_is_checker =
                        if (n - i).is_multiple_of(2) { side_now.opponent() } else { side_now };
                    mover_is_checker == checker
                })
                .all(|i| self.checks[i])
        };
        for checker in Color::ALL {
            if all_checks_by(checker) {
                return Some(GameOutcome {
                    winner: Some(checker.opponent()),
                    reason: GameEnd::PerpetualCheck,
                });
            }
        }
        Some(GameOutcome { winner: None, reason: GameEnd::Repetition })
    }
}

/// The 27-point entering-king rule (CSA): the side to move may declare a win when its king
/// is in the opponent's camp, not in check, with at least 10 other own pieces in that camp,
/// and its points (rook, bishop and their promotions 5, others 1; pieces in the camp and in
/// hand) reach 28 for Black or 27 for White.
pub fn can_declare_win(pos: &Position) -> bool {
    let us = pos.side_to_move();
    let Some(ksq) = pos.king_square(us) else {
        return false;
    };
    let camp = Bitboard::promotion_zone(us);
    if !camp.contains(ksq) || pos.in_check() {
        return false;
    }
    let ours_in_camp = pos.pieces_of(us) & camp & !Bitboard::from_square(ksq);
    if ours_in_camp.count() < 10 {
        return false;
    }
    let big = pos.pieces_of_type(PieceType::Rook)
        | pos.pieces_of_type(PieceType::Dragon)
        | pos.pieces_of_type(PieceType::Bishop)
        | pos.pieces_of_type(PieceType::Horse);
    let big_in_camp = (ours_in_camp & big).count();
    let hand = pos.hand(us);
    let big_in_hand = hand.count(PieceType::Rook) + hand.count(PieceType::Bishop);
    let points = ours_in_camp.count() + 4 * big_in_camp + hand.total() + 4 * big_in_hand;
    let needed = if us == Color::Black { 28 } else { 27 };
    points >= needed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn play_usi(game: &mut Game, moves: &str) {
        for m in moves.split_whitespace() {
            let mv = game.position().parse_usi_move(m).unwrap_or_else(|e| panic!("{e}"));
            game.play(mv);
        }
    }

    #[test]
    fn plain_repetition_is_a_draw() {
        let mut game = Game::new(Position::startpos());
        let cycle = "5i5h 5a5b 5h5i 5b5a ";
        play_usi(&mut game, &cycle.repeat(2));
        assert_eq!(game.repetition_count(), 3);
        assert_eq!(game.outcome(&GameRules::default()), None);
        play_usi(&mut game, cycle);
        assert_eq!(game.repetition_count(), 4);
        assert_eq!(
            game.outcome(&GameRules::default()),
            Some(GameOutcome { winner: None, reason: GameEnd::Repetition })
        );
    }

    #[test]
    fn perpetual_check_loses_for_the_checker() {
        // Black's rook checks the White king on files 6 and 5 with every move.
        let start = Position::from_sfen("3k5/9/9/9/9/9/9/9/R7K b - 1").unwrap();
        let mut game = Game::new(start);
        play_usi(&mut game, "9i6i 6a5a 6i5i 5a6a");
        play_usi(&mut game, &"5i6i 6a5a 6i5i 5a6a ".repeat(2));
        assert_eq!(game.outcome(&GameRules::default()), None);
        play_usi(&mut game, "5i6i 6a5a 6i5i 5a6a");
        assert_eq!(game.repetition_count(), 4);
        assert_eq!(
            game.outcome(&GameRules::default()),
            Some(GameOutcome { winner: Some(Color::White), reason: GameEnd::PerpetualCheck })
        );
    }

    #[test]
    fn checkmate_has_no_legal_move() {
        let pos = Position::from_sfen("4k4/4G4/4P4/9/9/9/9/9/4K4 w - 1").unwrap();
        let game = Game::new(pos);
        assert_eq!(
            game.outcome(&GameRules::default()),
            Some(GameOutcome { winner: Some(Color::Black), reason: GameEnd::NoLegalMove })
        );
    }

    #[test]
    fn declaration_counts_points() {
        // In camp besides the king: 4 golds, 4 silvers (1 each), dragon and horse (5 each)
        // = 10 pieces, 18 points; the rest comes from pawns in hand.
        let black = |pawns: u32| format!("GGSS1SSGG/+R3K3+B/9/9/9/9/9/9/4k4 b {pawns}P 1");
        assert!(!can_declare_win(&Position::from_sfen(&black(9)).unwrap()), "27 is one short for Black");
        assert!(can_declare_win(&Position::from_sfen(&black(10)).unwrap()));
        let white = Position::from_sfen("4K4/9/9/9/9/9/9/+b3k3+r/ggss1ssgg w 9p 1").unwrap();
        assert!(can_declare_win(&white), "27 points suffice for White");
        let few = Position::from_sfen("4K4/9/9/9/9/9/9/+b3k3+r/ggss1ssg1 w 10p 1").unwrap();
        assert!(!can_declare_win(&few), "only 9 pieces in camp");
    }
}
