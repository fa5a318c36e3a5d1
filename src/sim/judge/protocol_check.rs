//! Protocol conformance (SPEC §6): a reference state machine per call, folded from
//! the log, that allows only the transitions of SPEC §3. Outcome invariants see
//! what a call ended as; this sees how it got there:
//!
//! - an offer only of an open call that nobody owns or is offered (the last
//!   offer ended: declined, timed out, or its answerer died);
//! - an accept only from the current offeree, and not after its offer timed out
//!   or the call settled;
//! - a hold only by the owner, while the call waits (not once it went pending);
//! - a settling batch only from the owner;
//! - no offer for a request whose turn had fired before the broker received it;
//! - a held call never returns `pending` while its holder lives;
//! - nothing accepted from a dead answerer;
//! - the broker handles each sender's messages in the order they entered its
//!   mailbox (`mbox`), and an answerer's death after everything it sent before.
//!
//! Which turns fired it reads from the invariant checker's turn tree
//! ([`crate::sim::judge::turns`]), which follows the same events first. Each event
//! costs O(1) amortised; a process loss touches the calls not yet settled.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::event::{Event, EventKind};
use crate::protocol::Name;
use crate::sim::judge::call_ix::{CallIx, Dense};
use crate::sim::judge::turns::TurnTree;
use crate::sim::judge::violation::Violation;
use crate::tool::ResultKind;

/// The invariant's name.
pub const PROTOCOL_CONFORMANCE: &str = "protocol_conformance";

/// An answerer, by the place the checker gave its name (answerers are few, and
/// a call's state names up to three of them: 24 bytes a call instead of 96).
type Who = u32;

/// No answerer.
const NOBODY: Who = Who::MAX;

struct CallState {
    offered: Who,
    owner: Who,
    holder: Who,
    /// The answerers whose offer timed out: few calls have any (a slice, grown
    /// by one at each, 8 bytes while empty).
    timed_out: Option<Box<[Who]>>,
    /// Its turn had fired before the broker received it: it must never be offered.
    doomed: bool,
    /// It returned `pending` (or was open at a process loss).
    pending: bool,
    settled: bool,
}

impl Default for CallState {
    fn default() -> Self {
        CallState {
            offered: NOBODY,
            owner: NOBODY,
            holder: NOBODY,
            timed_out: None,
            doomed: false,
            pending: false,
            settled: false,
        }
    }
}

impl CallState {
    fn timed_out(&self, who: Who) -> bool {
        self.timed_out.as_ref().is_some_and(|list| list.contains(&who))
    }
}

/// The protocol checker's state between events.
#[derive(Default)]
pub struct ProtocolChecker {
    /// By the number the invariant checker gave each callId.
    calls: Dense<CallState>,
    /// Calls not yet settled (a process loss makes them pending).
    unsettled: FxHashSet<CallIx>,
    dead: FxHashSet<Name>,
    /// The last mailbox place handled per sender (answerer or agent).
    last_mbox: FxHashMap<Name, u64>,
    /// Mailbox places of deaths handled, per answerer.
    died_at: FxHashMap<Name, u64>,
    /// The last batch submitted, awaiting its verdict (the next event about
    /// its call): the call, and why the batch may not settle it (its answerer
    /// had died, or did not own the call, when it arrived), if it may not. A
    /// process loss does not clear it: a recovery records the verdict of a
    /// batch the crash cut from it right after the loss (SPEC §4.1), judged by
    /// who owned the call when the batch arrived.
    answer: Option<(CallIx, Option<String>)>,
    /// Every answerer named so far, by its [`Who`], and the place of each name.
    answerers: Vec<Name>,
    answerer_ix: FxHashMap<Name, Who>,
    violations: Vec<Violation>,
}

impl ProtocolChecker {
    /// The place of `answerer`, given on first sight.
    fn who(&mut self, answerer: &Name) -> Who {
        if let Some(who) = self.answerer_ix.get(answerer) {
            return *who;
        }
        let who = Who::try_from(self.answerers.len()).expect("fewer than 2^32 answerers");
        assert!(who != NOBODY, "fewer than 2^32 - 1 answerers");
        self.answerers.push(answerer.clone());
        self.answerer_ix.insert(answerer.clone(), who);
        who
    }

    /// The name of a place [`ProtocolChecker::who`] gave.
    fn name(&self, who: Who) -> &Name {
        &self.answerers[who as usize]
    }

    fn violate(&mut self, call_id: &str, seq: u64, detail: String) {
        self.violations.push(Violation {
            invariant: PROTOCOL_CONFORMANCE,
            call_id: (!call_id.is_empty()).then(|| call_id.to_owned()),
            seq,
            detail,
        });
    }

    /// Takes one more event, `ix` the number of the callId it names (given by
    /// the invariant checker); `turns` has followed it already.
    pub fn visit(&mut self, event: &Event, ix: Option<CallIx>, turns: &TurnTree) {
        self.settlement(event, ix);
        self.mailbox_order(event);
        match (&event.kind, ix) {
            (EventKind::Crash { answerer, .. }, _) => {
                self.dead.insert(answerer.clone());
            }
            (EventKind::ProcessLoss { .. }, _) => self.process_loss(),
            (_, Some(ix)) => self.visit_call_event(event, ix, turns),
            _ => {}
        }
    }

    fn visit_call_event(&mut self, event: &Event, ix: CallIx, turns: &TurnTree) {
        let seq = event.seq;
        match &event.kind {
            EventKind::Request { agent, .. } => {
                let doomed = turns.current(agent).is_some_and(|turn| turns.fired(turn));
                let state = CallState {
                    doomed,
                    ..CallState::default()
                };
                self.calls.insert(ix, state);
                self.unsettled.insert(ix);
            }
            EventKind::Offer { call_id, answerer } => self.offer((ix, call_id), answerer, seq),
            EventKind::Accept {
                call_id, answerer, ..
            } => self.accept((ix, call_id), answerer, seq),
            EventKind::Decline { answerer, reason, .. } => self.decline(ix, answerer, reason),
            EventKind::Hold {
                call_id, answerer, ..
            } => self.hold((ix, call_id), answerer, seq),
            EventKind::Answer { answerer, .. } => {
                let problem = self.may_not_settle(ix, answerer);
                self.answer = Some((ix, problem));
            }
            EventKind::Result { call_id, .. } => {
                let pending = event.kind.result_kind() == Some(ResultKind::Pending);
                self.result((ix, call_id), pending, seq);
            }
            EventKind::LateAnswer { .. } | EventKind::Withdraw { .. } => self.settle(ix),
            _ => {}
        }
    }

    fn settle(&mut self, ix: CallIx) {
        if let Some(call) = self.calls.get_mut(ix) {
            call.settled = true;
            self.unsettled.remove(&ix);
        }
    }

    fn offer(&mut self, (ix, call_id): (CallIx, &str), answerer: &Name, seq: u64) {
        let who = self.who(answerer);
        let Some(call) = self.calls.get_mut(ix) else {
            return;
        };
        let (doomed, settled, owner, offered) = (call.doomed, call.settled, call.owner, call.offered);
        call.doomed = false;
        call.offered = who;
        let problem = if doomed {
            "an offer for a request whose turn had fired before the broker received it".to_owned()
        } else if settled {
            format!("an offer to {answerer} after the call settled")
        } else if owner != NOBODY {
            format!("an offer to {answerer} while {} owns the call", self.name(owner))
        } else if offered != NOBODY {
            format!(
                "an offer to {answerer} while the offer to {} is still current (no decline, offer timeout or death ended it)",
                self.name(offered)
            )
        } else {
            return;
        };
        self.violate(call_id, seq, problem);
    }

    fn accept(&mut self, (ix, call_id): (CallIx, &str), answerer: &Name, seq: u64) {
        let dead = self.dead.contains(answerer);
        let who = self.who(answerer);
        let Some(call) = self.calls.get_mut(ix) else {
            return;
        };
        let problem = if dead {
            Some(format!("an accept from {answerer}, which had died"))
        } else if call.settled {
            Some(format!(
                "an accept from {answerer} was taken after the call settled"
            ))
        } else if call.timed_out(who) && call.offered != who {
            Some(format!("an accept from {answerer} after its offer timed out"))
        } else if call.offered != who {
            Some(format!(
                "an accept from {answerer}, which was not the current offeree"
            ))
        } else {
            None
        };
        call.offered = NOBODY;
        call.owner = who;
        if let Some(problem) = problem {
            self.violate(call_id, seq, problem);
        }
    }

    fn decline(&mut self, ix: CallIx, answerer: &Name, reason: &str) {
        let who = self.who(answerer);
        let Some(call) = self.calls.get_mut(ix) else {
            return;
        };
        if call.offered == who {
            call.offered = NOBODY;
        }
        match reason {
            "offer_timeout" if !call.timed_out(who) => {
                let mut list = call.timed_out.take().map(Vec::from).unwrap_or_default();
                list.push(who);
                call.timed_out = Some(list.into_boxed_slice());
            }
            "dead" => {
                if call.owner == who {
                    call.owner = NOBODY;
                }
                if call.holder == who {
                    call.holder = NOBODY;
                }
            }
            _ => {}
        }
    }

    fn hold(&mut self, (ix, call_id): (CallIx, &str), answerer: &Name, seq: u64) {
        let dead = self.dead.contains(answerer);
        let who = self.who(answerer);
        let Some(call) = self.calls.get_mut(ix) else {
            return;
        };
        let problem = if dead {
            Some(format!("a hold from {answerer}, which had died, was taken"))
        } else if call.owner != who {
            Some(format!(
                "a hold from {answerer}, which does not own the call, was taken"
            ))
        } else if call.pending || call.settled {
            Some("a hold was taken after the call went pending".to_owned())
        } else {
            call.holder = who;
            None
        };
        if let Some(problem) = problem {
            self.violate(call_id, seq, problem);
        }
    }

    fn result(&mut self, (ix, call_id): (CallIx, &str), pending: bool, seq: u64) {
        let Some(call) = self.calls.get_mut(ix) else {
            return;
        };
        let held = call.holder;
        if pending {
            call.pending = true;
        } else {
            call.settled = true;
            self.unsettled.remove(&ix);
        }
        if let (true, Some(holder)) = (pending, (held != NOBODY).then(|| self.name(held)))
            && !self.dead.contains(holder)
        {
            let detail = format!("the call returned pending while {holder} held it and lived");
            self.violate(call_id, seq, detail);
        }
    }

    /// Why a batch from `answerer` may not settle the call `ix`: it had died,
    /// or it does not own the call.
    fn may_not_settle(&self, ix: CallIx, answerer: &Name) -> Option<String> {
        let owner = self.calls.get(ix).map_or(NOBODY, |c| c.owner);
        if self.dead.contains(answerer) {
            Some(format!(
                "a batch from {answerer}, which had died, settled the call"
            ))
        } else if owner == NOBODY || self.answerer_ix.get(answerer) != Some(&owner) {
            Some(format!(
                "a batch from {answerer}, which does not own the call, settled it"
            ))
        } else {
            None
        }
    }

    /// The next event about a batch's call is its verdict: it settles the call
    /// only if the batch came from the call's owner, which lived.
    fn settlement(&mut self, event: &Event, ix: Option<CallIx>) {
        let Some((answered, problem)) = self.answer.take() else {
            return;
        };
        if ix != Some(answered) {
            self.answer = Some((answered, problem));
            return;
        }
        let settles = match &event.kind {
            EventKind::Result { .. } => event.kind.result_kind() == Some(ResultKind::Answers),
            EventKind::LateAnswer { .. } => true,
            _ => false,
        };
        if let (true, Some(problem), Some(call_id)) = (settles, problem, event.kind.call_id()) {
            self.violate(call_id, event.seq, problem);
        }
    }

    /// Each sender's messages are handled in the order they entered the mailbox;
    /// an answerer's death after everything it sent before dying.
    fn mailbox_order(&mut self, event: &Event) {
        let (sender, mbox, is_death) = match &event.kind {
            EventKind::Request {
                agent, mbox: Some(m), ..
            } => (agent.clone(), *m, false),
            EventKind::Accept {
                answerer,
                mbox: Some(m),
                ..
            }
            | EventKind::Decline {
                answerer,
                mbox: Some(m),
                ..
            }
            | EventKind::Hold {
                answerer,
                mbox: Some(m),
                ..
            }
            | EventKind::Answer {
                answerer,
                mbox: Some(m),
                ..
            } => (answerer.clone(), *m, false),
            EventKind::Crash {
                answerer,
                mbox: Some(m),
            } => (answerer.clone(), *m, true),
            _ => return,
        };
        let call_id = event.kind.call_id().unwrap_or("").to_owned();
        if let Some(&died) = self.died_at.get(&*sender).filter(|d| **d > mbox) {
            let detail = format!(
                "{sender}'s death (mailbox {died}) was handled before its message (mailbox {mbox}) queued ahead of it"
            );
            self.violate(&call_id, event.seq, detail);
        } else if let Some(&last) = self.last_mbox.get(&*sender).filter(|l| **l > mbox) {
            let detail =
                format!("{sender}'s message (mailbox {mbox}) was handled after a later one (mailbox {last})");
            self.violate(&call_id, event.seq, detail);
        }
        let last = self.last_mbox.entry(sender.clone()).or_insert(0);
        *last = (*last).max(mbox);
        if is_death {
            self.died_at.insert(sender, mbox);
        }
    }

    /// A new life: answerers start again, agents come back with fresh turns (the
    /// turn tree's business), and open calls are pending and offered afresh.
    fn process_loss(&mut self) {
        self.dead.clear();
        self.last_mbox.clear();
        self.died_at.clear();
        for ix in &self.unsettled {
            if let Some(call) = self.calls.get_mut(*ix) {
                *call = CallState {
                    pending: true,
                    ..CallState::default()
                };
            }
        }
    }

    /// The violations found, in the order found.
    pub fn finish(self) -> Vec<Violation> {
        self.violations
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::sim::judge::call_ix::CallIds;

    fn event(seq: u64, t: f64, mut kind: serde_json::Value) -> Event {
        kind["seq"] = json!(seq);
        kind["t"] = json!(t);
        serde_json::from_value(kind).expect("an event")
    }

    fn request(seq: u64, call_id: &str, mbox: u64) -> Event {
        event(
            seq,
            0.0,
            json!({"event": "request", "callId": call_id, "agent": "root", "schema": "timed", "keyed": true,
                   "questions": [], "timeout": 5.0, "window_s": 5.0, "mbox": mbox}),
        )
    }

    /// Feeds `events` (following spawns and signals on a turn tree as the invariant
    /// checker does) and returns (seq, detail) of each violation.
    fn run(events: &[Event]) -> Vec<(u64, String)> {
        let mut turns = TurnTree::default();
        let mut checker = ProtocolChecker::default();
        let mut ids = CallIds::default();
        for e in events {
            match &e.kind {
                EventKind::Spawn { agent, owner, .. } => turns.spawn(agent, owner.as_deref()),
                EventKind::Cancel { agent } => {
                    turns.fire(agent, crate::sim::judge::turns::Fire { seq: e.seq, t: e.t })
                }
                _ => {}
            }
            let ix = ids.intern_event(e);
            checker.visit(e, ix, &turns);
        }
        checker.finish().into_iter().map(|v| (v.seq, v.detail)).collect()
    }

    #[test]
    fn each_sender_keeps_its_own_mailbox_order() {
        let spawn = event(
            1,
            0.0,
            json!({"event": "spawn", "agent": "root", "owner": null, "lineage": null}),
        );
        // Two senders interleaved out of order with each other, each in order alone.
        let accept = |seq, answerer: &str, mbox| {
            event(
                seq,
                0.0,
                json!({"event": "accept", "callId": "root/1", "answerer": answerer, "mbox": mbox}),
            )
        };
        let offer = event(
            3,
            0.0,
            json!({"event": "offer", "callId": "root/1", "answerer": "a"}),
        );
        let events = [spawn.clone(), request(2, "root/1", 9), offer, accept(4, "a", 5)];
        assert_eq!(run(&events), []);
        let late = [
            spawn,
            request(2, "root/1", 9),
            accept(3, "a", 5),
            accept(4, "a", 4),
        ];
        let found = run(&late);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(
            found
                .iter()
                .any(|(seq, d)| *seq == 4 && d.contains("handled after a later one"))
        );
    }

    /// A recovery records the verdict of a batch the crash cut from it right
    /// after the loss (SPEC §4.1): it is judged by who owned the call when the
    /// batch arrived, not by the new life's owners (nobody, yet).
    #[test]
    fn a_verdict_recorded_after_the_loss_is_judged_by_the_owner_before_it() {
        let spawn = event(
            1,
            0.0,
            json!({"event": "spawn", "agent": "root", "owner": null, "lineage": null}),
        );
        let on = |seq, what: &str, answerer: &str| {
            event(
                seq,
                0.0,
                json!({"event": what, "callId": "root/1", "answerer": answerer}),
            )
        };
        let answer = |seq, answerer: &str| {
            event(
                seq,
                0.0,
                json!({"event": "answer", "callId": "root/1", "answerer": answerer, "batch": []}),
            )
        };
        let loss = event(7, 0.0, json!({"event": "process_loss", "restart_after": 0.0}));
        let late = event(
            8,
            0.0,
            json!({"event": "late_answer", "callId": "root/1", "agent": "root", "answers": [], "message": "m"}),
        );
        let life = |answerer: &str| {
            vec![
                spawn.clone(),
                request(2, "root/1", 1),
                on(3, "offer", "a"),
                on(4, "accept", "a"),
                event(
                    5,
                    0.0,
                    json!({"event": "spawn", "agent": "other", "owner": null, "lineage": null}),
                ),
                answer(6, answerer),
                loss.clone(),
                late.clone(),
            ]
        };
        assert_eq!(run(&life("a")), []);
        let found = run(&life("b"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].0 == 8 && found[0].1.contains("does not own the call"),
            "{found:?}"
        );
    }

    #[test]
    fn a_process_loss_makes_open_calls_pending_and_every_answerer_alive_again() {
        let events = [
            event(
                1,
                0.0,
                json!({"event": "spawn", "agent": "root", "owner": null, "lineage": null}),
            ),
            request(2, "root/1", 1),
            event(
                3,
                0.0,
                json!({"event": "offer", "callId": "root/1", "answerer": "web"}),
            ),
            event(4, 1.0, json!({"event": "crash", "answerer": "web", "mbox": 2})),
            event(5, 2.0, json!({"event": "process_loss", "restart_after": 1.0})),
            event(6, 3.0, json!({"event": "restart"})),
            event(
                7,
                3.0,
                json!({"event": "offer", "callId": "root/1", "answerer": "web"}),
            ),
            // web lives again, and its mailbox places count from the new life.
            event(
                8,
                3.0,
                json!({"event": "accept", "callId": "root/1", "answerer": "web", "mbox": 1}),
            ),
            // Pending since the loss: a hold is not taken any more.
            event(
                9,
                3.5,
                json!({"event": "hold", "callId": "root/1", "answerer": "web", "mbox": 2}),
            ),
        ];
        let found = run(&events);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, 9);
        assert!(found[0].1.contains("after the call went pending"), "{found:?}");
    }

    /// One offer at a time, of an open call nobody owns: an offer after the
    /// call settled, while another answerer owns it, or while another offer
    /// is current, breaks the waterfall; so does an accept after settlement.
    #[test]
    fn offers_follow_the_waterfall_and_nothing_is_accepted_after_settlement() {
        let on = |seq, what: &str, answerer: &str| {
            event(
                seq,
                0.0,
                json!({"event": what, "callId": "root/1", "answerer": answerer}),
            )
        };
        let declined = |seq, answerer: &str| {
            event(
                seq,
                0.0,
                json!({"event": "decline", "callId": "root/1", "answerer": answerer, "reason": "declined"}),
            )
        };
        let answered = event(
            9,
            1.0,
            json!({"event": "result", "callId": "root/1", "agent": "root", "result": "{\"answers\":[]}",
                   "is_error": false, "outcome": "answers"}),
        );
        let spawn = event(
            1,
            0.0,
            json!({"event": "spawn", "agent": "root", "owner": null, "lineage": null}),
        );
        let start = || vec![spawn.clone(), request(2, "root/1", 1)];
        let mut fine = start();
        fine.extend([
            on(3, "offer", "a"),
            declined(4, "a"),
            on(5, "offer", "b"),
            on(6, "accept", "b"),
        ]);
        assert_eq!(run(&fine), []);
        for (events, seq, detail) in [
            (
                vec![on(3, "offer", "a"), on(4, "offer", "b")],
                4,
                "an offer to b while the offer to a is still current",
            ),
            (
                vec![on(3, "offer", "a"), on(4, "accept", "a"), on(5, "offer", "b")],
                5,
                "an offer to b while a owns the call",
            ),
            (
                vec![on(3, "offer", "a"), answered.clone(), on(10, "offer", "a")],
                10,
                "an offer to a after the call settled",
            ),
            (
                vec![on(3, "offer", "a"), answered.clone(), on(10, "accept", "a")],
                10,
                "an accept from a was taken after the call settled",
            ),
        ] {
            let mut log = start();
            log.extend(events);
            let got = run(&log);
            assert!(
                got.len() == 1 && got[0].0 == seq && got[0].1.starts_with(detail),
                "{detail}: {got:?}"
            );
        }
    }

    #[test]
    fn a_request_made_under_a_fired_turn_is_doomed_also_for_a_child_born_under_it() {
        let events = [
            event(
                1,
                0.0,
                json!({"event": "spawn", "agent": "root", "owner": null, "lineage": null}),
            ),
            event(2, 0.0, json!({"event": "cancel", "agent": "root"})),
            event(
                3,
                0.0,
                json!({"event": "spawn", "agent": "kid", "owner": "root", "lineage": null}),
            ),
            event(
                4,
                0.0,
                json!({"event": "request", "callId": "kid/1", "agent": "kid", "schema": "timed", "keyed": true,
                       "questions": [], "timeout": 5.0, "window_s": 5.0}),
            ),
            event(
                5,
                0.0,
                json!({"event": "offer", "callId": "kid/1", "answerer": "web"}),
            ),
        ];
        let found = run(&events);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].1.contains("whose turn had fired"));
    }
}
