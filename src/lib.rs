//! asksim: a reference runtime of the `ask_user_question` tool and the
//! `userQuestions` seam behind it, and a deterministic simulator that drives it.
//!
//! Data flows one way: scenario → engine → agents → broker → answerers → events →
//! log / projection / judge → what a person sees.
//!
//! ```
//! use asksim::scenario::{self, Clock};
//! use asksim::sim;
//!
//! let text = r#"{
//!   "name": "one-question",
//!   "tool": { "mode": "timed", "timeout": 30 },
//!   "answerers": [ { "name": "web", "accepts": "all", "latency": 2.0, "answer": "recommended" } ],
//!   "agents": [ { "name": "root", "script": [
//!     { "ask": { "questions": [ { "id": "go", "question": "Proceed?", "header": "Confirm",
//!                                 "options": [ { "label": "Yes (Recommended)" }, { "label": "No" } ] } ] } } ] } ],
//!   "expect": { "counts": { "answered": 1 } }
//! }"#;
//! let scenario = scenario::parse("one-question.json", text).unwrap();
//! let output = sim::run(&scenario, 7, Clock::Virtual).unwrap();
//! let summary = sim::summarise(&scenario, "one-question.json", &output);
//! assert!(summary.passed());
//! assert_eq!(summary.outcomes.answered, 1);
//! assert_eq!(output.virtual_s, 2.0);
//! ```
//!
//! # Layout
//!
//! - [`tool`]: the model-facing tool, pure data and rules: the plugin row, the
//!   frozen legacy definition with its own argument walk, the timed one and its
//!   walk, the limits of SPEC §2.3 (stated once for both tools), result
//!   shapes and messages, answer-batch validation.
//! - [`policy`]: answerer policies as data (what scenarios say an answerer does).
//! - [`protocol`]: every message between actors and the types they carry;
//!   `text`: the shared string of every name and callId in them;
//!   `final_result`: an agent's final result ([`FinalResult`]), kept as its
//!   parts until it is read.
//! - `effect`: what a handler may do (send, timers, record, spawn, die).
//! - `broker`: the `userQuestions` seam: identity, waterfall, windows, holds,
//!   the pending registry, exactly-once settlement.
//! - `agent`: the callers: numbered calls, arguments first, turns, user
//!   messages, and the scenario script an agent runs.
//! - [`answerer`]: answerers as sans-IO state machines ([`Answerer`]): the
//!   built-in one acting on a policy, and the program's own, which run
//!   unchanged in the simulator ([`Answerers`]) and on the actor runtime
//!   ([`AnswererSlot::Machine`]).
//! - `actors`: the same three as ractor actors on tokio: the library
//!   ([`Runtime`]) and real-clock runs.
//! - [`limits`]: the runtime's limits, named once; `trim`: how a burst's tables
//!   and queues give their memory back; [`dense`]: records in place by a dense
//!   number; `prefetch`: cache hints (the simulator's one `unsafe` for speed).
//! - [`event`], [`record`], [`log`]: the recorded event stream, its recorder
//!   (trace hash, projection, log file as it happens) and the JSON Lines log;
//!   `journal`: the recorder behind a queue, its work on a thread of its own
//!   (the actor runtime's, and a large simulated run's); `kept`: the events a
//!   recorder keeps, in chunks never moved once full
//!   ([`record::KeptEvents`]).
//! - [`projection`]: the `userQuestions` projection: the pure fold from log
//!   events to every question's state, and its snapshot cache; [`keyed`]: its
//!   maps by callId and name, hashed for lookups and sorted for every read in
//!   order.
//! - [`restart`]: what a restart after a process loss rebuilds from the log.
//! - [`durable`]: the log on disk as it happens (SPEC §4.1): sync policies,
//!   the write-ahead gate, recovery after a real crash, compaction.
//! - [`scenario`]: the scenario file format of SPEC §5, pure data and validation.
//! - `seed`: the streams derived from a run's one seed.
//! - [`sim`]: the simulator, in four rooms along the data path, each importing
//!   only the rooms before it: [`sim::engine`] runs one run (the delivery queue
//!   and its strategies, the simulated world, the driver for both clocks);
//!   [`sim::judge`] judges it (invariants, protocol conformance, race coverage,
//!   expectations, the summary); [`sim::show`] shows it (report, timeline, Chrome
//!   trace); [`sim::hunt`] hunts over many runs (sweeps, shards and merge,
//!   `explore --all`, shrink, replay). The items a user needs are re-exported
//!   flat from [`sim`].
//! - [`wire`]: implementations asksim did not write: an outside broker or
//!   answerer speaking PROTOCOL.md over JSON Lines, behind the same interface
//!   as asksim's own, and asksim's own behind the protocol.
//! - `cli` (feature `cli`, on by default): the `asksim` command line; `main.rs`
//!   only calls `cli::main`. Without it (`default-features = false`) the crate
//!   is the library alone: no clap, indicatif, mimalloc or tracing-subscriber,
//!   and no C compiler needed.

#![warn(missing_docs)]

mod actors;
mod agent;
pub mod answerer;
mod bits;
mod broker;
#[cfg(feature = "cli")]
pub mod cli;
pub mod dense;
pub mod durable;
mod effect;
pub mod event;
mod final_result;
mod journal;
mod kept;
pub mod keyed;
pub mod limits;
pub mod log;
mod panics;
pub mod policy;
mod prefetch;
pub mod projection;
pub mod protocol;
pub mod record;
pub mod restart;
pub mod scenario;
mod seed;
pub mod sim;
mod text;
pub mod tool;
mod trim;
pub mod wire;

pub use actors::{
    AgentHandle, AnswererSlot, EventLog, Recovered, ResumedAgent, Runtime, RuntimeConfig, RuntimeCounts,
    StartError, panic_message,
};
pub use answerer::{Answerer, AnswererSetup, Answerers, Replies};
pub use durable::{LogConfig, SyncPolicy};
pub use final_result::{FinalResult, Unasked, Unresolved};
pub use policy::{Accepts, AnswerPolicy, Latency, Policy};
pub use protocol::{AnswererInput, AnswererMsg, Offer, Reply};
pub use tool::{Timeout, ToolConfig};

/// The actor framework the runtime is built on, as asksim uses it: an
/// answerer actor of the waterfall implements [`ractor::Actor`] and is handed
/// in as a [`ractor::ActorRef`]. Re-exported so a program adds only asksim.
pub use ractor;
/// JSON values, as answer batches ([`Reply::Submit`]) and final results carry
/// them. Re-exported so a program adds only asksim.
pub use serde_json;
/// The async runtime the actors run on: `#[asksim::tokio::main(crate =
/// "asksim::tokio")]` starts one, and tokio's paused time drives the library in
/// tests. Re-exported so a program adds only asksim.
pub use tokio;
