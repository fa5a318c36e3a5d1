//! What must happen at an instant, and what must have happened by the end (SPEC
//! §6 "liveness"):
//!
//! - `cancel_call_settles`: a `cancel_call` of an open call (in its window, held,
//!   `-1`, pending) settles it as `ABORTED`, or withdraws it, at that instant
//!   (SPEC §3.8);
//! - `stop_agent_settles`: a `stop` of an agent settles every open call of it the
//!   same way, a blocking `-1` call included (SPEC §2.4, §3.8);
//! - `no_orphaned_wait`: no call is left waiting on what can no longer happen.
//!   Whatever takes an open call's offeree or owner away (its request, a decline,
//!   an offer timeout, a death) must, by the end of that instant, leave it offered
//!   to a live answerer, owned by one, or closed: the broker offers on in the same
//!   step. An offer to an answerer whose death the broker handled is an offer
//!   nobody can answer. At the end of the run, when nothing is due any more, every
//!   open call must have a live owner: an offer still out would have timed out,
//!   and a call nobody owns can never be answered.
//!
//! An instant ends at the first event past its first event's time (and the
//! tolerance), and at the end: the checks owed at it are kept in one list and run
//! then, so each costs its call's lookup alone.

use rustc_hash::FxHashSet;

use super::Violations;
use super::calls::{Attending, CallInfo, Calls, MustClose};
use crate::protocol::{CallId, Name};
use crate::tool::{ErrorCode, ResultKind};

/// `cancel_call_settles`.
pub const CANCEL_CALL_SETTLES: &str = "cancel_call_settles";
/// `stop_agent_settles`.
pub const STOP_AGENT_SETTLES: &str = "stop_agent_settles";
/// `no_orphaned_wait`.
pub const NO_ORPHANED_WAIT: &str = "no_orphaned_wait";

/// What a call owes at the end of an instant.
enum Owes {
    /// To be closed (it has a [`MustClose`]).
    Closed,
    /// To be offered to a live answerer, owned by one, or closed, since the event
    /// with this `seq` took its offeree or owner away.
    Attended(u64),
}

/// How a call closed, as the liveness checks compare it with what closed it.
#[derive(Clone, Copy, Debug)]
pub enum Closure<'a> {
    /// Its first tool result (not `pending`).
    Result(ResultKind),
    /// Its late answer.
    LateAnswer,
    /// A withdrawal, for this reason.
    Withdraw(&'a str),
}

impl Closure<'_> {
    fn describe(self) -> String {
        match self {
            Closure::Result(kind) => format!("its {} result", kind.as_str()),
            Closure::LateAnswer => "its late answer".to_owned(),
            Closure::Withdraw(reason) => format!("a withdrawal ({reason})"),
        }
    }
}

/// The liveness checks' state between events.
#[derive(Default)]
pub struct Liveness {
    /// The instant the checks owed belong to, and the checks.
    instant_t: f64,
    owed: Vec<(CallId, Owes)>,
    /// How many instants ended (and process losses cleared what was owed): a
    /// call owes being attended once per instant, marked with this count plus
    /// one ([`CallInfo::owed_in`]).
    instants: u64,
    /// Answerers whose death the broker handled, in this life of the runtime.
    pub dead: FxHashSet<Name>,
}

impl Liveness {
    /// Runs the checks owed at an instant that ended before `t`. An instant is
    /// anchored at its first event: it ends at the first event past that one's time
    /// and the tolerance, so whatever it obliges is checked within the tolerance of
    /// the event that obliged it.
    pub fn advance(&mut self, t: f64, tolerance_s: f64, calls: &mut Calls, out: &mut Violations) {
        if t > self.instant_t + tolerance_s {
            self.instant_ended(calls, out);
            self.instant_t = t;
        }
    }

    /// The event `seq` took the call's offeree or owner away (or it is new): it
    /// owes being attended by the end of this instant.
    ///
    /// Once per call and instant: the check reads the call's state when the
    /// instant ends, so a second obligation of the same instant could only
    /// report what the first did, and the first is the one that reports (its
    /// `seq` names the violation). A waterfall whose answerers decline at one
    /// instant owed a check per decline, and a tie of 10^5 such calls held them
    /// all in this list (~400 bytes a call at a waterfall of 8).
    pub fn attend(&mut self, calls: &mut Calls, call_id: &CallId, seq: u64) {
        let Some(info) = calls.get_mut(call_id) else {
            return; // never requested: nothing is checked of it
        };
        let mark = self.instants + 1;
        if info.owed_in == mark {
            return;
        }
        info.owed_in = mark;
        self.owed.push((call_id.clone(), Owes::Attended(seq)));
    }

    /// `call_id` must close at this instant, as `obliged` says (the first
    /// obligation stands).
    pub fn must_close(&mut self, calls: &mut Calls, call_id: &CallId, obliged: MustClose) {
        let Some(info) = calls.get_mut(call_id).filter(|i| i.open()) else {
            return;
        };
        let rare = info.rare_mut();
        rare.asked_to_close = true;
        if rare.must_close.is_none() {
            rare.must_close = Some(obliged);
            self.owed.push((call_id.clone(), Owes::Closed));
        }
    }

    /// The call closed (at event `seq`) by `how`: it must be the way its
    /// `cancel_call` or `stop` asked for. (That it closed at their instant is
    /// checked when the instant ends: a closure later than that finds no
    /// obligation left.)
    pub fn closed((call_id, info): (&CallId, &mut CallInfo), seq: u64, how: Closure, out: &mut Violations) {
        let Some(obliged) = info.take_must_close() else {
            return;
        };
        let wanted = if obliged.invariant == CANCEL_CALL_SETTLES {
            "cancel_call"
        } else {
            "agent_stopped"
        };
        let right = match how {
            Closure::Result(kind) => kind == ResultKind::Error(ErrorCode::Aborted),
            Closure::Withdraw(reason) => reason == wanted,
            Closure::LateAnswer => false,
        };
        if !right {
            let what = what(obliged);
            let detail = format!("closed by {} after its {what} at {} s", how.describe(), obliged.t);
            out.push(obliged.invariant, call_id, seq, detail);
        }
    }

    /// An offer to `answerer`: it must be alive (the call is then named once).
    pub fn offered(
        &self,
        (call_id, info): (&CallId, Option<&mut CallInfo>),
        answerer: &str,
        seq: u64,
        out: &mut Violations,
    ) {
        if self.dead.contains(answerer) {
            let detail = format!("offered to {answerer}, whose death the broker had handled");
            out.push(NO_ORPHANED_WAIT, call_id, seq, detail);
            if let Some(info) = info {
                info.orphan_reported = true;
            }
        }
    }

    /// The checks owed at the instant that ended.
    pub fn instant_ended(&mut self, calls: &mut Calls, out: &mut Violations) {
        self.instants += 1;
        for (call_id, owes) in std::mem::take(&mut self.owed) {
            let Some(info) = calls.get(&call_id).filter(|i| i.open()) else {
                continue;
            };
            match owes {
                Owes::Closed => {
                    let info = calls.get_mut(&call_id).expect("found above");
                    if let Some(obliged) = info.take_must_close() {
                        let detail = format!("still open after its {} at {} s", what(obliged), obliged.t);
                        out.push(obliged.invariant, &call_id, obliged.seq, detail);
                    }
                }
                Owes::Attended(seq) => {
                    if info.orphan_reported {
                        continue;
                    }
                    let Some(detail) = orphaned(calls.attending(info), &self.dead, false) else {
                        continue;
                    };
                    calls.get_mut(&call_id).expect("found above").orphan_reported = true;
                    out.push(NO_ORPHANED_WAIT, &call_id, seq, detail);
                }
            }
        }
    }

    /// A process loss: every answerer dies (and comes back at the restart).
    pub fn process_loss(&mut self) {
        self.instants += 1;
        self.owed.clear();
        self.dead.clear();
    }

    /// At the end, when nothing is due: the checks of the last instant, then every
    /// open call must have a live owner. `last_seq` names the end.
    pub fn finish(mut self, calls: &mut Calls, last_seq: u64, out: &mut Violations) {
        self.instant_ended(calls, out);
        for (call_id, info) in calls.iter() {
            if !info.open() || info.orphan_reported {
                continue;
            }
            if let Some(detail) = orphaned(calls.attending(info), &self.dead, true) {
                out.push(
                    NO_ORPHANED_WAIT,
                    call_id,
                    last_seq,
                    format!("{detail} when the run ended"),
                );
            }
        }
    }
}

fn what(obliged: MustClose) -> &'static str {
    if obliged.invariant == CANCEL_CALL_SETTLES {
        "cancel_call"
    } else {
        "agent's stop"
    }
}

/// Why nothing can move an open call on, if nothing can. At the end of the run
/// (`ended`) an offer still out counts as nobody's.
fn orphaned(attending: Attending, dead: &FxHashSet<Name>, ended: bool) -> Option<String> {
    let live = |a: &Name| !dead.contains(a);
    match (attending.offeree, attending.owner) {
        (_, Some(owner)) if live(owner) => None,
        (Some(offeree), _) if live(offeree) && !ended => None,
        (Some(offeree), _) if live(offeree) => {
            Some(format!("its offer to {offeree} was never answered nor timed out"))
        }
        (_, Some(owner)) => Some(format!("its owner {owner} died and it was not failed over")),
        (Some(offeree), _) => Some(format!("its offeree {offeree} died and it was not offered on")),
        (None, None) => Some("no answerer is offered or owns it: nothing can answer it".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Schema;

    fn call() -> CallInfo {
        CallInfo::new("root".into(), Schema::Timed, 1, 0.0)
    }

    #[test]
    fn a_call_is_orphaned_when_no_live_answerer_is_offered_or_owns_it() {
        let dead: FxHashSet<Name> = ["web".into()].into_iter().collect();
        let (web, terminal): (Name, Name) = ("web".into(), "terminal".into());
        let by = |offeree, owner| Attending { offeree, owner };
        let nobody = by(None, None);
        assert!(orphaned(nobody, &dead, false).is_some_and(|d| d.contains("nothing can answer it")));
        let offered = by(Some(&terminal), None);
        assert_eq!(orphaned(offered, &dead, false), None, "an offer is out");
        assert!(orphaned(offered, &dead, true).is_some_and(|d| d.contains("never answered nor timed out")));
        let offered_dead = by(Some(&web), None);
        assert!(orphaned(offered_dead, &dead, false).is_some_and(|d| d.contains("offeree web died")));
        let owned_dead = by(None, Some(&web));
        assert!(orphaned(owned_dead, &dead, false).is_some_and(|d| d.contains("owner web died")));
        let owned = by(None, Some(&terminal));
        assert_eq!(
            orphaned(owned, &dead, true),
            None,
            "a live owner may still answer"
        );
    }

    /// A run's liveness checks with one call, root/1, at an instant from 1 s.
    fn one_call() -> (Liveness, Calls, Violations, CallId) {
        let (mut liveness, mut calls, mut out) =
            (Liveness::default(), Calls::default(), Violations::default());
        let id: CallId = "root/1".into();
        calls.insert(&id, call());
        liveness.advance(1.0, 0.1, &mut calls, &mut out);
        (liveness, calls, out, id)
    }

    #[test]
    fn an_instant_is_anchored_at_its_first_event() {
        let (mut liveness, mut calls, mut out, id) = one_call();
        liveness.attend(&mut calls, &id, 7);
        // Events 0.06 s apart: each within the tolerance of the one before, but
        // the third is past the instant's first event and the tolerance.
        liveness.advance(1.06, 0.1, &mut calls, &mut out);
        assert!(out.0.is_empty());
        liveness.advance(1.12, 0.1, &mut calls, &mut out);
        assert_eq!(out.0.len(), 1);
        assert_eq!((out.0[0].invariant, out.0[0].seq), (NO_ORPHANED_WAIT, 7));
    }

    #[test]
    fn a_call_owes_one_check_an_instant_and_the_first_names_it() {
        let (mut liveness, mut calls, mut out, id) = one_call();
        for seq in [7, 8, 9] {
            liveness.attend(&mut calls, &id, seq);
        }
        assert_eq!(liveness.owed.len(), 1, "one check owed at the instant");
        liveness.advance(2.0, 0.1, &mut calls, &mut out);
        assert_eq!(out.0.len(), 1);
        assert_eq!(out.0[0].seq, 7, "the first obligation names the violation");
        // The next instant owes its own check (reported once per call, so the
        // list is what shows it).
        liveness.attend(&mut calls, &id, 12);
        assert_eq!(liveness.owed.len(), 1, "owed again at a new instant");
        // A process loss clears what was owed; what follows owes anew.
        liveness.process_loss();
        liveness.attend(&mut calls, &id, 13);
        assert_eq!(liveness.owed.len(), 1);
        // A call the log never requested owes nothing.
        liveness.attend(&mut calls, &"root/2".into(), 14);
        assert_eq!(liveness.owed.len(), 1);
    }
}
