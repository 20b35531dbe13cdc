//! A game in progress: the official end rules on top of the move rules. A side wins by
//! capturing the lion or by a try (its lion on the far rank that the opponent cannot
//! capture at once). Repetition: the official rules say that when both players repeat the
//! same moves three times the game is drawn; here the third occurrence of the same
//! position (board, hands, side to move) is a draw, and so is reaching `max_plies`.

use super::movegen::{MoveList, is_legal, legal_moves};
use super::rules::{Color, LION, Move, Position, Status, kind_of};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Win(Color),
    Draw,
}

#[derive(Clone, Debug)]
pub struct Game {
    pub pos: Position,
    pub moves: Vec<Move>,
    /// Keys of every position so far, with the side to move in bit 63.
    history: Vec<u64>,
    outcome: Option<Outcome>,
    /// Plies after which the game is drawn (default 400).
    pub max_plies: usize,
}

fn full_key(p: &Position) -> u64 {
    p.key() | ((p.side as u64) << 63)
}

impl Game {
    pub fn new(pos: Position) -> Game {
        let mut g = Game { pos, moves: vec![], history: vec![full_key(&pos)], outcome: None, max_plies: 400 };
        if pos.status() == Status::Lost {
            g.outcome = Some(Outcome::Win(pos.side.flip()));
        }
        g
    }

    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    pub fn legal_moves(&self) -> MoveList {
        let mut l = MoveList::new();
        if self.outcome.is_none() {
            legal_moves(&self.pos, &mut l);
        }
        l
    }

    /// Plays a move; an error if the game is over or the move is illegal.
    pub fn play(&mut self, m: Move) -> Result<(), String> {
        if self.outcome.is_some() {
            return Err(format!("move {}: the game is already over", m.to_text()));
        }
        if !is_legal(&self.pos, m) {
            return Err(format!("move {} is not legal in {}", m.to_text(), self.pos.to_sfen()));
        }
        let mover = self.pos.side;
        let captured = self.pos.board[m.to()];
        self.pos.do_move(m);
        self.moves.push(m);
        let key = full_key(&self.pos);
        self.history.push(key);
        let lion_taken = captured != 0 && kind_of(captured) == LION;
        if lion_taken || self.pos.status() == Status::Lost {
            self.outcome = Some(Outcome::Win(mover));
        } else if self.history.iter().filter(|&&k| k == key).count() >= 3
            || self.moves.len() >= self.max_plies
        {
            self.outcome = Some(Outcome::Draw);
        }
        Ok(())
    }

    /// How many times the current position has occurred (1 = first time).
    pub fn repetitions(&self) -> usize {
        let key = full_key(&self.pos);
        self.history.iter().filter(|&&k| k == key).count()
    }
}
