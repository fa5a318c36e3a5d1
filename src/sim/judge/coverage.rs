//! Race coverage (SPEC §6 "Coverage"): for each named race, whether a run had its
//! two events within one virtual millisecond of each other, and which side won.
//! Read from the run's events (and the scenario's offer timeout), after the run.
//!
//! | race | the two events | sides |
//! |---|---|---|
//! | `answer_vs_expiry` | the owner's batch, the window's end | `answer`, `expiry` |
//! | `answer_vs_cancel` | a batch, the call's turn signal or `cancel_call` | `answer`, `cancel` |
//! | `hold_vs_expiry` | a hold (taken or refused), the window's end | `hold`, `expiry` |
//! | `submit_vs_owner_death` | the owner's batch, its death | `submit`, `death` |
//! | `two_answerers` | accepts or batches from two answerers for one call | `first`, `second` (which of the two the broker handled first won) |
//! | `request_vs_cancel` | a request, its turn signal | `request`, `cancel` |
//! | `accept_vs_offer_timeout` | an accept, the end of its offer (one not declined, nor accepted before its end) | `accept`, `timeout` |
//! | `late_answer_vs_loss` | a late answer, a process loss | `answer` (decided first; its message then reaches the agent before the loss or first thing after the restart), `loss` |
//!
//! A side that wins by making the other event never happen leaves only one event
//! in the log: an answerer that dies, or whose turn or process is gone, before its
//! batch is due never submits it. For an answerer whose `latency` is fixed, the
//! batch's due time is known (its accept plus the latency: exact without jitter),
//! so those races count too.
//!
//! Cost: each event is one push or lookup; the tally at the end sorts the calls
//! once and answers each race from indexes (a call's own lists, the signals of
//! each agent, the deaths of each answerer, the late answers by `seq`, the
//! fixed-latency due times by time), never by pairing every event of one kind
//! with every event of another.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::{FxHashMap, FxHashSet};

use serde::{Deserialize, Serialize};

use crate::event::{Event, EventKind};
use crate::protocol::Name;
use crate::scenario::Scenario;
use crate::sim::judge::call_ix::{CallIds, CallIx, Dense};
use crate::tool::{ErrorCode, ResultKind};

/// Two events this close (seconds) count as one instant for a race.
pub const RACE_WINDOW_S: f64 = 0.001;

/// The named races, in the order reports list them.
pub const RACES: [&str; 8] = [
    "answer_vs_expiry",
    "answer_vs_cancel",
    "hold_vs_expiry",
    "submit_vs_owner_death",
    "two_answerers",
    "request_vs_cancel",
    "accept_vs_offer_timeout",
    "late_answer_vs_loss",
];

/// One race's tally.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaceCount {
    /// Runs that reached the race (its two events within a millisecond).
    pub runs: u64,
    /// How often each side won.
    pub won: BTreeMap<String, u64>,
}

/// Every race's tally, by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage(pub BTreeMap<String, RaceCount>);

impl Default for Coverage {
    fn default() -> Self {
        Coverage(
            RACES
                .iter()
                .map(|r| ((*r).to_owned(), RaceCount::default()))
                .collect(),
        )
    }
}

impl Coverage {
    /// Adds another run's (or sweep's) tallies.
    pub fn add(&mut self, other: &Coverage) {
        for (race, count) in &other.0 {
            let mine = self.0.entry(race.clone()).or_default();
            mine.runs += count.runs;
            for (side, n) in &count.won {
                *mine.won.entry(side.clone()).or_insert(0) += n;
            }
        }
    }

    /// One line per race reached: `answer_vs_expiry: 100 runs (answer 25, expiry 75)`.
    pub fn lines(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|(_, c)| c.runs > 0)
            .map(|(race, c)| {
                let sides: Vec<String> = c.won.iter().map(|(side, n)| format!("{side} {n}")).collect();
                format!("{race}: {} runs ({})", c.runs, sides.join(", "))
            })
            .collect()
    }

    /// The races of `races` never reached, each once, in the order first named.
    pub fn missing<'a>(&self, races: &'a [String]) -> Vec<&'a str> {
        let mut named = BTreeSet::new();
        races
            .iter()
            .filter(|r| named.insert(r.as_str())) // a race required twice is listed once
            .filter(|r| self.0.get(r.as_str()).is_none_or(|c| c.runs == 0))
            .map(String::as_str)
            .collect()
    }
}

/// What one event of a call left for the coverage pass: an answerer's accept,
/// refused accept, batch, offer or offer timeout, or a hold (a fixed-latency
/// batch's due time is a mark too, derived from its accept, never stored). One
/// vector per call, in event order (each kind's own order
/// is then the order its events came in), with answerers by index: a call costs
/// one small allocation, not one per kind.
#[derive(Clone, Copy)]
struct Mark {
    t: f64,
    seq: u64,
    who: u32,
    kind: MarkKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum MarkKind {
    Accept,
    RefusedAccept,
    Answer,
    /// When the owner's batch was due, if its latency is fixed.
    Due,
    Hold {
        taken: bool,
    },
    Offer,
    OfferTimeout,
}

impl Mark {
    /// Accepts, refused accepts and batches.
    fn contact(&self) -> bool {
        matches!(
            self.kind,
            MarkKind::Accept | MarkKind::RefusedAccept | MarkKind::Answer
        )
    }

    fn accept(&self) -> bool {
        matches!(self.kind, MarkKind::Accept | MarkKind::RefusedAccept)
    }
}

/// What the coverage pass needs to know about one call.
#[derive(Default)]
struct Call {
    agent: Option<Name>,
    window_end: Option<f64>,
    first: Option<ResultKind>,
    owner: Option<u32>,
    marks: Vec<Mark>,
    withdrawn_by_cancel: bool,
    request_seq: u64,
    request_t: f64,
}

impl Call {
    fn marks(&self, kind: MarkKind) -> impl Iterator<Item = &Mark> {
        self.marks.iter().filter(move |m| m.kind == kind)
    }

    fn answers(&self) -> impl Iterator<Item = &Mark> {
        self.marks(MarkKind::Answer)
    }
}

/// Room for two marks at a call's first, where a vector's first push makes
/// room for four: an accept and an answer are most calls' whole story (the
/// accept ends its offer, whose mark goes then). Up to four, room for one more
/// at a time (a call taken up after a process loss has three: two accepts and
/// an answer); past that, as a vector grows.
fn push_mark(marks: &mut Vec<Mark>, mark: Mark) {
    if marks.len() == marks.capacity() && marks.len() < 4 {
        marks.reserve_exact(if marks.is_empty() { 2 } else { 1 });
    }
    marks.push(mark);
}

/// The races one run reached, each with the side that won where it was first
/// reached: a run counts once per race.
#[derive(Clone, Copy, Default)]
struct Reached([Option<&'static str>; RACES.len()]);

impl Reached {
    /// `race` reached, `side` winning, unless the run reached it before.
    fn reach(&mut self, race: &str, side: &'static str) {
        let at = RACES.iter().position(|r| *r == race).expect("a named race");
        self.0[at].get_or_insert(side);
    }

    /// The run's tally: one run for each race reached, won by its side.
    fn into_coverage(self) -> Coverage {
        let mut coverage = Coverage::default();
        for (race, side) in RACES.iter().zip(self.0) {
            if let Some(side) = side {
                let count = coverage.0.entry((*race).to_owned()).or_default();
                count.runs += 1;
                *count.won.entry(side.to_owned()).or_insert(0) += 1;
            }
        }
        coverage
    }
}

/// The coverage of one run.
pub fn coverage(events: &[Event], scenario: &Scenario) -> Coverage {
    let mut pass = Pass::new(scenario);
    let mut ids = CallIds::default();
    for event in events {
        let ix = ids.intern_event(event);
        pass.visit(event, ix);
    }
    pass.finish(&ids)
}

/// The coverage pass, one event at a time (the run streams its events here).
pub struct Pass {
    /// The scenario's offer timeout.
    offer_timeout_s: f64,
    /// Each answerer's fixed latency, when it has one: when its batch is due.
    fixed: FxHashMap<String, f64>,
    /// Answerers by the index marks give them, and the index of each name.
    answerers: Vec<Name>,
    /// Each indexed answerer's fixed latency, if it has one.
    fixed_of: Vec<Option<f64>>,
    answerer_ix: FxHashMap<Name, u32>,
    /// By the number the invariant checker gave each callId.
    calls: Dense<Call>,
    /// Each child's owner (roots have no entry).
    owners: FxHashMap<Name, Name>,
    /// Turn signals by the agent whose turn fired: (time, seq).
    cancels: FxHashMap<Name, Vec<(f64, u64)>>,
    /// `cancel_call` times by call.
    cancel_calls: FxHashMap<CallIx, Vec<f64>>,
    /// Death times by answerer.
    deaths: FxHashMap<Name, Vec<f64>>,
    losses: Vec<(f64, u64)>,
    /// Late answers in `seq` order: (time, seq), and each call's first.
    late_answers: Vec<(f64, u64)>,
    first_late: FxHashMap<CallIx, u64>,
    refused_submits: FxHashSet<(CallIx, u32)>,
}

impl Pass {
    /// A pass over a run of `scenario`.
    pub fn new(scenario: &Scenario) -> Pass {
        let fixed = scenario
            .answerers
            .iter()
            .filter_map(|a| match a.policy.latency {
                crate::policy::Latency::Fixed(s) => Some((a.name.clone(), s)),
                _ => None,
            })
            .collect();
        Pass {
            offer_timeout_s: scenario.broker.offer_timeout_s,
            fixed,
            answerers: Vec::new(),
            fixed_of: Vec::new(),
            answerer_ix: FxHashMap::default(),
            calls: Dense::default(),
            owners: FxHashMap::default(),
            cancels: FxHashMap::default(),
            cancel_calls: FxHashMap::default(),
            deaths: FxHashMap::default(),
            losses: Vec::new(),
            late_answers: Vec::new(),
            first_late: FxHashMap::default(),
            refused_submits: FxHashSet::default(),
        }
    }

    fn call(&mut self, ix: CallIx) -> &mut Call {
        self.calls.get_or_default(ix)
    }

    fn answerer(&mut self, name: &Name) -> u32 {
        if let Some(ix) = self.answerer_ix.get(name) {
            return *ix;
        }
        let ix = u32::try_from(self.answerers.len()).expect("fewer than 2^32 answerers");
        self.answerers.push(name.clone());
        self.fixed_of.push(self.fixed.get(&**name).copied());
        self.answerer_ix.insert(name.clone(), ix);
        ix
    }

    /// Adds a mark to the call, for `answerer` (index 0 when it names none).
    fn mark(&mut self, ix: CallIx, answerer: Option<&Name>, kind: MarkKind, t: f64, seq: u64) {
        let who = answerer.map_or(0, |a| self.answerer(a));
        let call = self.call(ix);
        push_mark(&mut call.marks, Mark { t, seq, who, kind });
    }

    /// When each of the call's owners was due to submit, if its latency is
    /// fixed: at its accept plus that latency, one per accept, in their order.
    /// Derived, not marked: most calls have an offer, an accept and an answer,
    /// and a fourth mark would double their vector.
    fn due<'c>(&'c self, call: &'c Call) -> impl Iterator<Item = Mark> + 'c {
        call.marks(MarkKind::Accept).filter_map(|accept| {
            let latency = self.fixed_of[accept.who as usize]?;
            Some(Mark {
                t: accept.t + latency,
                kind: MarkKind::Due,
                ..*accept
            })
        })
    }

    /// Takes one more event, `ix` the number of the callId it names (given by
    /// the invariant checker, or by [`coverage`]'s own [`CallIds`]).
    pub fn visit(&mut self, event: &Event, ix: Option<CallIx>) {
        match ix {
            Some(ix) => self.visit_call_event(event, ix),
            None => self.visit_signal(event),
        }
    }

    /// Events about one call.
    fn visit_call_event(&mut self, event: &Event, ix: CallIx) {
        let (t, seq) = (event.t, event.seq);
        match &event.kind {
            EventKind::Request { agent, window_s, .. } => {
                let call = self.call(ix);
                call.agent = Some(agent.clone());
                call.window_end = window_s.filter(|w| *w > 0.0).map(|w| t + w);
                (call.request_seq, call.request_t) = (seq, t);
            }
            EventKind::Result { .. } => {
                let kind = event.kind.result_kind();
                let call = self.call(ix);
                call.first = call.first.or(kind);
            }
            EventKind::Offer { answerer, .. } => {
                self.mark(ix, Some(answerer), MarkKind::Offer, t, seq);
            }
            EventKind::Accept { answerer, .. } => self.accepted(ix, answerer, t, seq),
            EventKind::Decline { answerer, reason, .. } if reason == "offer_timeout" => {
                self.mark(ix, Some(answerer), MarkKind::OfferTimeout, t, seq);
            }
            EventKind::Decline { answerer, reason, .. } if reason == "declined" => {
                self.declined(ix, answerer);
            }
            EventKind::Hold { .. } => {
                self.mark(ix, None, MarkKind::Hold { taken: true }, t, seq);
            }
            EventKind::Answer { answerer, .. } => self.mark(ix, Some(answerer), MarkKind::Answer, t, seq),
            EventKind::Refused {
                answerer,
                what,
                reason,
                ..
            } => self.refused(ix, answerer, what, reason, (t, seq)),
            EventKind::LateAnswer { .. } => {
                self.call(ix);
                self.late_answers.push((t, seq));
                self.first_late.entry(ix).or_insert(seq);
            }
            EventKind::Withdraw { reason, .. } if reason == "cancel_call" => {
                self.call(ix).withdrawn_by_cancel = true;
            }
            EventKind::CancelCall { .. } => {
                self.cancel_calls.entry(ix).or_default().push(t);
            }
            _ => {}
        }
    }

    /// Spawns, signals, deaths and losses.
    fn visit_signal(&mut self, event: &Event) {
        let (t, seq) = (event.t, event.seq);
        match &event.kind {
            // Only children are kept: a name without an entry has no owner,
            // and most agents of a load are roots.
            EventKind::Spawn { agent, owner, .. } => match owner {
                Some(owner) => {
                    self.owners.insert(agent.clone(), owner.clone());
                }
                None => {
                    self.owners.remove(&**agent);
                }
            },
            EventKind::Cancel { agent } => {
                self.cancels.entry(agent.clone()).or_default().push((t, seq));
            }
            EventKind::Crash { answerer, .. } => {
                self.deaths.entry(answerer.clone()).or_default().push(t);
            }
            EventKind::ProcessLoss { .. } => self.losses.push((t, seq)),
            _ => {}
        }
    }

    fn accepted(&mut self, ix: CallIx, answerer: &Name, t: f64, seq: u64) {
        let who = self.answerer(answerer);
        let timeout = self.offer_timeout_s;
        let call = self.call(ix);
        call.owner = Some(who);
        // The accept ends its offer: unless it came at the offer's end (the
        // race), the offer's mark goes, as a declined one's does. A call taken
        // up again after a process loss kept its first life's offer beside the
        // second's (five marks where three fit).
        let offer = call
            .marks
            .iter()
            .rposition(|m| m.kind == MarkKind::Offer && m.who == who);
        if let Some(i) = offer.filter(|i| (t - (call.marks[*i].t + timeout)).abs() > RACE_WINDOW_S) {
            call.marks.remove(i);
        }
        push_mark(
            &mut call.marks,
            Mark {
                t,
                seq,
                who,
                kind: MarkKind::Accept,
            },
        );
    }

    /// An offer its answerer declined has ended before its timeout, so it
    /// cannot race it (`accept_vs_offer_timeout`; an accept that comes after a
    /// decline is one the broker refuses, and the protocol check names it): its
    /// mark goes, as an offer's does when it is accepted away from its end. A
    /// waterfall of 64 kept 64 marks a call for the whole run.
    fn declined(&mut self, ix: CallIx, answerer: &Name) {
        let Some(&who) = self.answerer_ix.get(answerer) else {
            return;
        };
        let marks = &mut self.call(ix).marks;
        if let Some(i) = marks
            .iter()
            .rposition(|m| m.kind == MarkKind::Offer && m.who == who)
        {
            marks.remove(i);
        }
    }

    fn refused(&mut self, ix: CallIx, answerer: &Name, what: &str, reason: &str, (t, seq): (f64, u64)) {
        match what {
            "accept" => self.mark(ix, Some(answerer), MarkKind::RefusedAccept, t, seq),
            "hold" => self.mark(ix, None, MarkKind::Hold { taken: false }, t, seq),
            "submit" if reason == "owner_dead" => {
                let who = self.answerer(answerer);
                self.refused_submits.insert((ix, who));
            }
            _ => {}
        }
    }

    /// Calls `each` with every agent whose turn signal fires `agent`'s turn,
    /// once: itself and those it descends from, up to 64 owners up. A root's
    /// walk (most calls') keeps no list.
    fn signalled_by<'a>(&'a self, agent: &'a str, mut each: impl FnMut(&'a str)) {
        let mut walked: Vec<&str> = Vec::new();
        let mut at = Some(agent);
        let mut hops = 0;
        while let Some(name) = at {
            if !walked.contains(&name) {
                each(name);
            }
            hops += 1;
            if hops > 64 {
                break;
            }
            at = self.owners.get(name).map(|owner| &**owner);
            if at.is_some() {
                walked.push(name);
            }
        }
    }

    /// The coverage of the events seen, `ids` the numbers [`Pass::visit`] was
    /// given.
    pub fn finish(self, ids: &CallIds) -> Coverage {
        // Each race is won by the side of the call first in callId order that
        // reached it (then by that call's own order of checks): found as the
        // least callId among the calls that reached it, each call judged on its
        // own, where sorting every call by its callId first was a tenth of a
        // large run's work after its last event (BENCHMARKS.md, issue #19,
        // forty-fourth session).
        let names = ids.by_ix();
        let mut least: [Option<(&crate::protocol::CallId, &'static str)>; RACES.len()] = [None; RACES.len()];
        for (ix, call) in self.calls.iter() {
            let mut own = Reached::default();
            self.windows(&mut own, call);
            self.cancels_of(&mut own, ix, call);
            self.deaths_of(&mut own, ix, call);
            self.answerers_of(&mut own, call);
            let name = names[ix.index()];
            for (slot, side) in least.iter_mut().zip(own.0) {
                if let Some(side) = side
                    && slot.is_none_or(|(before, _)| name < before)
                {
                    *slot = Some((name, side));
                }
            }
        }
        let mut reached = Reached(least.map(|slot| slot.map(|(_, side)| side)));
        self.offer_timeouts(&mut reached);
        self.losses(&mut reached);
        reached.into_coverage()
    }

    fn windows(&self, reached: &mut Reached, call: &Call) {
        let Some(end) = call.window_end else { return };
        let close = |t: f64| (t - end).abs() <= RACE_WINDOW_S;
        let side = if call.first == Some(ResultKind::Pending) {
            "expiry"
        } else {
            "answer"
        };
        if call.answers().any(|m| close(m.t)) {
            reached.reach("answer_vs_expiry", side);
        }
        let hold = call.marks.iter().find_map(|m| match m.kind {
            MarkKind::Hold { taken } if close(m.t) => Some(taken),
            _ => None,
        });
        if let Some(taken) = hold {
            reached.reach("hold_vs_expiry", if taken { "hold" } else { "expiry" });
        }
    }

    /// The turn signals that reach the call (in the order they fired), then its
    /// `cancel_call`s.
    fn signals_of(&self, ix: CallIx, call: &Call) -> Vec<(f64, Option<u64>)> {
        let mut turns: Vec<(f64, u64)> = Vec::new();
        if !self.cancels.is_empty() {
            self.signalled_by(call.agent.as_deref().unwrap_or(""), |agent| {
                if let Some(fired) = self.cancels.get(agent) {
                    turns.extend_from_slice(fired);
                }
            });
        }
        let calls = self.cancel_calls.get(&ix);
        if turns.is_empty() && calls.is_none() {
            return Vec::new();
        }
        turns.sort_by_key(|(_, seq)| *seq);
        turns
            .into_iter()
            .map(|(t, seq)| (t, Some(seq)))
            .chain(calls.into_iter().flatten().map(|t| (*t, None)))
            .collect()
    }

    fn cancels_of(&self, reached: &mut Reached, ix: CallIx, call: &Call) {
        for (t, seq) in self.signals_of(ix, call) {
            let near = |m: &Mark| (m.t - t).abs() <= RACE_WINDOW_S;
            if call.answers().any(near) || self.due(call).any(|m| near(&m)) {
                let cancelled =
                    call.first == Some(ResultKind::Error(ErrorCode::Aborted)) || call.withdrawn_by_cancel;
                reached.reach("answer_vs_cancel", if cancelled { "cancel" } else { "answer" });
            }
            if let Some(cancel_seq) = seq.filter(|_| (call.request_t - t).abs() <= RACE_WINDOW_S) {
                let side = if call.request_seq < cancel_seq {
                    "request"
                } else {
                    "cancel"
                };
                reached.reach("request_vs_cancel", side);
            }
        }
    }

    /// Whether `answerer` died within a race window of `t`.
    fn died_near(&self, answerer: &str, t: f64) -> bool {
        self.deaths
            .get(answerer)
            .is_some_and(|ds| ds.iter().any(|d| (d - t).abs() <= RACE_WINDOW_S))
    }

    fn deaths_of(&self, reached: &mut Reached, ix: CallIx, call: &Call) {
        for due in self.due(call) {
            let submitted = call.answers().any(|a| a.who == due.who);
            if self.died_near(&self.answerers[due.who as usize], due.t) && !submitted {
                reached.reach("submit_vs_owner_death", "death");
            }
        }
        for answer in call.answers() {
            if self.died_near(&self.answerers[answer.who as usize], answer.t) {
                let refused = self.refused_submits.contains(&(ix, answer.who));
                reached.reach("submit_vs_owner_death", if refused { "death" } else { "submit" });
            }
        }
    }

    fn answerers_of(&self, reached: &mut Reached, call: &Call) {
        for (i, contact) in call.marks.iter().enumerate().filter(|(_, m)| m.contact()) {
            let rival = call.marks[i + 1..]
                .iter()
                .filter(|m| m.contact())
                .find(|m| m.who != contact.who && (m.t - contact.t).abs() <= RACE_WINDOW_S);
            if let (Some(_), Some(owner)) = (rival, call.owner) {
                let side = if contact.who == owner { "first" } else { "second" };
                reached.reach("two_answerers", side);
            }
        }
    }

    fn offer_timeouts(&self, reached: &mut Reached) {
        let timeout = self.offer_timeout_s;
        // A run counts the race once, the side of the first offer in log order
        // that reached it: found by its seq, without a list of every offer (a
        // waterfall of 64 at 10^5 roots sorted 6.4 million, 1.7 KB a call).
        let mut first: Option<(u64, &'static str)> = None;
        for (_, call) in self.calls.iter() {
            for offer in call.marks(MarkKind::Offer) {
                let end = offer.t + timeout;
                let close = |m: &Mark| m.who == offer.who && (m.t - end).abs() <= RACE_WINDOW_S;
                let accepted_near = call.marks.iter().any(|m| m.accept() && close(m));
                let side = if call.owner == Some(offer.who) && accepted_near {
                    "accept"
                } else if call.marks(MarkKind::OfferTimeout).any(close) && accepted_near {
                    "timeout"
                } else {
                    continue;
                };
                if first.is_none_or(|(seq, _)| offer.seq < seq) {
                    first = Some((offer.seq, side));
                }
            }
        }
        if let Some((_, side)) = first {
            reached.reach("accept_vs_offer_timeout", side);
        }
    }

    fn losses(&self, reached: &mut Reached) {
        if self.losses.is_empty() {
            return;
        }
        // The latest late answer before each point, for "decided just before".
        let mut latest = Vec::with_capacity(self.late_answers.len());
        for (t, _) in &self.late_answers {
            let before = latest.last().copied().unwrap_or(f64::NEG_INFINITY);
            latest.push(if *t > before { *t } else { before });
        }
        // Fixed-latency due times of calls that went pending, by time.
        let mut due: Vec<(f64, CallIx)> = self
            .calls
            .iter()
            .filter(|(_, c)| c.first == Some(ResultKind::Pending))
            .flat_map(|(ix, c)| self.due(c).map(move |d| (d.t, ix)))
            .collect();
        due.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (lost_t, lost_seq) in &self.losses {
            let before = self.late_answers.partition_point(|(_, seq)| seq < lost_seq);
            let decided = before > 0 && lost_t - latest[before - 1] <= RACE_WINDOW_S;
            if decided {
                reached.reach("late_answer_vs_loss", "answer");
                continue;
            }
            // Candidates by time, with slack for rounding; the exact test decides.
            let from = due.partition_point(|(d, _)| *d < lost_t - 2.0 * RACE_WINDOW_S);
            let lost = due[from..]
                .iter()
                .take_while(|(d, _)| *d <= lost_t + 2.0 * RACE_WINDOW_S)
                .any(|(d, id)| {
                    (d - lost_t).abs() <= RACE_WINDOW_S
                        && self.first_late.get(id).is_none_or(|first| first >= lost_seq)
                });
            if lost {
                reached.reach("late_answer_vs_loss", "loss");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, t: f64, kind: EventKind) -> Event {
        Event { seq, t, kind }
    }

    /// A waterfall's declined offers leave no marks: one call offered to 64
    /// answerers, 63 declining, then accepted by the last away from its
    /// offer's end, keeps the accept alone.
    #[test]
    fn declined_offers_leave_no_marks() {
        let scenario =
            crate::scenario::parse("quickstart", include_str!("../../../scenarios/quickstart.json"))
                .expect("the quickstart parses");
        let mut pass = Pass::new(&scenario);
        let mut ids = CallIds::default();
        let call_id: crate::protocol::CallId = "root/1".into();
        let mut events = Vec::new();
        for d in 0..64 {
            let answerer: Name = format!("a-{d}").as_str().into();
            events.push(EventKind::Offer {
                call_id: call_id.clone(),
                answerer: answerer.clone(),
            });
            if d < 63 {
                events.push(EventKind::Decline {
                    call_id: call_id.clone(),
                    answerer,
                    reason: "declined".into(),
                    mbox: None,
                });
            }
        }
        events.push(EventKind::Accept {
            call_id: call_id.clone(),
            answerer: "a-63".into(),
            mbox: None,
        });
        for (i, kind) in events.into_iter().enumerate() {
            let event = event(i as u64 + 1, 0.0, kind);
            let ix = ids.intern_event(&event);
            pass.visit(&event, ix);
        }
        let (_, call) = pass.calls.iter().next().expect("the call");
        let kinds: Vec<(u32, bool)> = call
            .marks
            .iter()
            .map(|m| (m.who, m.kind == MarkKind::Offer))
            .collect();
        assert_eq!(kinds, [(63, false)], "the accept; its offer ended there");
        assert!(call.marks.capacity() <= 2, "room for two, never for 64");
    }

    /// An offer still open at its timeout races an accept there.
    #[test]
    fn an_accept_at_the_offers_end_is_reached() {
        let scenario =
            crate::scenario::parse("quickstart", include_str!("../../../scenarios/quickstart.json"))
                .expect("the quickstart parses");
        let end = scenario.broker.offer_timeout_s;
        let call_id: crate::protocol::CallId = "root/1".into();
        let events = [
            event(
                1,
                0.0,
                EventKind::Offer {
                    call_id: call_id.clone(),
                    answerer: "web".into(),
                },
            ),
            event(
                2,
                end,
                EventKind::Accept {
                    call_id,
                    answerer: "web".into(),
                    mbox: None,
                },
            ),
        ];
        let race = &coverage(&events, &scenario).0["accept_vs_offer_timeout"];
        assert_eq!(race.runs, 1);
        assert_eq!(race.won.get("accept"), Some(&1));
    }

    /// Two calls reach the same race with opposite sides: the run's side is
    /// that of the call first in callId order, not in log order (`b/1` is
    /// logged first, `a/1` wins), whatever order the pass keeps its calls in.
    #[test]
    fn a_race_reached_twice_is_won_by_the_least_call_id() {
        let scenario =
            crate::scenario::parse("quickstart", include_str!("../../../scenarios/quickstart.json"))
                .expect("the quickstart parses");
        let request = |seq: u64, call: &str| {
            format!(
                r#"{{"seq":{seq},"t":0.0,"event":"request","callId":"{call}/1","agent":"{call}","schema":"timed","keyed":true,"questions":[],"timeout":null,"window_s":5.0}}"#
            )
        };
        let answer = |seq: u64, call: &str| {
            format!(
                r#"{{"seq":{seq},"t":5.0,"event":"answer","callId":"{call}/1","answerer":"web","batch":[]}}"#
            )
        };
        let result = |seq: u64, call: &str, outcome: &str| {
            format!(
                r#"{{"seq":{seq},"t":5.0,"event":"result","callId":"{call}/1","agent":"{call}","result":"{{}}","is_error":false,"outcome":"{outcome}"}}"#
            )
        };
        let lines = [
            request(1, "b"),
            request(2, "a"),
            result(3, "b", "pending"),
            answer(4, "b"),
            answer(5, "a"),
            result(6, "a", "answers"),
        ];
        let events: Vec<Event> = (lines.iter())
            .map(|line| serde_json::from_str(line).expect("an event line"))
            .collect();
        let race = &coverage(&events, &scenario).0["answer_vs_expiry"];
        assert_eq!(race.runs, 1, "a run counts once per race");
        assert_eq!(race.won.get("answer"), Some(&1), "a/1's side: {:?}", race.won);
        assert_eq!(race.won.get("expiry"), None);
    }

    /// A turn signal reaches the calls of the agent's descendants: a cancel of
    /// `r`'s turn races the answer to its grandchild's call.
    #[test]
    fn a_cancel_races_the_calls_of_the_agents_descendants() {
        let scenario =
            crate::scenario::parse("quickstart", include_str!("../../../scenarios/quickstart.json"))
                .expect("the quickstart parses");
        let lines = [
            r#"{"seq":1,"t":0.0,"event":"spawn","agent":"r","owner":null,"lineage":null}"#,
            r#"{"seq":2,"t":0.0,"event":"spawn","agent":"c","owner":"r","lineage":null}"#,
            r#"{"seq":3,"t":0.0,"event":"spawn","agent":"g","owner":"c","lineage":null}"#,
            r#"{"seq":4,"t":0.0,"event":"request","callId":"g/1","agent":"g","schema":"timed","keyed":true,"questions":[],"timeout":null,"window_s":30.0}"#,
            r#"{"seq":5,"t":1.0,"event":"answer","callId":"g/1","answerer":"web","batch":[]}"#,
        ];
        let reached = |cancelled: &str| {
            let cancel = format!(r#"{{"seq":6,"t":1.0,"event":"cancel","agent":"{cancelled}"}}"#);
            let events: Vec<Event> = (lines.iter().copied().chain([cancel.as_str()]))
                .map(|line| serde_json::from_str(line).expect("an event line"))
                .collect();
            coverage(&events, &scenario).0["answer_vs_cancel"].clone()
        };
        let race = reached("r");
        assert_eq!(race.runs, 1, "{race:?}");
        assert_eq!(race.won.get("answer"), Some(&1));
        assert_eq!(reached("x").runs, 0, "x's turn is not g's");
    }
}
