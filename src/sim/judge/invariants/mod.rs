//! The invariant checker of SPEC §6: one pass over a run's events, as they come
//! ([`Checker::visit`]), with what is still owed settled at the end
//! ([`Checker::finish`]). Each violation names the invariant, the callId and the
//! `seq` of the event at fault.
//!
//! Its parts: `calls` (what it knows of each call, with indexes over the open
//! ones), `answers` (well-formed batches), `texts::content` (the answers
//! delivered are the batch submitted), `delivery` (user messages decided and
//! received), `texts::message` (the exact text SPEC §2.4 gives a user
//! message), `liveness` (what must close or move on at an instant, and what
//! must have happened by the end),
//! `terminal` (the projection against the broker's final state). Protocol
//! conformance ([`crate::sim::judge::protocol_check`]) runs inside it, on the
//! same turn tree ([`crate::sim::judge::turns`]).
//!
//! Cost: each event costs O(1) amortised, whatever the number of calls, agents
//! and answerers: hash lookups, a window deadline in an ordered set, a walk up one
//! turn chain (the spawn depth) when a call settles. A stop touches its agent's
//! open calls, a death the calls its answerer attended, a process loss the calls
//! open at it: each as many as the events the broker writes for them. Only
//! [`Checker::finish`] reads every call, once. It never reads a clock or
//! anything but the events (and, at the end, the broker's final state).

mod answers;
mod calls;
mod delivery;
mod liveness;
mod terminal;
mod texts;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::num::NonZeroU64;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::Value;

use crate::event::{Event, EventKind, RawQuestions};
use crate::projection::Projection;
use crate::protocol::{BrokerStatus, CallId, Name};
use crate::sim::engine::output::Limit;
use crate::sim::judge::call_ix::{CallIds, CallIx};
use crate::sim::judge::protocol_check::{PROTOCOL_CONFORMANCE, ProtocolChecker};
use crate::sim::judge::reread::Reread;
use crate::sim::judge::turns::{Fire, TurnTree};
use crate::tool::{AnswerItem, ErrorCode, ResultKind, Schema};
use calls::{CallInfo, Calls, MustClose};
use delivery::{Delivery, LATE_ANSWER_REACHES_CALLER, PENDING_END_REACHES_CALLER};
use liveness::{CANCEL_CALL_SETTLES, Closure, Liveness, NO_ORPHANED_WAIT, STOP_AGENT_SETTLES};
use texts::content::{self, Submitted};
use texts::{message, result_text};

pub use crate::sim::judge::violation::Violation;

/// Tolerance for "at that instant" and "within its window" on the virtual clock,
/// where both are exact: float rounding only.
pub const VIRTUAL_TOLERANCE_S: f64 = 1e-6;
/// The same on the real clock, where timers fire and messages arrive a little
/// late: lateness below this is measured (`lateness_s` in the summary), not a
/// violation.
pub const REAL_TOLERANCE_S: f64 = 0.1;

/// `pending_text_exact`: a `pending` result is exactly the contract's text for
/// its callId (SPEC §2.4), and is not marked as an error.
pub const PENDING_TEXT_EXACT: &str = "pending_text_exact";

/// `result_text_exact`: a tool result that is not `pending` (answers, an
/// error) is exactly the text SPEC §2.4 gives for what it carries.
pub const RESULT_TEXT_EXACT: &str = "result_text_exact";

/// The invariants checked on every run, by name.
pub const INVARIANTS: [&str; 17] = [
    "exactly_once",
    "legacy_never_pending_or_keyed",
    "window_respected",
    "no_answer_lost",
    "delegated_never_offered",
    "turn_cancel_settles_descendants",
    "answers_well_formed",
    LATE_ANSWER_REACHES_CALLER,
    "timed_survive_loss_legacy_do_not",
    "projection_matches_broker",
    PENDING_TEXT_EXACT,
    RESULT_TEXT_EXACT,
    PENDING_END_REACHES_CALLER,
    CANCEL_CALL_SETTLES,
    STOP_AGENT_SETTLES,
    NO_ORPHANED_WAIT,
    PROTOCOL_CONFORMANCE,
];

/// Whether an `end` event's reason is a limit that stopped the run.
fn is_limit(reason: &str) -> bool {
    [Limit::EventsMax, Limit::VirtualSMax]
        .iter()
        .any(|limit| limit.as_str() == reason)
}

/// Whether `text` is exactly `ToolResult::pending(call_id)`'s text: the fixed
/// head, the callId as a JSON string, the fixed tail (serialised once, not per
/// result).
fn is_pending_text(text: &str, call_id: &str) -> bool {
    let (head, tail) = crate::tool::pending_parts();
    let quoted = serde_json::to_string(call_id).expect("a string serialises");
    text.len() == head.len() + quoted.len() + tail.len()
        && text.starts_with(head)
        && text.ends_with(tail)
        && text[head.len()..head.len() + quoted.len()] == quoted
}

/// The violations found so far.
#[derive(Default)]
struct Violations(Vec<Violation>);

/// Answers that reached the model: a tool result's `answers`, or a late
/// answer (its answer items and the user message the agent reads).
#[derive(Clone, Copy)]
enum Delivered<'a> {
    Result(&'a Value),
    Late {
        answers: &'a [AnswerItem],
        message: &'a str,
    },
}

impl Delivered<'_> {
    fn what(self) -> &'static str {
        match self {
            Delivered::Result(_) => "the tool result",
            Delivered::Late { .. } => "the late answer",
        }
    }
}

impl Violations {
    fn push(&mut self, invariant: &'static str, call_id: &str, seq: u64, detail: String) {
        let call_id = (!call_id.is_empty()).then(|| call_id.to_owned());
        self.0.push(Violation {
            invariant,
            call_id,
            seq,
            detail,
        });
    }
}

/// The checker's state between events.
#[derive(Default)]
pub struct Checker {
    tolerance_s: f64,
    calls: Calls,
    turns: TurnTree,
    /// Each child's owner. Roots have no entry: most agents of a load are
    /// roots, and an entry of a name and no owner was ~40 bytes an agent.
    owners: FxHashMap<Name, Name>,
    stopped: FxHashSet<Name>,
    /// The batches submitted and not yet judged, by call (one each at most):
    /// each is owed its settlement or its refusal as the very next event about
    /// its call. A batch of one call does not wait on another's verdict.
    answers: FxHashMap<CallId, Submitted>,
    /// The batch the event being visited delivers (its settlement or late
    /// answer), whose answers it must carry.
    delivering: Option<Submitted>,
    /// Calls whose batch a second tool result delivered (`exactly_once`): a
    /// late answer after it carries that batch again, not answers of nobody's.
    answered_twice: FxHashSet<CallId>,
    /// When each timed window ends: (end in ns, request `seq`, callId), earliest
    /// first. Among windows that end together the request's `seq` (unique per
    /// call) orders them, so the callId is compared only between two entries of
    /// one call (a held call whose holder died is entered again; the second
    /// entry finds the call already judged). A heap, not a B-tree: windows mostly
    /// end in the order they opened, and a B-tree appended to in order keeps its
    /// nodes about half full (64 bytes a call at a tie, 32 in the heap's vector).
    deadlines: BinaryHeap<Reverse<(u64, u64, CallId)>>,
    delivery: Delivery,
    liveness: Liveness,
    /// Whether a restart followed the last process loss, and the `seq` of the
    /// last restart (0 if none).
    restarted: bool,
    restart_seq: u64,
    last_seq: u64,
    /// Whether the log says its run ended (an `end` event): what must hold only
    /// once a run is over is checked only then (a log cut short, killed or still
    /// going is judged as far as it goes).
    ended: bool,
    protocol: ProtocolChecker,
    /// Questions texts as read ([`Reread`]: the copies of a row ask the same).
    questions_read: Reread<answers::Asking<'static>>,
    /// Answers results' texts as read (one answerer's policy gives many calls
    /// the same).
    results_read: Reread<result_text::AnswersRead>,
    last_expected: content::LastExpected,
    out: Violations,
}

/// Checks every invariant over `events` and returns the violations, in order.
/// `broker` is the broker's final state, when known: the projection folded from
/// the events must equal it.
pub fn check(events: &[Event], broker: Option<&BrokerStatus>, tolerance_s: f64) -> Vec<Violation> {
    let mut checker = Checker::new(tolerance_s);
    for event in events {
        checker.visit(event);
    }
    let projection = broker.map(|_| Projection::fold(events));
    checker.finish(broker.zip(projection.as_ref()))
}

impl Checker {
    /// A checker that counts times within `tolerance_s` as one instant.
    pub fn new(tolerance_s: f64) -> Checker {
        Checker {
            tolerance_s,
            ..Checker::default()
        }
    }

    fn violate(&mut self, invariant: &'static str, call_id: &str, seq: u64, detail: String) {
        self.out.push(invariant, call_id, seq, detail);
    }

    /// Takes one more event; gives the number of the callId it names, if it
    /// names one (what the coverage pass keeps its records by).
    pub fn visit(&mut self, event: &Event) -> Option<CallIx> {
        let ix = self.calls.intern_event(event);
        self.visit_numbered(event, ix);
        ix
    }

    /// Every callId the log named so far, with its number.
    pub fn call_ids(&self) -> &CallIds {
        self.calls.ids()
    }

    fn visit_numbered(&mut self, event: &Event, ix: Option<CallIx>) {
        let (seq, t) = (event.seq, event.t);
        self.last_seq = seq;
        self.liveness
            .advance(t, self.tolerance_s, &mut self.calls, &mut self.out);
        self.follow_turns(&event.kind, seq, t);
        self.protocol.visit(event, ix, &self.turns);
        self.windows_passed(seq, t);
        self.account_answer(event);
        match &event.kind {
            EventKind::Spawn { agent, owner, .. } => {
                match owner {
                    Some(owner) => self.owners.insert(agent.clone(), owner.clone()),
                    None => self.owners.remove(&**agent),
                };
                self.stopped.remove(&**agent);
            }
            EventKind::Stop { agent } => self.stop(agent, seq, t),
            EventKind::Request { .. } => self.request(&event.kind, seq, t),
            EventKind::ProcessLoss { .. } => self.process_loss(seq),
            // A run stopped at a limit did not end: work was still due (SPEC §5,
            // "a run ends when nothing can change any more"), so what only the
            // end settles is judged as in a log cut short. (A waterfall of 64 at
            // 10^5 roots stopped at 10^7 events reported every call's offer
            // still out as `no_orphaned_wait`.)
            EventKind::End { reason } => self.ended = !is_limit(reason),
            EventKind::Restart { .. } => {
                self.restarted = true;
                self.restart_seq = seq;
            }
            EventKind::CancelCall { call_id } => {
                let obliged = MustClose {
                    invariant: CANCEL_CALL_SETTLES,
                    seq,
                    t,
                };
                self.liveness.must_close(&mut self.calls, call_id, obliged);
            }
            EventKind::Crash { answerer, .. } => {
                self.liveness.dead.insert(answerer.clone());
                for call_id in self.calls.attended_by(answerer) {
                    self.liveness.attend(&mut self.calls, &call_id, seq);
                }
            }
            _ => self.visit_call_event(event),
        }
    }

    /// The events an answerer or the broker's settlement writes about one call.
    fn visit_call_event(&mut self, event: &Event) {
        let (seq, t) = (event.seq, event.t);
        match &event.kind {
            EventKind::Offer { call_id, answerer } => self.offer(call_id, answerer, seq),
            EventKind::Accept {
                call_id, answerer, ..
            } => self.calls.accept(call_id, answerer),
            EventKind::Decline {
                call_id,
                answerer,
                reason,
                ..
            } => self.decline(call_id, answerer, reason == "dead", seq, t),
            EventKind::Hold {
                call_id, answerer, ..
            } => {
                let holder = self.calls.who(answerer);
                if let Some(info) = self.calls.get_mut(call_id) {
                    let rare = info.rare_mut();
                    rare.held_at.get_or_insert(t);
                    rare.holder = Some(holder);
                }
            }
            EventKind::Result { call_id, .. } => self.result(call_id, event),
            EventKind::Answer {
                call_id,
                answerer,
                batch,
                ..
            } => {
                let submitted = Submitted {
                    call_id: call_id.clone(),
                    answerer: answerer.clone(),
                    seq,
                    batch: batch.clone(),
                };
                self.answers.insert(call_id.clone(), submitted);
            }
            EventKind::LateAnswer {
                call_id,
                answers,
                message,
                ..
            } => self.late_answer(call_id, seq, answers, message),
            EventKind::Withdraw {
                call_id,
                reason,
                message,
                ..
            } => self.withdraw(call_id, seq, reason, message.as_ref()),
            EventKind::UserMessage {
                call_id,
                agent,
                message,
            } => {
                let info = self.calls.get_mut(call_id);
                self.delivery
                    .received((call_id, info), seq, agent, message, &mut self.out);
            }
            _ => {}
        }
    }

    /// The turn tree follows spawns, new turns and signals; an agent the log never
    /// spawned counts as a root from its first request or signal.
    fn follow_turns(&mut self, kind: &EventKind, seq: u64, t: f64) {
        match kind {
            EventKind::Spawn { agent, owner, .. } => self.turns.spawn(agent, owner.as_deref()),
            EventKind::NewTurn { agent } => self.turns.new_turn(agent),
            EventKind::Request { agent, .. } | EventKind::Cancel { agent } => {
                if self.turns.current(agent).is_none() {
                    self.turns.spawn(agent, None);
                }
                if matches!(kind, EventKind::Cancel { .. }) {
                    self.turns.fire(agent, Fire { seq, t });
                }
            }
            EventKind::ProcessLoss { .. } => self.turns.process_loss(),
            _ => {}
        }
    }

    fn stop(&mut self, agent: &Name, seq: u64, t: f64) {
        self.stopped.insert(agent.clone());
        let obliged = MustClose {
            invariant: STOP_AGENT_SETTLES,
            seq,
            t,
        };
        for call_id in self.calls.open_of(agent) {
            self.liveness.must_close(&mut self.calls, &call_id, obliged);
        }
    }

    fn offer(&mut self, call_id: &CallId, answerer: &Name, seq: u64) {
        self.after_loss(call_id, seq, false);
        let info = self.calls.get_mut(call_id);
        self.liveness
            .offered((call_id, info), answerer, seq, &mut self.out);
        self.calls.offer(call_id, answerer);
        if let Some(info) = self.calls.get_mut(call_id)
            && info.delegated
            && !info.delegation_violated
        {
            info.delegation_violated = true;
            let detail = "a delegated caller's request was offered".into();
            self.violate("delegated_never_offered", call_id, seq, detail);
        }
    }

    fn decline(&mut self, call_id: &CallId, answerer: &str, dead: bool, seq: u64, t: f64) {
        if dead {
            self.holder_died(call_id, answerer, t);
        }
        self.calls.decline(call_id, answerer, dead);
        if self.calls.get(call_id).is_some_and(CallInfo::open) {
            self.liveness.attend(&mut self.calls, call_id, seq);
        }
    }

    fn request(&mut self, kind: &EventKind, seq: u64, t: f64) {
        let EventKind::Request {
            call_id,
            agent,
            schema,
            keyed,
            questions,
            questions_text,
            window_s,
            ..
        } = kind
        else {
            return;
        };
        if *schema == Schema::Legacy && *keyed {
            let detail = "a legacy request is keyed".into();
            self.violate("legacy_never_pending_or_keyed", call_id, seq, detail);
        }
        if self.calls.contains(call_id) {
            let detail = "a second request under the same callId".into();
            self.violate("exactly_once", call_id, seq, detail);
        }
        let mut info = CallInfo::new(agent.clone(), *schema, seq, t);
        info.questions = match questions_text {
            Some(text) => RawQuestions::new(text).ok(),
            None => Some(questions.clone()),
        };
        info.window_s = *window_s;
        info.delegated = self.is_delegated(agent);
        info.set_turn(self.turns.current(agent));
        if let (Schema::Timed, Some(w)) = (schema, window_s)
            && *w > 0.0
        {
            (self.deadlines).push(Reverse((crate::protocol::nanos(t + w), seq, call_id.clone())));
        }
        self.calls.insert(call_id, info);
        self.liveness.attend(&mut self.calls, call_id, seq);
    }

    /// A live child owned by a live agent (ownership ends when either stops).
    fn is_delegated(&self, agent: &str) -> bool {
        !self.stopped.contains(agent)
            && self
                .owners
                .get(agent)
                .is_some_and(|owner| !self.stopped.contains(&**owner))
    }

    /// Every window that ended before `t` (and its tolerance) must have seen its
    /// call settle, unless it is held (SPEC §3.4). The event that shows it is the
    /// first one past the window's end: the late result itself, or anything else.
    fn windows_passed(&mut self, seq: u64, t: f64) {
        let now = crate::protocol::nanos((t - self.tolerance_s).max(0.0));
        while self
            .deadlines
            .peek()
            .is_some_and(|Reverse((end, _, _))| *end < now)
        {
            let Some(Reverse((_, _, call_id))) = self.deadlines.pop() else {
                break;
            };
            let Some(info) = self.calls.get_mut(&call_id) else {
                continue;
            };
            let waiting = info.waiting() && info.rare().held_at.is_none();
            if waiting && !info.window_violated {
                info.window_violated = true;
                let (w, from) = (info.window_s.unwrap_or(0.0), info.request_t);
                let detail =
                    format!("still waiting at {t} s, past its window of {w} s from {from} s, unheld");
                self.violate("window_respected", &call_id, seq, detail);
            }
        }
    }

    /// The holder of a held call died: its hold dies with it, and the call is back
    /// in its window (SPEC §3.5): past it, it must go pending at once.
    fn holder_died(&mut self, call_id: &CallId, answerer: &str, t: f64) {
        let Some(holder) = self.calls.who_of(answerer) else {
            return; // it held nothing
        };
        let Some(info) = self.calls.get_mut(call_id) else {
            return;
        };
        if info.rare().holder != Some(holder) || info.result.is_some() {
            return;
        }
        let rare = info.rare_mut();
        rare.held_at = None;
        rare.holder = None;
        if let Some(w) = info.window_s.filter(|w| *w > 0.0) {
            let end = (info.request_t + w).max(t);
            let entry = (crate::protocol::nanos(end), info.request_seq, call_id.clone());
            self.deadlines.push(Reverse(entry));
        }
    }

    /// The event right after a batch about its call must account for it: its
    /// settlement (answers, or the late answer), which must carry its answers,
    /// or its refusal to the sender.
    fn account_answer(&mut self, event: &Event) {
        self.delivering = None;
        if self.answers.is_empty() {
            return;
        }
        let Some(submitted) = event.kind.call_id().and_then(|c| self.answers.remove(c)) else {
            return;
        };
        let delivers = match &event.kind {
            EventKind::Result { .. } => event.kind.result_kind() == Some(ResultKind::Answers),
            EventKind::LateAnswer { .. } => true,
            _ => false,
        };
        let refused = matches!(&event.kind, EventKind::Refused { answerer, what, .. }
            if *answerer == submitted.answerer && what == "submit");
        if delivers {
            self.delivering = Some(submitted);
        } else if !refused {
            let detail = format!(
                "a batch from {} was neither delivered nor refused",
                submitted.answerer
            );
            self.violate("no_answer_lost", &submitted.call_id, submitted.seq, detail);
        }
    }

    /// Everything in memory dies: each open legacy call is lost, each open timed
    /// one pending from the restart on; answerers and their offers are gone; a
    /// message owed to a stopped agent can no longer arrive.
    fn process_loss(&mut self, seq: u64) {
        for call_id in self.calls.open_ids() {
            let Some(info) = self.calls.get_mut(&call_id) else {
                continue;
            };
            info.take_must_close();
            let lost = match info.schema {
                Schema::Legacy if info.result.is_none() => {
                    info.rare_mut().lost = NonZeroU64::new(seq);
                    true
                }
                Schema::Timed => {
                    let rare = info.rare_mut();
                    rare.survived = NonZeroU64::new(seq);
                    rare.taken_up = false;
                    info.pending = true;
                    false
                }
                Schema::Legacy => false,
            };
            if lost {
                self.calls.detach(&call_id);
            }
        }
        self.calls.nobody_attends();
        self.liveness.process_loss();
        self.delivery.process_loss(&self.stopped);
        self.restarted = false;
    }

    /// Notes an event about a call after a process loss: a legacy call lost at it
    /// must not settle; a timed one must not return a tool result any more.
    fn after_loss(&mut self, call_id: &str, seq: u64, is_result: bool) {
        let restarted = self.restarted;
        let Some(info) = self.calls.get_mut(call_id) else {
            return;
        };
        if info.rare().lost.is_some() {
            let detail = "a legacy call lost at a process loss went on".into();
            self.violate("timed_survive_loss_legacy_do_not", call_id, seq, detail);
        } else if info.rare().survived.is_some() {
            if restarted {
                info.rare_mut().taken_up = true;
            }
            if is_result {
                let detail = "a tool result after the process loss".into();
                self.violate("timed_survive_loss_legacy_do_not", call_id, seq, detail);
            }
        }
    }

    fn result(&mut self, call_id: &CallId, event: &Event) {
        let (seq, t) = (event.seq, event.t);
        let kind = event.kind.result_kind().expect("a result has a kind");
        self.pending_text(call_id, &event.kind, kind, seq);
        // An answers result is read once, for its text and its answers.
        let answered = match (kind, &event.kind) {
            (ResultKind::Answers, EventKind::Result { result, .. }) => {
                Some((self.results_read).read(result, result_text::AnswersRead::read))
            }
            _ => None,
        };
        self.result_text(call_id, &event.kind, kind, seq, answered.as_deref());
        let answered = answered.as_deref().map(|read| &read.value);
        self.after_loss(call_id, seq, true);
        let Some(info) = self.calls.get_mut(call_id) else {
            // Invalid arguments settle before any request; nothing else does.
            if kind != ResultKind::Error(ErrorCode::InvalidArguments) {
                self.violate("exactly_once", call_id, seq, "a result without a request".into());
            }
            return;
        };
        if info.result.is_some() {
            let detail = "a second result for the call".into();
            self.violate("exactly_once", call_id, seq, detail);
            if self.delivering.is_some() {
                self.answered_twice.insert(call_id.clone());
            }
            return;
        }
        if info.waiting() {
            self.turn_signals_met(call_id, (seq, t));
        }
        if kind == ResultKind::Error(ErrorCode::Aborted) {
            self.aborted_for_a_cause(call_id, seq);
        }
        let Some(info) = self.calls.get_mut(call_id) else {
            return;
        };
        info.result = Some((seq, t, kind));
        info.pending = kind == ResultKind::Pending;
        if info.pending && info.schema == Schema::Legacy {
            let detail = "a legacy call returned pending".into();
            self.violate("legacy_never_pending_or_keyed", call_id, seq, detail);
        }
        self.settled(call_id, seq, kind, answered);
    }

    /// An `ABORTED` result has a cause (SPEC §2.5, §3.8): a turn signal of the
    /// call's turn or a turn it derives from fired, or the call was cancelled
    /// (`cancel_call`), or its agent stopped, while it waited. A broker that
    /// aborts a call for nothing breaks the protocol.
    fn aborted_for_a_cause(&mut self, call_id: &str, seq: u64) {
        let Some(info) = self.calls.get(call_id) else {
            return;
        };
        let fired = info.turn().is_some_and(|turn| self.turns.fired(turn));
        if !fired && !info.rare().asked_to_close {
            let detail = "ABORTED with no turn signal, cancel_call or stop of its agent".into();
            self.violate(PROTOCOL_CONFORMANCE, call_id, seq, detail);
        }
    }

    /// A first result that is not `pending` settles the call: the delegation
    /// rule, the answers' shape and what had to close it are checked.
    fn settled(&mut self, call_id: &CallId, seq: u64, kind: ResultKind, answered: Option<&Value>) {
        if kind == ResultKind::Pending {
            return;
        }
        if let Some(info) = self.calls.get_mut(call_id) {
            Liveness::closed((call_id, info), seq, Closure::Result(kind), &mut self.out);
            if kind == ResultKind::Error(ErrorCode::DelegatedCaller)
                && info.offered
                && !info.delegation_violated
            {
                info.delegation_violated = true;
                let detail = "a delegated caller's request was offered".into();
                self.out.push("delegated_never_offered", call_id, seq, detail);
            }
        }
        self.calls.detach(call_id);
        if let Some(items) = answered.and_then(|value| value.get("answers")) {
            self.answers_delivered(call_id, seq, items, Delivered::Result(items), true);
        }
    }

    /// A `pending` result's text must be the contract's, for its own callId.
    fn pending_text(&mut self, call_id: &str, event: &EventKind, kind: ResultKind, seq: u64) {
        let EventKind::Result { result, is_error, .. } = event else {
            return;
        };
        if kind != ResultKind::Pending {
            return;
        }
        if *is_error {
            let detail = "a pending result is marked as an error".to_owned();
            self.violate(PENDING_TEXT_EXACT, call_id, seq, detail);
        } else if !is_pending_text(result, call_id) {
            let detail = format!("the pending text is not the contract's for {call_id}: {result}");
            self.violate(PENDING_TEXT_EXACT, call_id, seq, detail);
        }
    }

    /// A result that is not `pending` must be the text SPEC §2.4 gives for what
    /// it carries (answers of a call the log requested: its schema says which
    /// shape).
    fn result_text(
        &mut self,
        call_id: &str,
        event: &EventKind,
        kind: ResultKind,
        seq: u64,
        answered: Option<&result_text::AnswersRead>,
    ) {
        let EventKind::Result { result, is_error, .. } = event else {
            return;
        };
        let problem = match kind {
            ResultKind::Pending => None,
            ResultKind::Error(code) => result_text::error_problem(code, result, *is_error),
            ResultKind::Answers => match (self.calls.get(call_id), answered) {
                (Some(info), Some(read)) => read.problem(info.schema == Schema::Timed, result, *is_error),
                _ => None,
            },
        };
        if let Some(problem) = problem {
            self.violate(RESULT_TEXT_EXACT, call_id, seq, problem);
        }
    }

    /// The call's first result came at `(seq, t)`: every turn signal that fired
    /// while it waited (its turn's or one its turn derives from) had to settle it
    /// at that signal's instant.
    fn turn_signals_met(&mut self, call_id: &str, (seq, t): (u64, f64)) {
        let Some(info) = self.calls.get(call_id) else {
            return;
        };
        let (request_seq, Some(turn)) = (info.request_seq, info.turn()) else {
            return;
        };
        let late: Vec<Fire> = self
            .turns
            .fires(turn)
            .filter(|f| f.seq > request_seq && (t - f.t).abs() > self.tolerance_s)
            .collect();
        for fire in late {
            let detail = format!(
                "still waiting after the turn signal at {} s (settled at seq {seq})",
                fire.t
            );
            self.violate("turn_cancel_settles_descendants", call_id, fire.seq, detail);
        }
    }

    /// A pending call closes, once: whether it may (it went pending and had not
    /// closed).
    fn closure(&mut self, call_id: &str, seq: u64) -> bool {
        let Some(info) = self.calls.get_mut(call_id) else {
            self.violate("exactly_once", call_id, seq, "a closure without a request".into());
            return false;
        };
        if !info.pending || info.closed {
            let why = if info.closed {
                "closed twice"
            } else {
                "closed without having gone pending"
            };
            // Closed all the same: nothing waits on it any more.
            info.closed = true;
            self.violate("exactly_once", call_id, seq, format!("a pending call {why}"));
            return false;
        }
        info.closed = true;
        true
    }

    fn late_answer(&mut self, call_id: &CallId, seq: u64, answers: &[AnswerItem], message: &Arc<str>) {
        let once = self.closure(call_id, seq);
        let items = serde_json::to_value(answers).unwrap_or(Value::Null);
        self.answers_delivered(call_id, seq, &items, Delivered::Late { answers, message }, once);
        if let Some(info) = self.calls.get_mut(call_id) {
            Liveness::closed((call_id, info), seq, Closure::LateAnswer, &mut self.out);
        }
        if let Some(info) = self.calls.get(call_id) {
            let decided = message::Decided::Late(answers);
            self.delivery
                .decided((call_id, info), seq, message, decided, &mut self.out);
        }
        self.calls.detach(call_id);
    }

    fn withdraw(&mut self, call_id: &CallId, seq: u64, reason: &str, message: Option<&Arc<str>>) {
        self.after_loss(call_id, seq, false);
        self.closure(call_id, seq);
        if let Some(info) = self.calls.get_mut(call_id) {
            let how = Closure::Withdraw(reason);
            Liveness::closed((call_id, info), seq, how, &mut self.out);
        }
        if let Some(info) = self.calls.get(call_id) {
            self.delivery
                .withdrawn((call_id, info), seq, reason, message, &mut self.out);
        }
        self.calls.detach(call_id);
    }

    /// Judges the answers a delivery gives the model (`items`: a tool result's
    /// `answers`, or a late answer's items as a `Value`), the call's questions
    /// read once for both checks: they must answer the questions in the shape
    /// of SPEC §2.4 (`answers_well_formed`); if they do and the call closes
    /// `once`, they must be the batch submitted ([`Self::as_submitted`]).
    fn answers_delivered(
        &mut self,
        call_id: &CallId,
        seq: u64,
        items: &Value,
        delivered: Delivered<'_>,
        once: bool,
    ) {
        // The questions' `Arc`, so that what is read from them borrows no call.
        let (questions, timed, known) = match self.calls.get(call_id) {
            Some(info) => (info.questions.clone(), info.schema == Schema::Timed, true),
            None => (None, false, false),
        };
        let text = questions.as_ref().map_or("[]", RawQuestions::text);
        let asking = (self.questions_read).read(text, |text| answers::Asking::read(text).into_owned());
        if known && let Some(problem) = asking.problem(timed, items) {
            self.violate("answers_well_formed", call_id, seq, problem);
            return;
        }
        if once {
            let asked = questions.is_some().then_some((timed, &asking));
            self.as_submitted(call_id, seq, delivered, asked);
        }
    }

    /// The answers a tool result or a late answer delivered must be those of
    /// the batch it delivers, the one submitted right before it about its call
    /// (SPEC §3.6 "one batch settles a call", §3.7): other answers lose that
    /// batch (`no_answer_lost`); a batch that breaks §3.6 settles nothing
    /// (`answers_well_formed`); answers with no batch came from no answerer
    /// (`protocol_conformance`: settlement only by the owner's batch). `asked`:
    /// the call's questions as read, with whether it is timed (none for a call
    /// the log did not request, or a questions text no model could have sent).
    fn as_submitted(
        &mut self,
        call_id: &CallId,
        seq: u64,
        delivered: Delivered<'_>,
        asked: Option<(bool, &Arc<answers::Asking<'static>>)>,
    ) {
        let Some(submitted) = self.delivering.take() else {
            if !self.answered_twice.contains(call_id) {
                let detail = format!("{} carries answers no answerer submitted", delivered.what());
                self.violate(PROTOCOL_CONFORMANCE, call_id, seq, detail);
            }
            return;
        };
        let Some((timed, asking)) = asked else {
            return;
        };
        let expected = self.last_expected.of(timed, asking, &submitted.batch);
        let expected = match &*expected {
            Ok(Some(expected)) => expected,
            Ok(None) => return,
            Err(defect) => {
                let detail = format!(
                    "a batch from {} that SPEC §3.6 refuses settled the call: {defect}",
                    submitted.answerer
                );
                self.violate("answers_well_formed", call_id, seq, detail);
                return;
            }
        };
        let problem = match delivered {
            Delivered::Result(items) if timed => expected.items_differ(items),
            Delivered::Result(answers) => expected.legacy_differs(answers),
            Delivered::Late { answers, message } => (expected.message_differs(message))
                .map(|p| format!("in its user message, {p}"))
                .or_else(|| {
                    expected
                        .items_read_differ(answers)
                        .map(|p| format!("in its answers, {p}"))
                }),
        };
        if let Some(problem) = problem {
            let (answerer, at) = (&submitted.answerer, submitted.seq);
            let detail = format!(
                "{} does not carry the batch {answerer} submitted (seq {at}): {problem}",
                delivered.what()
            );
            self.violate("no_answer_lost", call_id, seq, detail);
        }
    }

    /// Settles what is still owed and compares the folded projection with the
    /// broker's final state, when given. Returns every violation, by `seq`.
    ///
    /// What can only be owed once the run is over (a batch neither delivered nor
    /// refused, a question not taken up after a restart, the last instant's
    /// obligations, a call nothing can move on, a user message that never arrived)
    /// is checked only when the log says its run ended: in a log cut short the
    /// next line could still settle it.
    pub fn finish(mut self, broker: Option<(&BrokerStatus, &Projection)>) -> Vec<Violation> {
        self.waiting_at_end();
        let protocol = std::mem::take(&mut self.protocol).finish();
        self.out.0.extend(protocol);
        if self.ended {
            self.owed_at_the_end();
        }
        if let Some((broker, projection)) = broker {
            terminal::compare(
                broker,
                projection,
                (self.restart_seq, self.last_seq),
                &mut self.out,
            );
        }
        // Calls are kept in a hash map: the order of violations must not depend on it.
        let mut violations = self.out.0;
        violations.sort_by(|a, b| {
            (a.seq, &a.call_id, a.invariant, &a.detail).cmp(&(b.seq, &b.call_id, b.invariant, &b.detail))
        });
        violations
    }

    /// What the end of the run settles: nothing can arrive after it.
    fn owed_at_the_end(&mut self) {
        // In the order they were submitted: the report's order is the log's.
        let mut owed: Vec<Submitted> = std::mem::take(&mut self.answers).into_values().collect();
        owed.sort_by_key(|submitted| submitted.seq);
        for submitted in owed {
            let call_id = submitted.call_id.clone();
            let detail = format!(
                "a batch from {} was neither delivered nor refused",
                submitted.answerer
            );
            self.violate("no_answer_lost", &call_id, submitted.seq, detail);
        }
        self.not_taken_up();
        let liveness = std::mem::take(&mut self.liveness);
        liveness.finish(&mut self.calls, self.last_seq, &mut self.out);
        std::mem::take(&mut self.delivery).finish(&mut self.out);
    }

    /// A call that never got its first result was still waiting when a turn
    /// signal of its fired (before a process loss took it, or the run ended).
    fn waiting_at_end(&mut self) {
        let mut late = Vec::new();
        for (call_id, info) in self.calls.iter() {
            let (true, Some(turn)) = (info.result.is_none(), info.turn()) else {
                continue;
            };
            let until = info
                .rare()
                .lost
                .or(info.rare().survived)
                .map_or(u64::MAX, NonZeroU64::get);
            for fire in self.turns.fires(turn) {
                if fire.seq > info.request_seq && fire.seq < until {
                    late.push((call_id.clone(), fire));
                }
            }
        }
        for (call_id, fire) in late {
            let detail = format!("still waiting after the turn signal at {} s", fire.t);
            self.violate("turn_cancel_settles_descendants", &call_id, fire.seq, detail);
        }
    }

    /// After a restart, every timed question open at the loss must have been
    /// taken up again (offered, answered or withdrawn).
    fn not_taken_up(&mut self) {
        if !self.restarted {
            return;
        }
        let mut forgotten = Vec::new();
        for (call_id, info) in self.calls.iter() {
            let rare = info.rare();
            if let Some(seq) = rare
                .survived
                .map(NonZeroU64::get)
                .filter(|_| !rare.taken_up && !info.closed)
            {
                forgotten.push((call_id.clone(), seq));
            }
        }
        for (call_id, seq) in forgotten {
            if let Some(info) = self.calls.get_mut(&call_id) {
                info.orphan_reported = true;
            }
            let detail = "an open timed question was not taken up again after the restart".to_owned();
            self.violate("timed_survive_loss_legacy_do_not", &call_id, seq, detail);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_pending_text_is_exactly_the_contracts_for_its_call_id() {
        for call_id in ["root/1", "user-\u{e9}/12", "we\"ird/3"] {
            let text = crate::tool::ToolResult::pending(call_id).text;
            assert!(is_pending_text(&text, call_id), "{text}");
            assert!(!is_pending_text(&text, "root/2"));
            assert!(!is_pending_text(&text[1..], call_id));
            assert!(!is_pending_text(&format!("{text} "), call_id));
        }
        assert!(!is_pending_text("", "root/1"));
    }

    fn log() -> Vec<Event> {
        let lines = [
            json!({"seq": 1, "t": 0.0, "event": "spawn", "agent": "root", "owner": null, "lineage": null}),
            json!({"seq": 2, "t": 0.0, "event": "request", "callId": "root/1", "agent": "root", "schema": "timed",
                   "keyed": true, "questions": [], "timeout": -1.0, "window_s": -1.0}),
            json!({"seq": 3, "t": 1.0, "event": "cancel_call", "callId": "root/1"}),
            json!({"seq": 4, "t": 2.0, "event": "spawn", "agent": "late", "owner": null, "lineage": null}),
            json!({"seq": 5, "t": 2.0, "event": "end", "reason": "done"}),
        ];
        lines
            .into_iter()
            .map(|l| serde_json::from_value(l).unwrap())
            .collect()
    }

    /// An `ABORTED` result needs a cause: without one the protocol check
    /// fires; a turn signal, a `cancel_call` or a stop of the agent before it
    /// each is one.
    #[test]
    fn an_aborted_result_with_no_cause_breaks_the_protocol() {
        let aborted = json!({"seq": 4, "t": 1.0, "event": "result", "callId": "root/1", "agent": "root",
            "result": "{\"error\":{\"code\":\"ABORTED\",\"message\":\"m\"}}", "is_error": true,
            "outcome": "ABORTED"});
        let with = |cause: Option<serde_json::Value>| -> Vec<(&'static str, u64)> {
            let spawn = json!({"seq": 1, "t": 0.0, "event": "spawn", "agent": "root", "owner": null, "lineage": null});
            let request = json!({"seq": 2, "t": 0.0, "event": "request", "callId": "root/1", "agent": "root",
                "schema": "timed", "keyed": true, "questions": [], "timeout": -1.0, "window_s": -1.0});
            let filler =
                json!({"seq": 3, "t": 0.5, "event": "spawn", "agent": "x", "owner": null, "lineage": null});
            let events: Vec<Event> = [spawn, request, cause.unwrap_or(filler), aborted.clone()]
                .into_iter()
                .map(|l| serde_json::from_value(l).unwrap())
                .collect();
            check(&events, None, VIRTUAL_TOLERANCE_S)
                .iter()
                .filter(|v| v.detail.contains("ABORTED"))
                .map(|v| (v.invariant, v.seq))
                .collect()
        };
        assert_eq!(with(None), [(PROTOCOL_CONFORMANCE, 4)]);
        for cause in [
            json!({"seq": 3, "t": 1.0, "event": "cancel", "agent": "root"}),
            json!({"seq": 3, "t": 1.0, "event": "cancel_call", "callId": "root/1"}),
            json!({"seq": 3, "t": 1.0, "event": "stop", "agent": "root"}),
        ] {
            assert_eq!(with(Some(cause.clone())), [], "{cause}");
        }
    }

    #[test]
    fn a_checker_fed_one_event_at_a_time_finds_what_check_finds_in_seq_order() {
        let events = log();
        let mut checker = Checker::new(VIRTUAL_TOLERANCE_S);
        for event in &events {
            checker.visit(event);
        }
        let streamed = checker.finish(None);
        assert_eq!(streamed, check(&events, None, VIRTUAL_TOLERANCE_S));
        // The request was never offered (named at it), and its cancel_call left
        // it open (named at the cancel_call): in seq order.
        let named: Vec<(&str, u64)> = streamed.iter().map(|v| (v.invariant, v.seq)).collect();
        assert_eq!(named, [(NO_ORPHANED_WAIT, 2), (CANCEL_CALL_SETTLES, 3)]);
    }

    #[test]
    fn the_tolerance_decides_what_counts_as_one_instant() {
        // The same log on the real clock's tolerance: the cancel_call at 1 s and
        // the next event at 2 s are still more than 0.1 s apart.
        let named: Vec<&str> = check(&log(), None, REAL_TOLERANCE_S)
            .iter()
            .map(|v| v.invariant)
            .collect();
        assert_eq!(named, [NO_ORPHANED_WAIT, CANCEL_CALL_SETTLES]);
        // With a tolerance of 10 s everything is one instant, checked at the end.
        let named: Vec<&str> = check(&log(), None, 10.0).iter().map(|v| v.invariant).collect();
        assert_eq!(named, [NO_ORPHANED_WAIT, CANCEL_CALL_SETTLES]);
        // Cut before its end, the last instant may not be over: nothing is owed yet.
        let cut = &log()[..4];
        assert_eq!(check(cut, None, 10.0), []);
    }

    #[test]
    fn every_invariant_is_named_once() {
        let mut names = INVARIANTS.to_vec();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), INVARIANTS.len());
    }
}
