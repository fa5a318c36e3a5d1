//! Answerers as sans-IO state machines: the seam every answerer of a run goes
//! through, asksim's own policy answerer ([`PolicyAnswerer`]) and yours alike.
//!
//! An [`Answerer`] takes one [`AnswererInput`] at a time (the broker's offer,
//! withdrawal or refusal, or one of its own timers firing) and writes what it
//! does into its [`Replies`]: one of the four [`Reply`]s to an offer (accept,
//! decline, hold, submit), timers to start or cancel, and, as a scheduled fault,
//! its own death. `Replies::now` gives the time on the run's clock. It never
//! reads a clock, sleeps, spawns a task or touches a channel: whoever runs it
//! delivers its inputs and carries out its replies. Two executors do:
//!
//! - the **simulator**, on the virtual clock, through its delivery queue: every
//!   reply and every timer is a delivery the scheduler orders, so a run is a
//!   function of the scenario and the seed, and `sweep`, `explore --all` and
//!   `shrink` explore and reduce the orders your answerer takes part in
//!   ([`Answerers`] names which scenario answerers are yours);
//! - the **actor runtime**, on the real clock: the runtime runs it in an actor
//!   of its own ([`crate::AnswererSlot::Machine`]), its timers on tokio.
//!
//! So the same answerer is tested under every order of a tie, then deployed. An
//! answerer outside this process (PROTOCOL.md) is this interface over a pipe:
//! one input line, one line of replies.
//!
//! Determinism: an answerer that draws random numbers draws them from the seed
//! it is given ([`AnswererSetup::seed`]), and keeps no clock but `Replies::now`.
//! Then the same seed gives the same run, byte for byte.

mod policy;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

pub use crate::protocol::{AnswererInput, AnswererMsg, Reply, TimerId};
pub use policy::PolicyAnswerer;

use crate::effect::Out;
use crate::policy::Policy;
use crate::protocol::{AnswererIx, Envelope, Ticket};
use crate::scenario::Scenario;

/// An answerer as a sans-IO state machine (see the module's documentation).
///
/// ```
/// use asksim::answerer::{Answerer, AnswererInput, AnswererMsg, Replies, Reply};
/// use asksim::serde_json::json;
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// /// Accepts every offer; answers the first option of each question 4 s later.
/// struct FirstOption {
///     due: std::collections::BTreeMap<u64, asksim::protocol::Offer>,
/// }
///
/// impl Answerer for FirstOption {
///     fn handle(&mut self, input: AnswererInput, out: &mut Replies<'_>) {
///         match input {
///             AnswererInput::Broker(AnswererMsg::Offer(offer)) => {
///                 out.reply(offer.ticket, Reply::Accept);
///                 out.start_timer(offer.ticket, Duration::from_secs(4));
///                 self.due.insert(offer.ticket, *offer);
///             }
///             AnswererInput::Timer(ticket) => {
///                 if let Some(offer) = self.due.remove(&ticket) {
///                     let batch: Vec<_> = (offer.questions.iter())
///                         .map(|q| json!({"id": q.id(), "selected": [q.option(0).map(|o| o.label)]}))
///                         .collect();
///                     out.reply(ticket, Reply::Submit(Arc::new(batch.into())));
///                 }
///             }
///             AnswererInput::Broker(AnswererMsg::Withdraw { ticket }) => {
///                 self.due.remove(&ticket);
///                 out.cancel_timer(ticket);
///             }
///             AnswererInput::Broker(AnswererMsg::Refused { .. }) => {}
///         }
///     }
/// }
/// ```
pub trait Answerer: Send + 'static {
    /// Called once when the answerer starts: at the run's start, and, for a
    /// fresh one, after each restart (SPEC §3.9: answerers start again from
    /// their configuration). `out.now()` says when. By default it does nothing.
    fn start(&mut self, out: &mut Replies<'_>) {
        let _ = out;
    }

    /// Handles one input at `out.now()`, writing what it does into `out`.
    fn handle(&mut self, input: AnswererInput, out: &mut Replies<'_>);
}

/// What an answerer does with one input: its replies to offers, its timers and
/// its death, in the order it wrote them, carried out by its executor.
#[derive(Debug)]
pub struct Replies<'a> {
    out: &'a mut Out,
    index: AnswererIx,
}

impl<'a> Replies<'a> {
    /// Replies of the answerer at `index` of the waterfall, into `out`.
    pub(crate) fn new(out: &'a mut Out, index: AnswererIx) -> Replies<'a> {
        Replies { out, index }
    }

    /// The time on the run's clock, from its start (virtual or real).
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.out.now())
    }

    /// The time in nanoseconds, as the executors count it.
    pub(crate) fn now_nanos(&self) -> u64 {
        self.out.now()
    }

    /// The answerer's place in the waterfall, from 0.
    pub fn index(&self) -> AnswererIx {
        self.index
    }

    /// Replies to the offer `ticket`. The broker judges it: a reply the protocol
    /// does not allow (a hold by a non-owner, a submit after the call settled) is
    /// refused back as an [`AnswererMsg::Refused`] and logged, never lost.
    pub fn reply(&mut self, ticket: Ticket, reply: Reply) {
        self.out.tell_broker(reply.into_broker(ticket, self.index));
    }

    /// Starts timer `id`: [`AnswererInput::Timer`] with that id comes back after
    /// `after`. Ids are the answerer's own, unique among its running timers.
    pub fn start_timer(&mut self, id: TimerId, after: Duration) {
        let fired = Envelope::Answerer(self.index, AnswererInput::Timer(id));
        self.out.timer(id, whole_nanos(after), fired);
    }

    /// Starts a fault timer: like [`Replies::start_timer`], but it keeps no run
    /// going (SPEC §5 "faults are not work"), for a crash scheduled ahead.
    pub fn start_fault_timer(&mut self, id: TimerId, after: Duration) {
        let fired = Envelope::Answerer(self.index, AnswererInput::Timer(id));
        self.out.fault_timer(id, whole_nanos(after), fired);
    }

    /// Cancels timer `id`, if it has not fired.
    pub fn cancel_timer(&mut self, id: TimerId) {
        self.out.cancel(id);
    }

    /// The answerer dies (a fault): it gets nothing more, and the broker hears
    /// of its death behind everything it sent before.
    pub fn die(&mut self) {
        self.out.die();
    }
}

/// A duration in nanoseconds, saturating (no run reaches past `u64` ns).
fn whole_nanos(after: Duration) -> u64 {
    u64::try_from(after.as_nanos()).unwrap_or(u64::MAX)
}

/// What an answerer is made from: its place and name in the scenario, the seed
/// of its own random draws, and the scenario row it replaces.
#[derive(Clone, Copy, Debug)]
pub struct AnswererSetup<'a> {
    /// Its place in the waterfall, from 0.
    pub index: AnswererIx,
    /// Its name in the scenario.
    pub name: &'a str,
    /// The seed of its own random draws: derived from the run's seed and its
    /// place, the same in every life of one run.
    pub seed: u64,
    /// The scenario's row for it (its `accepts`, latencies, `answer`, faults).
    pub policy: &'a Policy,
}

/// Makes a fresh answerer for a setup: at a run's start and after each restart.
pub type MakeAnswerer = dyn Fn(&AnswererSetup) -> Box<dyn Answerer> + Send + Sync;

/// Which answerers of a scenario are the program's own: each by its name in the
/// scenario, with what makes it. Every other answerer is the scenario's
/// [`PolicyAnswerer`]. Cheap to clone (the makers are shared), so the same set
/// runs under every seed of a sweep and every candidate of a shrink.
///
/// A scenario row named here keeps its place in the waterfall; its policy is
/// the setup's [`AnswererSetup::policy`], which the maker may read or ignore.
/// So one scenario file runs with a policy stand-in from the command line and
/// with the real answerer from a test.
#[derive(Clone, Default)]
pub struct Answerers {
    makers: BTreeMap<String, Arc<MakeAnswerer>>,
}

impl std::fmt::Debug for Answerers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.makers.keys()).finish()
    }
}

impl Answerers {
    /// No answerer of the program's own: every answerer is the scenario's.
    pub fn new() -> Answerers {
        Answerers::default()
    }

    /// These answerers, and the scenario answerer `name` made by `make`.
    pub fn with(
        mut self,
        name: &str,
        make: impl Fn(&AnswererSetup) -> Box<dyn Answerer> + Send + Sync + 'static,
    ) -> Answerers {
        self.makers.insert(name.to_owned(), Arc::new(make));
        self
    }

    /// Whether the scenario answerer `name` is the program's own.
    pub fn contains(&self, name: &str) -> bool {
        self.makers.contains_key(name)
    }

    /// Whether no answerer is the program's own.
    pub fn is_empty(&self) -> bool {
        self.makers.is_empty()
    }

    /// Every name given, in order: none must be a typo.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.makers.keys().map(String::as_str)
    }

    /// Checks that every name given is an answerer of `scenario`.
    pub fn check(&self, scenario: &Scenario) -> Result<(), String> {
        match self
            .names()
            .find(|name| !scenario.answerers.iter().any(|a| a.name == *name))
        {
            Some(name) => Err(format!(
                "no answerer {name:?} in scenario {:?} to replace with the program's own",
                scenario.name
            )),
            None => Ok(()),
        }
    }

    /// The answerer for `setup`: the program's own if its name is given, else
    /// the built-in one acting on the scenario's policy.
    pub fn make(&self, setup: &AnswererSetup) -> Box<dyn Answerer> {
        match self.makers.get(setup.name) {
            Some(make) => make(setup),
            None => Box::new(PolicyAnswerer::new(
                setup.index,
                setup.name.into(),
                setup.policy.clone(),
                setup.seed,
            )),
        }
    }
}
