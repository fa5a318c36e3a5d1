//! One outside process as an adapter speaks to it: a line out (stamped with the
//! virtual time), its one reply parsed, and every way that can go wrong turned
//! into a [`ProcessFailure`] that names the process, what asksim wrote, the
//! line at fault and the tail of its stderr. `RUST_LOG=asksim::wire=trace`
//! shows every line both ways.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::common::{Line, Reply, Stamp};
use super::failure::ProcessFailure;
use super::process::Transport;
use crate::protocol::Nanos;

/// The process and how reports name it.
pub struct Peer {
    transport: Box<dyn Transport>,
    who: String,
    command: String,
    sent: String,
    /// Timers due at once started in a row ([`Peer::chain_zero_timers`]).
    zero_chain: usize,
}

/// How many timers due at once may follow each other, each started by the
/// last one's firing, before the process is judged to loop: far more than any
/// protocol step needs, few enough to fail in seconds.
pub const ZERO_TIMER_CHAIN_MAX: usize = 100_000;

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("who", &self.who)
            .finish_non_exhaustive()
    }
}

/// A reply, with the line it came in.
pub struct Answered<E> {
    /// The parsed reply.
    pub reply: Reply<E>,
    /// Its text.
    pub line: String,
}

impl Peer {
    /// The process `who` (`broker`, `answerer NAME`), started as `command`.
    pub fn new(transport: Box<dyn Transport>, who: String, command: String) -> Peer {
        Peer {
            transport,
            who,
            command,
            sent: String::new(),
            zero_chain: 0,
        }
    }

    /// Counts the timers due at once (`after_ns` 0) that a reply started, after
    /// an input that was (`fired`) or was not the firing of one, and fails once
    /// `ZERO_TIMER_CHAIN_MAX` (100,000) follow each other, each started by the last
    /// one's firing with nothing else in between: the clock never moves again
    /// and no event is recorded, so no limit of the run would ever stop it.
    pub fn chain_zero_timers(&mut self, fired: bool, started: usize) -> Result<(), String> {
        self.zero_chain = match fired && started > 0 {
            true => self.zero_chain + started,
            false => started,
        };
        match self.zero_chain > ZERO_TIMER_CHAIN_MAX {
            true => Err(format!(
                "a loop of timers: {ZERO_TIMER_CHAIN_MAX} timers due at once, each started when the last one fired, \
                 with nothing else in between (the clock cannot move on)"
            )),
            false => Ok(()),
        }
    }

    /// Writes `msg` at `now` and reads the one line that answers it.
    pub fn exchange<I: Serialize, E: DeserializeOwned>(
        &mut self,
        now: Nanos,
        msg: I,
    ) -> Result<Answered<E>, Box<ProcessFailure>> {
        let line = Line {
            stamp: Stamp::at(now),
            msg,
        };
        self.sent = serde_json::to_string(&line).expect("asksim's lines serialise");
        tracing::trace!(target: "asksim::wire", "{} > {}", self.who, self.sent);
        let reply = match self.transport.exchange(&self.sent) {
            Ok(reply) => reply,
            Err(broken) => return Err(self.failure(broken.reason, broken.line)),
        };
        tracing::trace!(target: "asksim::wire", "{} < {reply}", self.who);
        match serde_json::from_str(&reply) {
            Ok(parsed) => Ok(Answered {
                reply: parsed,
                line: reply,
            }),
            Err(error) => Err(self.failure(format!("a line that is not the protocol: {error}"), Some(reply))),
        }
    }

    /// The run fails: `reason`, about the reply `line` to what asksim wrote last.
    pub fn failure(&mut self, reason: String, line: Option<String>) -> Box<ProcessFailure> {
        Box::new(ProcessFailure {
            who: self.who.clone(),
            command: self.command.clone(),
            reason,
            sent: (!self.sent.is_empty()).then(|| self.sent.clone()),
            line,
            stderr: self.transport.stderr_tail(),
        })
    }
}
