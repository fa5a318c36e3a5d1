//! The built-in answerer: a [`Policy`] acting on offers. It accepts or declines
//! after its offer latency, may hold the window, submits one batch after its
//! latency, and may die of a scheduled fault. Its random draws come from its own
//! seeded stream; its waits are timers to itself.
//!
//! Any actor speaking [`AnswererMsg`] may take part in the waterfall instead (see
//! [`crate::actors`]); this one is what scenarios use.

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::effect::{Out, TimerId};
use crate::policy::Policy;
use crate::protocol::{AnswererIx, AnswererMsg, Envelope, Name, Offer, Ticket, nanos};

/// Most offers one answerer works on at once: every open call of a broker.
const OFFERS_MAX: usize = crate::broker::OPEN_CALLS_MAX;

/// One offer being worked on, with the timers that act on it.
#[derive(Debug)]
struct Work {
    offer: Offer,
    timers: Vec<TimerId>,
}

/// The built-in answerer's state.
#[derive(Debug)]
pub struct AnswererState {
    index: AnswererIx,
    name: Name,
    policy: Policy,
    rng: StdRng,
    offers: BTreeMap<Ticket, Work>,
    accepts: u64,
    next_timer: TimerId,
}

impl AnswererState {
    /// The answerer at `index` of the waterfall, drawing from the stream `seed`.
    pub fn new(index: AnswererIx, name: Name, policy: Policy, seed: u64) -> AnswererState {
        AnswererState {
            index,
            name,
            policy,
            rng: StdRng::seed_from_u64(seed),
            offers: BTreeMap::new(),
            accepts: 0,
            next_timer: 0,
        }
    }

    /// Starts it at `now_s` seconds into the run: a `crash_at` still ahead is armed
    /// as a fault timer (one already past, after a restart, does not fire again).
    pub fn start(&mut self, now_s: f64, out: &mut Out) {
        if let Some(at_s) = self.policy.crash_at_s
            && at_s >= now_s
        {
            let timer = self.timer_id();
            out.fault_timer(timer, nanos(at_s - now_s), self.to_self(AnswererMsg::Crash));
        }
    }

    /// Handles one message.
    pub fn handle(&mut self, msg: AnswererMsg, out: &mut Out) {
        match msg {
            AnswererMsg::Offer(offer) => self.offered(offer, out),
            AnswererMsg::Decide(ticket) => self.decide(ticket, out),
            AnswererMsg::HoldNow(ticket) => self.hold_now(ticket, out),
            AnswererMsg::SubmitNow(ticket) => self.submit_now(ticket, out),
            AnswererMsg::Withdraw { ticket } => {
                if let Some(work) = self.offers.remove(&ticket) {
                    work.timers.into_iter().for_each(|t| out.cancel(t));
                }
            }
            AnswererMsg::Refused { ticket, what, reason } => {
                tracing::debug!(answerer = %self.name, ticket, what = what.as_str(), reason = reason.as_str(), "refused");
            }
            AnswererMsg::Crash => self.crash(out),
            AnswererMsg::OutsideTimer { .. } => {}
        }
    }

    fn timer_id(&mut self) -> TimerId {
        self.next_timer += 1;
        self.next_timer
    }

    fn to_self(&self, msg: AnswererMsg) -> Envelope {
        Envelope::Answerer(self.index, msg)
    }

    fn offered(&mut self, offer: Offer, out: &mut Out) {
        let ticket = offer.ticket;
        assert!(
            self.offers.len() < OFFERS_MAX,
            "an answerer holds at most every open call"
        );
        self.offers.insert(
            ticket,
            Work {
                offer,
                timers: Vec::new(),
            },
        );
        match self.policy.offer_latency.draw(&mut self.rng) {
            // No latency: decide now rather than through a timer to itself.
            Some(delay) if delay.is_zero() => self.decide(ticket, out),
            Some(delay) => self.keep_timer(
                ticket,
                nanos(delay.as_secs_f64()),
                AnswererMsg::Decide(ticket),
                out,
            ),
            // "never": it never replies; the broker's offer timeout moves on.
            None => {}
        }
    }

    fn decide(&mut self, ticket: Ticket, out: &mut Out) {
        let Some(work) = self.offers.get(&ticket) else {
            return;
        };
        let keyed = work.offer.call_id.is_some();
        if !self.policy.accepts.matches(&work.offer.agent, keyed) {
            out.tell_broker(work.offer.decline());
            self.offers.remove(&ticket);
            return;
        }
        out.tell_broker(work.offer.accept());
        self.accepts += 1;
        if self.policy.crash_after_accepts.is_some_and(|n| self.accepts >= n) {
            // It dies right after this accept: no hold, no answer.
            self.crash(out);
            return;
        }
        let hold = self.policy.hold_after_s.map(nanos);
        let submit = self
            .policy
            .latency
            .draw(&mut self.rng)
            .map(|d| nanos(d.as_secs_f64()));
        // Zero delays act now rather than through a timer to itself.
        match hold {
            Some(0) => self.hold_now(ticket, out),
            Some(delay) => self.keep_timer(ticket, delay, AnswererMsg::HoldNow(ticket), out),
            None => {}
        }
        match submit {
            Some(0) => self.submit_now(ticket, out),
            Some(delay) => self.keep_timer(ticket, delay, AnswererMsg::SubmitNow(ticket), out),
            None => {}
        }
    }

    fn keep_timer(&mut self, ticket: Ticket, after: u64, msg: AnswererMsg, out: &mut Out) {
        let timer = self.timer_id();
        out.timer(timer, after, self.to_self(msg));
        if let Some(work) = self.offers.get_mut(&ticket) {
            work.timers.push(timer);
        }
    }

    fn hold_now(&mut self, ticket: Ticket, out: &mut Out) {
        if let Some(work) = self.offers.get(&ticket) {
            out.tell_broker(work.offer.hold());
        }
    }

    fn submit_now(&mut self, ticket: Ticket, out: &mut Out) {
        if let Some(work) = self.offers.remove(&ticket) {
            let batch = self.policy.answer.batch(&work.offer.questions);
            out.tell_broker(work.offer.submit(batch));
            work.timers.into_iter().for_each(|t| out.cancel(t));
        }
    }

    fn crash(&mut self, out: &mut Out) {
        for work in std::mem::take(&mut self.offers).into_values() {
            work.timers.into_iter().for_each(|t| out.cancel(t));
        }
        out.die();
    }
}
