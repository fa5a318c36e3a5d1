//! The built-in answerer: a [`Policy`] acting on offers. It accepts or declines
//! after its offer latency, may hold the window, submits one batch after its
//! latency, and may die of a scheduled fault. Its random draws come from its own
//! seeded stream; its waits are timers to itself, each with what it does when
//! it fires (private: nothing outside it sends them).
//!
//! It is an [`Answerer`] like any other: what scenarios use, beside the
//! program's own.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rustc_hash::FxHashMap;
use serde_json::Value;

use super::{Answerer, Replies};
use crate::policy::Policy;
use crate::protocol::{AnswererInput, AnswererIx, AnswererMsg, Name, Offer, Reply, Ticket, TimerId};
use crate::tool::Question;

/// Most offers one answerer works on at once: every open call of a broker.
const OFFERS_MAX: usize = crate::broker::OPEN_CALLS_MAX;

/// What one of its timers does when it fires.
#[derive(Clone, Copy, Debug)]
enum Wake {
    /// The offer latency elapsed: accept or decline.
    Decide(Ticket),
    /// The hold delay elapsed: hold the window.
    Hold(Ticket),
    /// The answer latency elapsed: submit.
    Submit(Ticket),
    /// A scheduled fault: die now.
    Crash,
}

/// One offer being worked on: what deciding and answering it read, and the
/// timers that act on it. Not the whole offer (its callId, its sender): an
/// accepted call the user never answers is held as long as it is pending.
/// Boxed in the map: a B-tree of appended tickets fills its nodes about half.
#[derive(Debug)]
struct Work {
    questions: Arc<[Question]>,
    agent: Name,
    keyed: bool,
    /// The timers that act on it, in the order started, 0 for none (ids start
    /// at 1): a decide, a hold and a submit at most, one each. In place: a
    /// vector was an allocation per offer (32 bytes for its first push).
    timers: [TimerId; TIMERS_MAX],
}

/// Timers one offer can have running: a decide, a hold, a submit.
const TIMERS_MAX: usize = 3;

/// The built-in answerer's state.
#[derive(Debug)]
pub struct PolicyAnswerer {
    index: AnswererIx,
    name: Name,
    policy: Policy,
    rng: StdRng,
    offers: BTreeMap<Ticket, Box<Work>>,
    accepts: u64,
    next_timer: TimerId,
    /// Running timers and what each does (looked up, never iterated: a table,
    /// not a B-tree appended to in order, whose nodes stay half full).
    wakes: FxHashMap<TimerId, Wake>,
    /// The last batch built and the questions it answers: a batch depends on the
    /// policy and the questions alone, and calls that ask the same questions
    /// (every copy of a `count` row) share one `Arc` of them, so consecutive
    /// calls share one batch instead of a `Value` tree each.
    last_batch: Option<(Arc<[Question]>, Arc<Value>)>,
}

impl PolicyAnswerer {
    /// The answerer at `index` of the waterfall, drawing from the stream `seed`.
    pub fn new(index: AnswererIx, name: Name, policy: Policy, seed: u64) -> PolicyAnswerer {
        PolicyAnswerer {
            index,
            name,
            policy,
            rng: StdRng::seed_from_u64(seed),
            offers: BTreeMap::new(),
            accepts: 0,
            next_timer: 0,
            wakes: FxHashMap::default(),
            last_batch: None,
        }
    }

    /// The batch that answers `questions`, shared with the last call's when
    /// they ask the same (the batch is the policy's answer to the questions'
    /// texts alone): calls made through the library each parse their own
    /// questions, so the same questions asked again are seldom the same `Arc`.
    fn batch(&mut self, questions: &Arc<[Question]>) -> Arc<Value> {
        if let Some((asked, batch)) = &self.last_batch
            && (Arc::ptr_eq(asked, questions) || asked[..] == questions[..])
        {
            return batch.clone();
        }
        let batch = Arc::new(self.policy.answer.batch(questions));
        self.last_batch = Some((questions.clone(), batch.clone()));
        batch
    }

    fn timer_id(&mut self) -> TimerId {
        self.next_timer += 1;
        self.next_timer
    }

    fn offered(&mut self, offer: Offer, out: &mut Replies) {
        let ticket = offer.ticket;
        assert!(
            self.offers.len() < OFFERS_MAX,
            "an answerer holds at most every open call"
        );
        debug_assert_eq!(offer.answerer, self.index, "an offer names its offeree");
        let Offer {
            call_id,
            agent,
            questions,
            ..
        } = offer;
        let keyed = call_id.is_some();
        let latency = self.policy.offer_latency.draw(&mut self.rng);
        if latency.is_some_and(|delay| delay.is_zero()) && !self.policy.accepts.matches(&agent, keyed) {
            // Declined at once: nothing of it to keep (a waterfall's declining
            // answerers see every call).
            out.reply(ticket, Reply::Decline);
            return;
        }
        let work = Work {
            questions,
            agent,
            keyed,
            timers: [0; TIMERS_MAX],
        };
        self.offers.insert(ticket, Box::new(work));
        match latency {
            // No latency: decide now rather than through a timer to itself.
            Some(delay) if delay.is_zero() => self.decide(ticket, out),
            Some(delay) => self.keep_timer(ticket, exact(delay), Wake::Decide(ticket), out),
            // "never": it never replies; the broker's offer timeout moves on.
            None => {}
        }
    }

    fn decide(&mut self, ticket: Ticket, out: &mut Replies) {
        let Some(work) = self.offers.get(&ticket) else {
            return;
        };
        if !self.policy.accepts.matches(&work.agent, work.keyed) {
            out.reply(ticket, Reply::Decline);
            self.offers.remove(&ticket);
            return;
        }
        out.reply(ticket, Reply::Accept);
        self.accepts += 1;
        if self.policy.crash_after_accepts.is_some_and(|n| self.accepts >= n) {
            // It dies right after this accept: no hold, no answer.
            self.crash(out);
            return;
        }
        let hold = self.policy.hold_after_s.map(seconds);
        let submit = self.policy.latency.draw(&mut self.rng).map(exact);
        // Zero delays act now rather than through a timer to itself.
        match hold {
            Some(delay) if delay.is_zero() => self.hold_now(ticket, out),
            Some(delay) => self.keep_timer(ticket, delay, Wake::Hold(ticket), out),
            None => {}
        }
        match submit {
            Some(delay) if delay.is_zero() => self.submit_now(ticket, out),
            Some(delay) => self.keep_timer(ticket, delay, Wake::Submit(ticket), out),
            None => {}
        }
    }

    fn keep_timer(&mut self, ticket: Ticket, after: Duration, wake: Wake, out: &mut Replies) {
        let timer = self.timer_id();
        out.start_timer(timer, after);
        self.wakes.insert(timer, wake);
        if let Some(work) = self.offers.get_mut(&ticket) {
            let free = work.timers.iter_mut().find(|t| **t == 0);
            *free.expect("an offer has a decide, a hold and a submit timer at most") = timer;
        }
    }

    fn cancel_timers(&mut self, timers: [TimerId; TIMERS_MAX], out: &mut Replies) {
        for timer in timers.into_iter().take_while(|t| *t != 0) {
            self.wakes.remove(&timer);
            out.cancel_timer(timer);
        }
    }

    fn hold_now(&mut self, ticket: Ticket, out: &mut Replies) {
        if self.offers.contains_key(&ticket) {
            out.reply(ticket, Reply::Hold);
        }
    }

    fn submit_now(&mut self, ticket: Ticket, out: &mut Replies) {
        if let Some(work) = self.offers.remove(&ticket) {
            let batch = self.batch(&work.questions);
            out.reply(ticket, Reply::Submit(batch));
            self.cancel_timers(work.timers, out);
        }
    }

    fn crash(&mut self, out: &mut Replies) {
        for work in std::mem::take(&mut self.offers).into_values() {
            self.cancel_timers(work.timers, out);
        }
        out.die();
    }
}

impl Answerer for PolicyAnswerer {
    /// Arms a `crash_at` still ahead as a fault timer (one already past, after a
    /// restart, does not fire again).
    fn start(&mut self, out: &mut Replies<'_>) {
        let now_s = crate::protocol::seconds(out.now_nanos());
        if let Some(at_s) = self.policy.crash_at_s
            && at_s >= now_s
        {
            let timer = self.timer_id();
            self.wakes.insert(timer, Wake::Crash);
            out.start_fault_timer(timer, seconds(at_s - now_s));
        }
    }

    fn handle(&mut self, input: AnswererInput, out: &mut Replies<'_>) {
        match input {
            AnswererInput::Broker(AnswererMsg::Offer(offer)) => self.offered(*offer, out),
            AnswererInput::Broker(AnswererMsg::Withdraw { ticket }) => {
                if let Some(work) = self.offers.remove(&ticket) {
                    self.cancel_timers(work.timers, out);
                }
            }
            AnswererInput::Broker(AnswererMsg::Refused { ticket, what, reason }) => {
                tracing::debug!(answerer = %self.name, ticket, what = what.as_str(), reason = reason.as_str(), "refused");
            }
            AnswererInput::Timer(timer) => match self.wakes.remove(&timer) {
                Some(Wake::Decide(ticket)) => self.decide(ticket, out),
                Some(Wake::Hold(ticket)) => self.hold_now(ticket, out),
                Some(Wake::Submit(ticket)) => self.submit_now(ticket, out),
                Some(Wake::Crash) => self.crash(out),
                None => {}
            },
        }
    }
}

/// Seconds as a duration, as the executors round them (to the nanosecond).
fn seconds(s: f64) -> Duration {
    Duration::from_nanos(crate::protocol::nanos(s))
}

/// A drawn delay, to the nanosecond as [`seconds`] rounds.
fn exact(delay: Duration) -> Duration {
    seconds(delay.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Accepts, AnswerPolicy, Latency};
    use crate::tool::QuestionOption;

    fn questions(label: &str) -> Arc<[Question]> {
        let option = |label| QuestionOption {
            label,
            description: "",
        };
        Arc::from(vec![Question::new(
            "go",
            "Proceed?",
            "Go",
            [option(label), option("No")],
            false,
        )])
    }

    #[test]
    fn calls_asking_the_same_questions_share_one_batch_and_others_get_their_own() {
        let policy = Policy::new(Accepts::All, Latency::Fixed(1.0), AnswerPolicy::Recommended);
        let mut answerer = PolicyAnswerer::new(0, "web".into(), policy, 7);
        let (shared, other) = (questions("Yes"), questions("Sure"));
        let first = answerer.batch(&shared);
        assert!(Arc::ptr_eq(&first, &answerer.batch(&shared.clone())), "one batch");
        let second = answerer.batch(&other);
        assert_eq!(*second, serde_json::json!([{"id": "go", "selected": ["Sure"]}]));
        assert_eq!(*answerer.batch(&shared), *first, "the same batch again");
        assert_eq!(*first, serde_json::json!([{"id": "go", "selected": ["Yes"]}]));
    }
}
