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
//! | `accept_vs_offer_timeout` | an accept, the end of its offer | `accept`, `timeout` |
//! | `late_answer_vs_loss` | a late answer, a process loss | `answer` (decided first; its message then reaches the agent before the loss or first thing after the restart), `loss` |
//!
//! A side that wins by making the other event never happen leaves only one event
//! in the log: an answerer that dies, or whose turn or process is gone, before its
//! batch is due never submits it. For an answerer whose `latency` is fixed, the
//! batch's due time is known (its accept plus the latency: exact without jitter),
//! so those races count too.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::event::{Event, EventKind};
use crate::scenario::Scenario;
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

    /// The races never reached.
    pub fn missing<'a>(&self, races: &'a [String]) -> Vec<&'a str> {
        races
            .iter()
            .filter(|r| self.0.get(r.as_str()).is_none_or(|c| c.runs == 0))
            .map(String::as_str)
            .collect()
    }

    fn reached(&mut self, race: &str, side: &str, seen: &mut BTreeSet<&'static str>) {
        let race = RACES.iter().find(|r| **r == race).copied().expect("a named race");
        if !seen.insert(race) {
            return; // a run counts once per race; the first side seen wins the tally
        }
        let count = self.0.entry(race.to_owned()).or_default();
        count.runs += 1;
        *count.won.entry(side.to_owned()).or_insert(0) += 1;
    }
}

/// What the coverage pass needs to know about one call.
#[derive(Default)]
struct Call {
    agent: String,
    window_end: Option<f64>,
    first: Option<ResultKind>,
    owner: Option<String>,
    /// Accepts, refused accepts and batches: (time, answerer).
    contacts: Vec<(f64, String)>,
    /// Accepts and refused accepts: (time, answerer).
    accepts: Vec<(f64, String)>,
    /// When each owner's batch was due, if its latency is fixed: (time, owner).
    due: Vec<(f64, String)>,
    answers: Vec<(f64, String, u64)>,
    holds: Vec<(f64, bool)>,
    late: bool,
    withdrawn_by_cancel: bool,
    request_seq: u64,
    request_t: f64,
}

/// The coverage of one run.
pub fn coverage(events: &[Event], scenario: &Scenario) -> Coverage {
    let mut pass = Pass::new(scenario);
    for event in events {
        pass.visit(event);
    }
    pass.finish()
}

/// The coverage pass, one event at a time (the run streams its events here).
pub struct Pass {
    /// The scenario's offer timeout.
    offer_timeout_s: f64,
    /// Each answerer's fixed latency, when it has one: when its batch is due.
    fixed: HashMap<String, f64>,
    calls: HashMap<String, Call>,
    owners: HashMap<String, Option<String>>,
    cancels: Vec<(f64, u64, String)>,
    cancel_calls: Vec<(f64, String)>,
    deaths: Vec<(f64, String)>,
    offers: Vec<(f64, String, String)>,
    timeouts: Vec<(f64, String, String)>,
    losses: Vec<(f64, u64)>,
    late_answers: Vec<(f64, u64, String)>,
    refused_submits: BTreeSet<(String, String)>,
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
            calls: HashMap::new(),
            owners: HashMap::new(),
            cancels: Vec::new(),
            cancel_calls: Vec::new(),
            deaths: Vec::new(),
            offers: Vec::new(),
            timeouts: Vec::new(),
            losses: Vec::new(),
            late_answers: Vec::new(),
            refused_submits: BTreeSet::new(),
        }
    }

    fn call(&mut self, call_id: &str) -> &mut Call {
        self.calls.entry(call_id.to_owned()).or_default()
    }

    /// Takes one more event.
    pub fn visit(&mut self, event: &Event) {
        let (t, seq) = (event.t, event.seq);
        match &event.kind {
            EventKind::Spawn { agent, owner, .. } => {
                self.owners
                    .insert(agent.to_string(), owner.as_deref().map(str::to_owned));
            }
            EventKind::Request {
                call_id,
                agent,
                window_s,
                ..
            } => {
                let call = self.call(call_id);
                call.agent = agent.to_string();
                call.window_end = window_s.filter(|w| *w > 0.0).map(|w| t + w);
                (call.request_seq, call.request_t) = (seq, t);
            }
            EventKind::Result { call_id, .. } => {
                let kind = event.kind.result_kind();
                let call = self.call(call_id);
                call.first = call.first.or(kind);
            }
            EventKind::Offer { call_id, answerer } => {
                self.offers.push((t, call_id.to_string(), answerer.to_string()));
            }
            EventKind::Accept {
                call_id, answerer, ..
            } => self.accepted(call_id, answerer, t),
            EventKind::Decline {
                call_id,
                answerer,
                reason,
                ..
            } if reason == "offer_timeout" => {
                self.timeouts.push((t, call_id.to_string(), answerer.to_string()));
            }
            EventKind::Hold { call_id, .. } => self.call(call_id).holds.push((t, true)),
            EventKind::Answer {
                call_id, answerer, ..
            } => {
                let call = self.call(call_id);
                call.answers.push((t, answerer.to_string(), seq));
                call.contacts.push((t, answerer.to_string()));
            }
            EventKind::Refused {
                call_id,
                answerer,
                what,
                reason,
            } => self.refused(call_id, answerer, what, reason, t),
            EventKind::LateAnswer { call_id, .. } => {
                self.call(call_id).late = true;
                self.late_answers.push((t, seq, call_id.to_string()));
            }
            EventKind::Withdraw { call_id, reason, .. } if reason == "cancel_call" => {
                self.call(call_id).withdrawn_by_cancel = true;
            }
            EventKind::Cancel { agent } => self.cancels.push((t, seq, agent.to_string())),
            EventKind::CancelCall { call_id } => self.cancel_calls.push((t, call_id.to_string())),
            EventKind::Crash { answerer, .. } => self.deaths.push((t, answerer.to_string())),
            EventKind::ProcessLoss { .. } => self.losses.push((t, seq)),
            _ => {}
        }
    }

    fn accepted(&mut self, call_id: &str, answerer: &str, t: f64) {
        let due = self.fixed.get(answerer).map(|s| (t + s, answerer.to_owned()));
        let call = self.call(call_id);
        call.owner = Some(answerer.to_owned());
        call.due.extend(due);
        call.accepts.push((t, answerer.to_owned()));
        call.contacts.push((t, answerer.to_owned()));
    }

    fn refused(&mut self, call_id: &str, answerer: &str, what: &str, reason: &str, t: f64) {
        match what {
            "accept" => {
                let call = self.call(call_id);
                call.contacts.push((t, answerer.to_owned()));
                call.accepts.push((t, answerer.to_owned()));
            }
            "hold" => self.call(call_id).holds.push((t, false)),
            "submit" if reason == "owner_dead" => {
                self.refused_submits
                    .insert((call_id.to_owned(), answerer.to_owned()));
            }
            _ => {}
        }
    }

    /// Whether `agent`'s turn is fired by a signal of `cancelled` (itself or an
    /// agent it descends from).
    fn under(&self, agent: &str, cancelled: &str) -> bool {
        let mut at = Some(agent.to_owned());
        let mut hops = 0;
        while let Some(name) = at {
            if name == cancelled {
                return true;
            }
            hops += 1;
            if hops > 64 {
                return false;
            }
            at = self.owners.get(&name).cloned().flatten();
        }
        false
    }

    /// The coverage of the events seen.
    pub fn finish(self) -> Coverage {
        let mut coverage = Coverage::default();
        let mut seen = BTreeSet::new();
        let mut ids: Vec<&String> = self.calls.keys().collect();
        ids.sort();
        for id in ids {
            let call = &self.calls[id];
            self.windows(&mut coverage, &mut seen, call);
            self.cancels_of(&mut coverage, &mut seen, id, call);
            self.deaths_of(&mut coverage, &mut seen, id, call);
            self.answerers_of(&mut coverage, &mut seen, call);
        }
        self.offer_timeouts(&mut coverage, &mut seen);
        self.losses(&mut coverage, &mut seen);
        coverage
    }

    fn windows(&self, coverage: &mut Coverage, seen: &mut BTreeSet<&'static str>, call: &Call) {
        let Some(end) = call.window_end else { return };
        let close = |t: f64| (t - end).abs() <= RACE_WINDOW_S;
        let side = if call.first == Some(ResultKind::Pending) {
            "expiry"
        } else {
            "answer"
        };
        if call.answers.iter().any(|(t, _, _)| close(*t)) {
            coverage.reached("answer_vs_expiry", side, seen);
        }
        if let Some((_, taken)) = call.holds.iter().find(|(t, _)| close(*t)) {
            coverage.reached("hold_vs_expiry", if *taken { "hold" } else { "expiry" }, seen);
        }
    }

    fn cancels_of(&self, coverage: &mut Coverage, seen: &mut BTreeSet<&'static str>, id: &str, call: &Call) {
        let signals: Vec<(f64, Option<u64>)> = self
            .cancels
            .iter()
            .filter(|(_, _, agent)| self.under(&call.agent, agent))
            .map(|(t, seq, _)| (*t, Some(*seq)))
            .chain(
                self.cancel_calls
                    .iter()
                    .filter(|(_, c)| c == id)
                    .map(|(t, _)| (*t, None)),
            )
            .collect();
        for (t, seq) in signals {
            let due_then = call.due.iter().any(|(d, _)| (d - t).abs() <= RACE_WINDOW_S);
            if call
                .answers
                .iter()
                .any(|(a, _, _)| (a - t).abs() <= RACE_WINDOW_S)
                || due_then
            {
                let cancelled =
                    call.first == Some(ResultKind::Error(ErrorCode::Aborted)) || call.withdrawn_by_cancel;
                coverage.reached(
                    "answer_vs_cancel",
                    if cancelled { "cancel" } else { "answer" },
                    seen,
                );
            }
            if let Some(cancel_seq) = seq.filter(|_| (call.request_t - t).abs() <= RACE_WINDOW_S) {
                let side = if call.request_seq < cancel_seq {
                    "request"
                } else {
                    "cancel"
                };
                coverage.reached("request_vs_cancel", side, seen);
            }
        }
    }

    fn deaths_of(&self, coverage: &mut Coverage, seen: &mut BTreeSet<&'static str>, id: &str, call: &Call) {
        for (due, owner) in &call.due {
            let died = self
                .deaths
                .iter()
                .any(|(d, a)| a == owner && (d - due).abs() <= RACE_WINDOW_S);
            let submitted = call.answers.iter().any(|(_, a, _)| a == owner);
            if died && !submitted {
                coverage.reached("submit_vs_owner_death", "death", seen);
            }
        }
        for (t, answerer, _) in &call.answers {
            let died = self
                .deaths
                .iter()
                .any(|(d, a)| a == answerer && (d - t).abs() <= RACE_WINDOW_S);
            if died {
                let refused = self.refused_submits.contains(&(id.to_owned(), answerer.clone()));
                coverage.reached(
                    "submit_vs_owner_death",
                    if refused { "death" } else { "submit" },
                    seen,
                );
            }
        }
    }

    fn answerers_of(&self, coverage: &mut Coverage, seen: &mut BTreeSet<&'static str>, call: &Call) {
        for (i, (t, a)) in call.contacts.iter().enumerate() {
            let rival = call.contacts[i + 1..]
                .iter()
                .find(|(u, b)| b != a && (u - t).abs() <= RACE_WINDOW_S);
            if let (Some(_), Some(owner)) = (rival, call.owner.as_deref()) {
                let side = if owner == a { "first" } else { "second" };
                coverage.reached("two_answerers", side, seen);
            }
        }
    }

    fn offer_timeouts(&self, coverage: &mut Coverage, seen: &mut BTreeSet<&'static str>) {
        let timeout = self.offer_timeout_s;
        for (t, call_id, answerer) in &self.offers {
            let end = t + timeout;
            let Some(call) = self.calls.get(call_id) else {
                continue;
            };
            let close = |u: f64| (u - end).abs() <= RACE_WINDOW_S;
            let accepted = call.owner.as_deref() == Some(answerer)
                && call.accepts.iter().any(|(u, a)| a == answerer && close(*u));
            let timed_out = self
                .timeouts
                .iter()
                .any(|(u, c, a)| c == call_id && a == answerer && close(*u))
                && call.accepts.iter().any(|(u, a)| a == answerer && close(*u));
            if accepted {
                coverage.reached("accept_vs_offer_timeout", "accept", seen);
            } else if timed_out {
                coverage.reached("accept_vs_offer_timeout", "timeout", seen);
            }
        }
    }

    fn losses(&self, coverage: &mut Coverage, seen: &mut BTreeSet<&'static str>) {
        for (lost_t, lost_seq) in &self.losses {
            let decided = self
                .late_answers
                .iter()
                .any(|(t, seq, _)| seq < lost_seq && lost_t - t <= RACE_WINDOW_S);
            if decided {
                coverage.reached("late_answer_vs_loss", "answer", seen);
                continue;
            }
            let mut ids: Vec<&String> = self.calls.keys().collect();
            ids.sort();
            let lost = ids.iter().any(|id| {
                let call = &self.calls[*id];
                call.first == Some(ResultKind::Pending)
                    && call.due.iter().any(|(d, _)| (d - lost_t).abs() <= RACE_WINDOW_S)
                    && !self
                        .late_answers
                        .iter()
                        .any(|(_, seq, c)| c == *id && seq < lost_seq)
            });
            if lost {
                coverage.reached("late_answer_vs_loss", "loss", seen);
            }
        }
    }
}
