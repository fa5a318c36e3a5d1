//! The hunting room: many runs of one scenario, looking for a failure and for
//! the smallest way to show it. It starts judged runs and folds their summaries;
//! it adds no verdict of its own.
//!
//! - `seeds`: seed ranges and the shard rule (`--shard K/N`): which seeds a
//!   share of a sweep runs.
//! - `sweep`: one scenario under many seeds, in parallel.
//! - `shard`: the JSON Lines a shard writes for `merge`.
//! - `merge`: shard files folded into the report of one sweep.
//! - `explore`: every delivery order of a small scenario (`explore --all`).
//! - `shrink`: a failing scenario reduced to a 1-minimal one that fails the same
//!   way.
//! - `replay`: a log folded into the projection, listed and re-checked.

pub mod explore;
pub mod merge;
pub mod replay;
pub mod seeds;
pub mod shard;
pub mod shrink;
pub mod sweep;
