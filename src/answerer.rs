//! Answerers: the actors that answer questions, and the protocol any answerer
//! speaks with the broker.
//!
//! The protocol: the broker sends [`AnswererMsg::Offer`]; the answerer replies
//! through the offer's [`Reply`] with `accept` or `decline`; once it owns the
//! request it may `hold` the window and must `submit` one batch. The broker may
//! send [`AnswererMsg::Withdraw`] (stop working on it) and
//! [`AnswererMsg::Refused`] (something it sent was not taken, with the reason). A
//! user's own actor of message type [`AnswererMsg`] can take part in the waterfall;
//! the runtime links it to the broker, whose supervision sees it die (fail-over).
//!
//! [`AnswererActor`] is the built-in answerer, driven by a [`Policy`]: which
//! requests it accepts, its offer latency, its answer latency, its choice, an
//! optional hold and faults. Its random draws come from its own seeded stream.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::Value;

use crate::broker::BrokerMsg;
use crate::policy::Policy;
use crate::sched::{Jitter, Sched, Timer, derive_seed};
use crate::tool::{Question, Schema};

/// One request offered to an answerer. Only keyed (timed) requests carry a callId.
#[derive(Clone, Debug)]
pub struct Offer {
    /// The broker's handle on the request; every reply names it.
    pub ticket: u64,
    /// The callId, for keyed requests only.
    pub call_id: Option<String>,
    /// The calling agent.
    pub agent: String,
    /// The definition the call came through.
    pub schema: Schema,
    /// The questions.
    pub questions: Arc<[Question]>,
    /// How to reply to the broker.
    pub reply: Reply,
}

/// An answerer's way back to the broker for one offer.
#[derive(Clone, Debug)]
pub struct Reply {
    pub(crate) broker: ActorRef<BrokerMsg>,
    pub(crate) ticket: u64,
    pub(crate) answerer: usize,
}

impl Reply {
    /// The message that accepts the offer: the sender owns the request.
    pub fn accept(&self) -> BrokerMsg {
        BrokerMsg::Accept {
            ticket: self.ticket,
            answerer: self.answerer,
        }
    }
    /// The message that declines it: the broker offers the next answerer.
    pub fn decline(&self) -> BrokerMsg {
        BrokerMsg::Decline {
            ticket: self.ticket,
            answerer: self.answerer,
        }
    }
    /// The message that holds the window open (owner only, timed calls in their window).
    pub fn hold(&self) -> BrokerMsg {
        BrokerMsg::Hold {
            ticket: self.ticket,
            answerer: self.answerer,
        }
    }
    /// The message that submits one answer batch (owner only).
    pub fn submit(&self, batch: Value) -> BrokerMsg {
        BrokerMsg::Submit {
            ticket: self.ticket,
            answerer: self.answerer,
            batch,
        }
    }
    /// The broker to send them to.
    pub fn broker(&self) -> &ActorRef<BrokerMsg> {
        &self.broker
    }
}

/// Messages an answerer receives.
#[derive(Debug)]
pub enum AnswererMsg {
    /// A request is offered.
    Offer(Offer),
    /// Stop working on this request: it settled, was cancelled, or the offer timed out.
    Withdraw {
        /// The request.
        ticket: u64,
    },
    /// Something this answerer sent was refused.
    Refused {
        /// The request.
        ticket: u64,
        /// `"submit"` or `"hold"`.
        what: String,
        /// Why.
        reason: String,
    },
    /// Built-in: the offer latency elapsed; decide.
    Decide(u64),
    /// Built-in: the hold delay elapsed.
    HoldNow(u64),
    /// Built-in: the answer latency elapsed; submit.
    SubmitNow(u64),
    /// Built-in: a scheduled fault; die now.
    Crash,
}

/// The built-in policy-driven answerer.
pub struct AnswererActor;

/// What the built-in answerer starts from.
pub struct AnswererArgs {
    /// Its name.
    pub name: String,
    /// Its behaviour.
    pub policy: Policy,
    /// Its stream seed (derived from the run's seed).
    pub seed: u64,
    /// The run's clock.
    pub sched: Sched,
    /// Jitter on its messages.
    pub jitter: Jitter,
}

/// The built-in answerer's state.
pub struct AnswererState {
    name: String,
    policy: Policy,
    rng: StdRng,
    sched: Sched,
    jitter: Jitter,
    offers: BTreeMap<u64, Work>,
    accepts: u64,
}

struct Work {
    offer: Offer,
    timers: Vec<Timer>,
}

impl Actor for AnswererActor {
    type Msg = AnswererMsg;
    type State = AnswererState;
    type Arguments = AnswererArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<AnswererMsg>,
        args: AnswererArgs,
    ) -> Result<AnswererState, ActorProcessingErr> {
        if let Some(at_s) = args.policy.crash_at_s {
            // A crash time already past (after a restart) does not fire again.
            let now_s = args.sched.now_s();
            if at_s >= now_s {
                let me = myself.clone();
                args.sched.after(Duration::from_secs_f64(at_s - now_s), move || {
                    let _ = me.send_message(AnswererMsg::Crash);
                });
            }
        }
        Ok(AnswererState {
            name: args.name,
            policy: args.policy,
            rng: StdRng::seed_from_u64(derive_seed(args.seed, 0)),
            sched: args.sched,
            jitter: args.jitter,
            offers: BTreeMap::new(),
            accepts: 0,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<AnswererMsg>,
        msg: AnswererMsg,
        state: &mut AnswererState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            AnswererMsg::Offer(offer) => {
                let ticket = offer.ticket;
                let mut work = Work {
                    offer,
                    timers: Vec::new(),
                };
                let delay = state.policy.offer_latency.draw(&mut state.rng);
                if let Some(delay) = delay.filter(|d| !d.is_zero()) {
                    work.timers
                        .push(state.timer(&myself, delay, AnswererMsg::Decide(ticket)));
                }
                state.offers.insert(ticket, work);
                // No latency: decide now rather than through a message to itself.
                if delay.is_some_and(|d| d.is_zero()) {
                    state.decide(&myself, ticket);
                }
            }
            AnswererMsg::Decide(ticket) => state.decide(&myself, ticket),
            AnswererMsg::HoldNow(ticket) => state.hold_now(ticket),
            AnswererMsg::SubmitNow(ticket) => state.submit_now(ticket),
            AnswererMsg::Withdraw { ticket } => {
                if let Some(work) = state.offers.remove(&ticket) {
                    work.timers.iter().for_each(Timer::cancel);
                }
            }
            AnswererMsg::Refused { ticket, what, reason } => {
                tracing::debug!(answerer = %state.name, ticket, %what, %reason, "refused");
            }
            AnswererMsg::Crash => state.crash(&myself),
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<AnswererMsg>,
        state: &mut AnswererState,
    ) -> Result<(), ActorProcessingErr> {
        for work in state.offers.values() {
            work.timers.iter().for_each(Timer::cancel);
        }
        Ok(())
    }
}

impl AnswererState {
    fn timer(&self, myself: &ActorRef<AnswererMsg>, delay: Duration, msg: AnswererMsg) -> Timer {
        let me = myself.clone();
        self.sched.after(delay, move || {
            let _ = me.send_message(msg);
        })
    }

    fn decide(&mut self, myself: &ActorRef<AnswererMsg>, ticket: u64) {
        let Some(work) = self.offers.get(&ticket) else {
            return;
        };
        let keyed = work.offer.call_id.is_some();
        let reply = work.offer.reply.clone();
        if !self.policy.accepts.matches(&work.offer.agent, keyed) {
            self.offers.remove(&ticket);
            self.jitter.send(&self.sched, &reply.broker, reply.decline());
            return;
        }
        self.jitter.send(&self.sched, &reply.broker, reply.accept());
        self.accepts += 1;
        if self.policy.crash_after_accepts.is_some_and(|n| self.accepts >= n) {
            // It dies right after this accept: no hold, no answer.
            self.crash(myself);
            return;
        }
        let hold = self
            .policy
            .hold_after_s
            .map(|s| Duration::from_secs_f64(s.max(0.0)));
        let submit = self.policy.latency.draw(&mut self.rng);
        // Zero delays act now rather than through a message to itself.
        match hold {
            Some(delay) if delay.is_zero() => self.hold_now(ticket),
            Some(delay) => self.keep_timer(ticket, myself, delay, AnswererMsg::HoldNow(ticket)),
            None => {}
        }
        match submit {
            Some(delay) if delay.is_zero() => self.submit_now(ticket),
            Some(delay) => self.keep_timer(ticket, myself, delay, AnswererMsg::SubmitNow(ticket)),
            None => {}
        }
    }

    fn keep_timer(&mut self, ticket: u64, myself: &ActorRef<AnswererMsg>, delay: Duration, msg: AnswererMsg) {
        let timer = self.timer(myself, delay, msg);
        if let Some(work) = self.offers.get_mut(&ticket) {
            work.timers.push(timer);
        }
    }

    fn hold_now(&mut self, ticket: u64) {
        if let Some(work) = self.offers.get(&ticket) {
            let msg = work.offer.reply.hold();
            let broker = work.offer.reply.broker.clone();
            self.jitter.send(&self.sched, &broker, msg);
        }
    }

    fn submit_now(&mut self, ticket: u64) {
        if let Some(work) = self.offers.remove(&ticket) {
            let batch = self.policy.answer.batch(&work.offer.questions);
            let msg = work.offer.reply.submit(batch);
            self.jitter.send(&self.sched, &work.offer.reply.broker, msg);
            work.timers.iter().for_each(Timer::cancel);
        }
    }

    fn crash(&mut self, myself: &ActorRef<AnswererMsg>) {
        for work in std::mem::take(&mut self.offers).into_values() {
            work.timers.iter().for_each(Timer::cancel);
        }
        myself.stop(Some("crash".into()));
    }
}
