//! What bounds a search, and which techniques it uses.

use std::time::Duration;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub depth: Option<i32>,
    pub nodes: Option<u64>,
    /// Hard limit: the search stops when this much time has passed.
    pub time: Option<Duration>,
    /// No new iteration starts after this much time.
    pub soft_time: Option<Duration>,
}

impl Limits {
    pub fn depth(d: i32) -> Limits {
        Limits { depth: Some(d), ..Limits::default() }
    }

    pub fn nodes(n: u64) -> Limits {
        Limits { nodes: Some(n), ..Limits::default() }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchOptions {
    pub null_move: bool,
    pub lmr: bool,
    /// Mate-in-1 detection at every node that is not in check.
    pub mate1: bool,
    /// Entering-king declaration (27-point rule) counts as a win.
    pub declaration: bool,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions { null_move: true, lmr: true, mate1: true, declaration: true }
    }
}
