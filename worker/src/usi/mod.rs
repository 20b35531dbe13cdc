//! Games between USI engine processes: `client` drives one process over pipes, `limit` is
//! what bounds a move, `game` plays one game under the rules and the clock; `engines` are
//! the external engines a worker was given by name. `keima match`
//! and the worker's match shards against an external engine both play through here.

pub mod client;
pub mod engines;
pub mod game;
pub mod limit;
