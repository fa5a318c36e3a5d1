//! Implementations asksim did not write (SPEC §10): an outside broker or
//! answerer is a process speaking JSON Lines on its stdin and stdout, as
//! `PROTOCOL.md` at the repository root specifies. Sans-IO on the wire: asksim
//! writes one message stamped with the virtual time, the process answers with
//! exactly one line of effects, so a process that keeps no clock of its own is
//! as deterministic under asksim's scheduler as asksim's own state machines.
//!
//! - `common`, `broker_msg`, `answerer_msg`: the lines, as serde types (the
//!   field names are the contract's).
//! - `process`: the other end: a child process in lockstep, with a wall-clock
//!   limit per reply and SIGKILL when asksim is done with it; `peer`: one
//!   exchange and every way it fails; `failure`: how a failed process is
//!   reported.
//! - `broker_view`, `outside_broker`: an outside broker behind the in-process
//!   broker's interface, with the event log derived from what crosses the
//!   boundary (the outside broker writes no events).
//! - `outside_answerer`: an outside answerer in the waterfall.
//! - `actor`: asksim's own state machines behind the protocol (`asksim actor
//!   broker|answerer`).
//!
//! This module never touches the simulator's queue: the simulator's world
//! holds these adapters where it holds its own broker and answerers.

mod actor;
mod answerer_msg;
mod broker_msg;
mod broker_view;
mod common;
mod failure;
mod outside;
mod outside_answerer;
mod outside_broker;
mod peer;
mod process;
#[cfg(test)]
mod tests;

pub use actor::{ActorAnswerer, ActorBroker, serve};
pub use answerer_msg::{AnswererEffect, AnswererInput, AnswererSetup, WireOffer};
pub use broker_msg::{
    BrokerEffect, BrokerInput, BrokerSetup, FromAnswerer, WireLimits, WireRequest, WireRestore,
};
pub use common::{Hello, Life, Line, PROTOCOL_VERSION, Questions, Reply, Role, Stamp};
pub use failure::ProcessFailure;
pub use outside_answerer::OutsideAnswerer;
pub use outside_broker::OutsideBroker;
pub use peer::Peer;
pub use process::{
    Broken, COULD_NOT_START, LINE_BYTES_MAX, Loopback, Process, REPLY_WALL_S_DEFAULT, REPLY_WALL_S_ENV,
    Transport,
};

/// How to reach an outside implementation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A process started from this command: the program and its arguments.
    Process(Vec<String>),
    /// asksim's own broker through the wire's lines, in this process (tests and
    /// benches of the adapters: the same lines, no pipe).
    Loopback,
}

impl Endpoint {
    /// A command line, split as a POSIX shell splits words (no shell runs it).
    pub fn parse(command: &str) -> Result<Endpoint, String> {
        match shlex::split(command) {
            Some(words) if !words.is_empty() => Ok(Endpoint::Process(words)),
            Some(_) => Err("the command is empty".into()),
            None => Err(format!(
                "{command:?} does not split into words (an unclosed quote?)"
            )),
        }
    }

    /// The command as a shell would read it back.
    pub fn shell_text(&self) -> String {
        match self {
            Endpoint::Process(words) => words
                .iter()
                .map(|w| shlex::try_quote(w).map_or_else(|_| w.clone(), |q| q.into_owned()))
                .collect::<Vec<_>>()
                .join(" "),
            Endpoint::Loopback => "(asksim's broker over the wire, in process)".into(),
        }
    }

    /// Connects: starts the process (or the loopback) as `who`.
    pub fn connect(&self, who: String) -> Result<Peer, Box<ProcessFailure>> {
        let command = self.shell_text();
        let transport: Box<dyn Transport> = match self {
            Endpoint::Process(words) => match Process::start(words) {
                Ok(process) => Box::new(process),
                Err(broken) => {
                    return Err(Box::new(ProcessFailure {
                        who,
                        command,
                        reason: broken.reason,
                        sent: None,
                        line: None,
                        stderr: String::new(),
                    }));
                }
            },
            Endpoint::Loopback => {
                let mut broker = ActorBroker::new();
                Box::new(Loopback(Box::new(move |line| broker.handle_line(line))))
            }
        };
        Ok(Peer::new(transport, who, command))
    }
}
