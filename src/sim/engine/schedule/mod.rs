//! What is delivered next: the delivery queue (per-pair FIFO channels and
//! timers), the set of what is deliverable at one instant, and the strategies
//! that pick among it. The engine re-exports each as
//! `crate::sim::engine::{queue, ready, strategy}`.
//!
//! - `queue`: the delivery queue: per-pair FIFO channels, timers, what is due.
//! - `fired`: what a queued timer delivers, in 16 bytes for the common timers.
//! - `later`: what is due past the instant at hand, by due time (a radix heap).
//! - `ready`: what is deliverable now, ordered, with rank and select in O(log n).
//! - `timers`: the live timers, an agent's in place by its id.
//! - `strategy`: which tied delivery goes first (random, PCT, FIFO, a schedule).

mod fired;
mod later;
pub mod queue;
pub mod ready;
pub mod strategy;
mod timers;
