//! Dobutsu shogi rules: 3 files × 4 ranks, lion/giraffe/elephant/chick(hen), drops,
//! do/undo, game end (lion capture, try), and the compact position key.
//!
//! Squares: `sq = rank * 3 + file`, rank 0 is the top row (written rank "1", White's home
//! rank), file 0 is file "a" (the left column seen from Black). Black (sente, first
//! player) starts at the bottom and moves up (towards rank 0).

/// Side: Black (sente, first player) or White (gote).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Color {
    Black = 0,
    White = 1,
}

impl Color {
    pub fn flip(self) -> Color {
        match self {
            Color::Black => Color::White,
            Color::White => Color::Black,
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Piece kinds. On the board a cell is `kind | color << 3` (0 = empty).
pub const CHICK: u8 = 1;
pub const ELEPHANT: u8 = 2;
pub const GIRAFFE: u8 = 3;
pub const LION: u8 = 4;
pub const HEN: u8 = 5;
pub const WHITE_BIT: u8 = 8;
pub const EMPTY: u8 = 0;

/// Pieces that can be in hand, in hand order (index 0..3): chick, elephant, giraffe.
pub const HAND_KINDS: [u8; 3] = [CHICK, ELEPHANT, GIRAFFE];

pub const SQUARES: usize = 12;

pub fn kind_of(cell: u8) -> u8 {
    cell & 7
}
pub fn color_of(cell: u8) -> Color {
    if cell & WHITE_BIT != 0 { Color::White } else { Color::Black }
}
pub fn make_cell(kind: u8, c: Color) -> u8 {
    kind | if c == Color::White { WHITE_BIT } else { 0 }
}
/// Hand index of a captured kind (a hen goes to hand as a chick).
pub fn hand_index(kind: u8) -> usize {
    match kind {
        CHICK | HEN => 0,
        ELEPHANT => 1,
        GIRAFFE => 2,
        _ => panic!("kind {kind} cannot be held in hand"),
    }
}
pub fn rank_of(sq: usize) -> usize {
    sq / 3
}
pub fn file_of(sq: usize) -> usize {
    sq % 3
}
/// The rank a side's lion must reach for a try, and where its chicks promote.
pub fn far_rank(c: Color) -> usize {
    match c {
        Color::Black => 0,
        Color::White => 3,
    }
}

/// Steps (rank delta, file delta) of a kind for Black; White's are mirrored in rank.
fn steps(kind: u8) -> &'static [(i8, i8)] {
    const L: [(i8, i8); 8] = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)];
    const G: [(i8, i8); 4] = [(-1, 0), (1, 0), (0, -1), (0, 1)];
    const E: [(i8, i8); 4] = [(-1, -1), (-1, 1), (1, -1), (1, 1)];
    const C: [(i8, i8); 1] = [(-1, 0)];
    const H: [(i8, i8); 6] = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, 0)];
    match kind {
        LION => &L,
        GIRAFFE => &G,
        ELEPHANT => &E,
        CHICK => &C,
        HEN => &H,
        _ => &[],
    }
}

/// `ATTACKS[cell][sq]`: bit set of squares a piece `cell` on `sq` attacks.
pub static ATTACKS: [[u16; SQUARES]; 16] = build_attacks();

const fn build_attacks() -> [[u16; SQUARES]; 16] {
    let mut t = [[0u16; SQUARES]; 16];
    let mut cell = 1;
    while cell < 16 {
        let kind = (cell & 7) as u8;
        let white = cell & 8 != 0;
        let st: &[(i8, i8)] = match kind {
            LION => &[(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)],
            GIRAFFE => &[(-1, 0), (1, 0), (0, -1), (0, 1)],
            ELEPHANT => &[(-1, -1), (-1, 1), (1, -1), (1, 1)],
            CHICK => &[(-1, 0)],
            HEN => &[(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, 0)],
            _ => &[],
        };
        let mut sq = 0;
        while sq < SQUARES {
            let r = (sq / 3) as i8;
            let f = (sq % 3) as i8;
            let mut i = 0;
            while i < st.len() {
                let dr = if white { -st[i].0 } else { st[i].0 };
                let nr = r + dr;
                let nf = f + st[i].1;
                if nr >= 0 && nr < 4 && nf >= 0 && nf < 3 {
                    t[cell][sq] |= 1 << (nr as usize * 3 + nf as usize);
                }
                i += 1;
            }
            sq += 1;
        }
        cell += 1;
    }
    t
}

/// Kept for the slow reference mover in tests and for documentation of the moves.
pub fn black_steps(kind: u8) -> &'static [(i8, i8)] {
    steps(kind)
}

/// A move: `from` 0..12 is a board square, 12 + hand index (12 chick, 13 elephant,
/// 14 giraffe) is a drop; `to` is the destination. Promotion is not stored: a chick that
/// reaches the far rank always promotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Move(pub u8, pub u8);

impl Move {
    pub fn board(from: usize, to: usize) -> Move {
        Move(from as u8, to as u8)
    }
    pub fn drop(hand_idx: usize, to: usize) -> Move {
        Move(12 + hand_idx as u8, to as u8)
    }
    pub fn is_drop(self) -> bool {
        self.0 >= 12
    }
    pub fn from(self) -> usize {
        self.0 as usize
    }
    pub fn to(self) -> usize {
        self.1 as usize
    }
    /// Hand index of a drop (0 chick, 1 elephant, 2 giraffe).
    pub fn drop_index(self) -> usize {
        self.0 as usize - 12
    }
}

/// What `undo_move` needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Undo {
    pub captured: u8,
    pub promoted: bool,
}

/// A position: board, hands, side to move, ply number (1 at the start).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Position {
    pub board: [u8; SQUARES],
    /// `hands[color][hand index]`.
    pub hands: [[u8; 3]; 2],
    pub side: Color,
    pub ply: u32,
}

/// How a position stands for the side to move before it moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The game goes on.
    Ongoing,
    /// The side to move has lost: its lion was captured, or the opponent's lion stands on
    /// the side to move's home rank (a try) and cannot be captured now.
    Lost,
}

impl Position {
    /// The standard start: White giraffe a1, lion b1, elephant c1, chick b2; Black chick
    /// b3, elephant a4, lion b4, giraffe c4; Black to move.
    pub fn startpos() -> Position {
        let w = WHITE_BIT;
        Position {
            board: [
                GIRAFFE | w,
                LION | w,
                ELEPHANT | w,
                EMPTY,
                CHICK | w,
                EMPTY,
                EMPTY,
                CHICK,
                EMPTY,
                ELEPHANT,
                LION,
                GIRAFFE,
            ],
            hands: [[0; 3]; 2],
            side: Color::Black,
            ply: 1,
        }
    }

    pub fn lion_square(&self, c: Color) -> Option<usize> {
        let want = make_cell(LION, c);
        self.board.iter().position(|&x| x == want)
    }

    /// Squares attacked by side `c`.
    pub fn attacks_by(&self, c: Color) -> u16 {
        let mut a = 0;
        for sq in 0..SQUARES {
            let x = self.board[sq];
            if x != EMPTY && color_of(x) == c {
                a |= ATTACKS[x as usize][sq];
            }
        }
        a
    }

    /// True if the side to move can capture the opponent's lion now.
    pub fn can_capture_lion(&self) -> bool {
        match self.lion_square(self.side.flip()) {
            Some(l) => self.attacks_by(self.side) & (1 << l) != 0,
            None => false,
        }
    }

    /// Game-end check for the side to move (before it moves).
    pub fn status(&self) -> Status {
        let us = self.side;
        let them = us.flip();
        if self.lion_square(us).is_none() {
            return Status::Lost;
        }
        match self.lion_square(them) {
            None => Status::Ongoing, // cannot happen in a game: we would have won already
            Some(l) => {
                if rank_of(l) == far_rank(them) && self.attacks_by(us) & (1 << l) == 0 {
                    Status::Lost
                } else {
                    Status::Ongoing
                }
            }
        }
    }

    /// Plays `m` (assumed legal for the side to move).
    pub fn do_move(&mut self, m: Move) -> Undo {
        let us = self.side;
        let to = m.to();
        let captured = self.board[to];
        if captured != EMPTY {
            let k = kind_of(captured);
            if k != LION {
                self.hands[us.index()][hand_index(k)] += 1;
            }
        }
        let mut promoted = false;
        if m.is_drop() {
            let i = m.drop_index();
            self.hands[us.index()][i] -= 1;
            self.board[to] = make_cell(HAND_KINDS[i], us);
        } else {
            let mut cell = self.board[m.from()];
            self.board[m.from()] = EMPTY;
            if kind_of(cell) == CHICK && rank_of(to) == far_rank(us) {
                cell = make_cell(HEN, us);
                promoted = true;
            }
            self.board[to] = cell;
        }
        self.side = them_of(us);
        self.ply += 1;
        Undo { captured, promoted }
    }

    pub fn undo_move(&mut self, m: Move, u: Undo) {
        self.side = self.side.flip();
        self.ply -= 1;
        let us = self.side;
        let to = m.to();
        if m.is_drop() {
            self.hands[us.index()][m.drop_index()] += 1;
        } else {
            let mut cell = self.board[to];
            if u.promoted {
                cell = make_cell(CHICK, us);
            }
            self.board[m.from()] = cell;
        }
        self.board[to] = u.captured;
        if u.captured != EMPTY && kind_of(u.captured) != LION {
            self.hands[us.index()][hand_index(kind_of(u.captured))] -= 1;
        }
    }

    /// The same position seen from the other side: board turned 180°, colours swapped.
    pub fn flipped(&self) -> Position {
        let mut p = *self;
        for sq in 0..SQUARES {
            let x = self.board[SQUARES - 1 - sq];
            p.board[sq] = if x == EMPTY { EMPTY } else { x ^ WHITE_BIT };
        }
        p.hands = [self.hands[1], self.hands[0]];
        p.side = self.side.flip();
        p
    }

    /// Compact key of the position as seen by the side to move (normalised so that the
    /// side to move is Black): 4 bits per square (48 bits) + Black's hand (2 bits per
    /// kind) + White's hand (2 bits per kind). Never 0 (lions are on board).
    pub fn key(&self) -> u64 {
        let p = if self.side == Color::White { self.flipped() } else { *self };
        let mut k = 0u64;
        for sq in 0..SQUARES {
            k |= (p.board[sq] as u64) << (4 * sq);
        }
        for i in 0..3 {
            k |= (p.hands[0][i] as u64) << (48 + 2 * i);
            k |= (p.hands[1][i] as u64) << (54 + 2 * i);
        }
        k
    }

    /// The position of a key, Black to move (ply 1).
    pub fn from_key(k: u64) -> Position {
        let mut board = [0u8; SQUARES];
        for (sq, cell) in board.iter_mut().enumerate() {
            *cell = ((k >> (4 * sq)) & 15) as u8;
        }
        let mut hands = [[0u8; 3]; 2];
        for i in 0..3 {
            hands[0][i] = ((k >> (48 + 2 * i)) & 3) as u8;
            hands[1][i] = ((k >> (54 + 2 * i)) & 3) as u8;
        }
        Position { board, hands, side: Color::Black, ply: 1 }
    }

    /// Checks the piece counts (two of each kind in all, one lion per side) and cell codes.
    pub fn validate(&self) -> Result<(), String> {
        let mut count = [0u8; 3];
        let mut lions = [0u8; 2];
        for (sq, &x) in self.board.iter().enumerate() {
            if x == EMPTY {
                continue;
            }
            let k = kind_of(x);
            if k == 0 || k > HEN || (x & !(7 | WHITE_BIT)) != 0 {
                return Err(format!("square {sq}: bad cell code {x}"));
            }
            if k == LION {
                lions[color_of(x).index()] += 1;
            } else {
                count[hand_index(k)] += 1;
            }
        }
        for c in 0..2 {
            for i in 0..3 {
                count[i] += self.hands[c][i];
            }
        }
        if lions != [1, 1] {
            return Err(format!("each side needs exactly one lion (found {lions:?})"));
        }
        for (i, &n) in count.iter().enumerate() {
            if n > 2 {
                return Err(format!("{} {}s in all; at most 2", n, ["chick", "elephant", "giraffe"][i]));
            }
        }
        Ok(())
    }
}

fn them_of(c: Color) -> Color {
    c.flip()
}
