//! What the invariant checker knows of each call, and the indexes that keep every
//! event's work independent of the run's size: the open calls of each agent (a
//! `stop` settles them), the open calls each answerer attends as offeree or owner
//! (its death fails them over), and the open calls overall (a process loss takes
//! them). Each index holds open calls only, so a call enters and leaves each once.
//! It decides nothing: the checker's parts read and update it.

use std::num::{NonZeroU32, NonZeroU64};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::agent::call_map::CallSet;
use crate::event::RawQuestions;
use crate::protocol::{CallId, Name};
use crate::sim::judge::call_ix::{CallIds, CallIx, Dense};
use crate::sim::judge::turns::TurnIx;
use crate::tool::{ResultKind, Schema};

/// Something that must close a call at one instant: a `cancel_call` or a `stop`
/// of its agent.
#[derive(Clone, Copy, Debug)]
pub struct MustClose {
    /// The invariant it is.
    pub invariant: &'static str,
    /// The `seq` and time of the event that obliged it.
    pub seq: u64,
    pub t: f64,
}

/// What few calls go through: a hold, a process loss, an obligation to close at
/// one instant. Boxed in [`CallInfo::rare`], so a call without any costs a
/// pointer for them (a run's checker holds a record per call).
#[derive(Default)]
pub struct Rare {
    pub held_at: Option<f64>,
    pub holder: Option<Who>,
    /// Open at a process loss (the loss's `seq`, from 1): a legacy call must
    /// never settle after it; a timed one is pending and must be taken up
    /// again after the restart.
    pub lost: Option<NonZeroU64>,
    pub survived: Option<NonZeroU64>,
    pub taken_up: bool,
    /// What must close it at one instant, if anything does.
    pub must_close: Option<MustClose>,
    /// A `cancel_call` or a stop of its agent asked it closed while it was
    /// open (kept once the obligation is met or missed): a cause for `ABORTED`.
    pub asked_to_close: bool,
}

/// The rare facts of a call that has none.
static NONE: Rare = Rare {
    held_at: None,
    holder: None,
    lost: None,
    survived: None,
    taken_up: false,
    must_close: None,
    asked_to_close: false,
};

/// An answerer as a call's record names it: its number in the table of
/// answerer names [`Calls`] keeps, 4 bytes where a name took 16 (an offeree
/// and an owner in every call's record).
pub type Who = NonZeroU32;

/// Who attends a call, by name: the answerer whose reply to an offer is
/// awaited, and the one that owns it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Attending<'a> {
    pub offeree: Option<&'a Name>,
    pub owner: Option<&'a Name>,
}

/// A call's turn when it has none (the turn tree numbers its turns below it).
const NO_TURN: TurnIx = TurnIx::MAX;

/// One call, from its `request` on.
pub struct CallInfo {
    pub agent: Name,
    pub schema: Schema,
    pub questions: Option<RawQuestions>,
    pub window_s: Option<f64>,
    pub request_seq: u64,
    pub request_t: f64,
    /// The turn its agent was in when the broker received it ([`NO_TURN`]
    /// for none: 4 bytes, where an `Option` took 8).
    turn: TurnIx,
    /// Its first tool result: seq, time, kind.
    pub result: Option<(u64, f64, ResultKind)>,
    pub pending: bool,
    /// Its hold, loss and obligations, once it has any.
    rare: Option<Box<Rare>>,
    /// A window or delegation violation was raised already (one per call).
    pub window_violated: bool,
    pub delegation_violated: bool,
    /// The request came from a live child owned by a live agent.
    pub delegated: bool,
    /// It was offered to an answerer, at least once.
    pub offered: bool,
    /// A pending call that closed (late answer or withdrawal).
    pub closed: bool,
    /// The answerer whose reply to an offer is awaited, and the one that owns it.
    pub offeree: Option<Who>,
    pub owner: Option<Who>,
    /// User messages about it that reached its agent.
    pub delivered: u32,
    /// A `no_orphaned_wait` violation was raised already.
    pub orphan_reported: bool,
    /// The instant (the liveness checks' count, plus one) at which it last owed
    /// being attended; 0 never.
    pub owed_in: u64,
}

impl CallInfo {
    /// A call the broker just received.
    pub fn new(agent: Name, schema: Schema, request_seq: u64, request_t: f64) -> CallInfo {
        CallInfo {
            agent,
            schema,
            questions: None,
            window_s: None,
            request_seq,
            request_t,
            turn: NO_TURN,
            result: None,
            pending: false,
            rare: None,
            window_violated: false,
            delegation_violated: false,
            delegated: false,
            offered: false,
            closed: false,
            offeree: None,
            owner: None,
            delivered: 0,
            orphan_reported: false,
            owed_in: 0,
        }
    }

    /// The turn its agent was in when the broker received it, if any.
    pub fn turn(&self) -> Option<TurnIx> {
        (self.turn != NO_TURN).then_some(self.turn)
    }

    /// Sets the turn its agent was in.
    pub fn set_turn(&mut self, turn: Option<TurnIx>) {
        self.turn = turn.unwrap_or(NO_TURN);
    }

    /// Its hold, loss and obligations (none, for most calls).
    pub fn rare(&self) -> &Rare {
        self.rare.as_deref().unwrap_or(&NONE)
    }

    /// The same, to change: boxed from the first change on.
    pub fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_default()
    }

    /// What must close it at one instant, taken (it is met or moot now).
    pub fn take_must_close(&mut self) -> Option<MustClose> {
        self.rare.as_mut().and_then(|rare| rare.must_close.take())
    }

    /// Still waiting for its tool result (in its window or blocking), in the life
    /// of the runtime that received it.
    pub fn waiting(&self) -> bool {
        let rare = self.rare();
        self.result.is_none() && rare.lost.is_none() && rare.survived.is_none() && !self.closed
    }

    /// Open: waiting, or pending and not closed.
    pub fn open(&self) -> bool {
        self.waiting() || (self.pending && !self.closed)
    }
}

/// Every call the log requested, and the indexes over the open ones.
#[derive(Default)]
pub struct Calls {
    /// The number of every callId the log named (the judge's one table by
    /// callId: protocol conformance and coverage keep their records by it too).
    ids: CallIds,
    /// In place by number: a record is ~150 bytes, and a table of boxed
    /// records cost an allocation and a slot of 24 bytes (~40 with its slack)
    /// per call beside it.
    by_ix: Dense<CallInfo>,
    /// Open calls by agent (the first in place: most agents have one open).
    of_agent: FxHashMap<Name, CallSet>,
    /// Open calls by the answerer that is their offeree or owner.
    attended_by: FxHashMap<Who, FxHashSet<CallId>>,
    /// The names of the answerers calls name, by [`Who`] (from 1), and the
    /// number of each name.
    answerers: Vec<Name>,
    who: FxHashMap<Name, Who>,
}

fn remove_from(index: &mut FxHashMap<Who, FxHashSet<CallId>>, who: Who, call_id: &str) {
    if let Some(set) = index.get_mut(&who) {
        set.remove(call_id);
        if set.is_empty() {
            index.remove(&who);
        }
    }
}

impl Calls {
    /// The number of answerer `name`, if a call named it.
    pub fn who_of(&self, name: &str) -> Option<Who> {
        self.who.get(name).copied()
    }

    /// The number of answerer `name`, given now if no call named it before.
    pub fn who(&mut self, name: &Name) -> Who {
        if let Some(who) = self.who.get(name) {
            return *who;
        }
        self.answerers.push(name.clone());
        let who = u32::try_from(self.answerers.len())
            .ok()
            .and_then(NonZeroU32::new)
            .expect("fewer than 2^32 answerers");
        self.who.insert(name.clone(), who);
        who
    }

    /// The name of the answerer numbered `who`.
    pub fn answerer(&self, who: Who) -> &Name {
        &self.answerers[who.get() as usize - 1]
    }

    /// Who attends call `info`, by name.
    pub fn attending<'a>(&'a self, info: &CallInfo) -> Attending<'a> {
        Attending {
            offeree: info.offeree.map(|who| self.answerer(who)),
            owner: info.owner.map(|who| self.answerer(who)),
        }
    }

    /// The number of the callId `event` names, given now if the log never
    /// named it before.
    pub fn intern_event(&mut self, event: &crate::event::Event) -> Option<CallIx> {
        self.ids.intern_event(event)
    }

    /// Every callId the log named, with its number.
    pub fn ids(&self) -> &CallIds {
        &self.ids
    }

    /// Whether the log requested `call_id`.
    pub fn contains(&self, call_id: &str) -> bool {
        self.get(call_id).is_some()
    }

    pub fn get(&self, call_id: &str) -> Option<&CallInfo> {
        self.by_ix.get(self.ids.get(call_id)?)
    }

    pub fn get_mut(&mut self, call_id: &str) -> Option<&mut CallInfo> {
        self.by_ix.get_mut(self.ids.get(call_id)?)
    }

    /// A new call, open from now on (a second request under one callId replaces
    /// the first).
    pub fn insert(&mut self, call_id: &CallId, info: CallInfo) {
        self.of_agent
            .entry(info.agent.clone())
            .or_default()
            .insert(call_id.clone(), ());
        let ix = self.ids.intern(call_id);
        if let Some(old) = self.by_ix.insert(ix, info) {
            self.unattend(call_id, old.offeree, old.owner);
        }
    }

    fn unattend(&mut self, call_id: &str, offeree: Option<Who>, owner: Option<Who>) {
        for who in offeree.into_iter().chain(owner) {
            remove_from(&mut self.attended_by, who, call_id);
        }
    }

    /// The call was offered to `answerer`: it is the offeree now.
    pub fn offer(&mut self, call_id: &CallId, answerer: &Name) {
        let who = self.who(answerer);
        let Some(info) = self.ids.get(call_id).and_then(|ix| self.by_ix.get_mut(ix)) else {
            return;
        };
        info.offered = true;
        let old = info.offeree.replace(who);
        if let Some(old) = old {
            remove_from(&mut self.attended_by, old, call_id);
        }
        if info.open() {
            self.attended_by.entry(who).or_default().insert(call_id.clone());
        }
    }

    /// `answerer` accepted: no offer is out any more, and it owns the call.
    pub fn accept(&mut self, call_id: &CallId, answerer: &Name) {
        let who = self.who(answerer);
        let Some(info) = self.ids.get(call_id).and_then(|ix| self.by_ix.get_mut(ix)) else {
            return;
        };
        let (offeree, owner) = (info.offeree.take(), info.owner.replace(who));
        let open = info.open();
        self.unattend(call_id, offeree, owner);
        if open {
            self.attended_by.entry(who).or_default().insert(call_id.clone());
        }
    }

    /// `answerer` declined, let its offer time out, or died (`dead`): it is the
    /// offeree no more, and a dead owner owns nothing.
    pub fn decline(&mut self, call_id: &str, answerer: &str, dead: bool) {
        let Some(who) = self.who_of(answerer) else {
            return; // no call was ever offered to it, nor owned by it
        };
        let Some(info) = self.ids.get(call_id).and_then(|ix| self.by_ix.get_mut(ix)) else {
            return;
        };
        if info.offeree == Some(who) {
            info.offeree = None;
            remove_from(&mut self.attended_by, who, call_id);
        }
        if dead && info.owner == Some(who) {
            info.owner = None;
            remove_from(&mut self.attended_by, who, call_id);
        }
    }

    /// The call is no longer open: it leaves every index.
    pub fn detach(&mut self, call_id: &str) {
        let Some(info) = self.ids.get(call_id).and_then(|ix| self.by_ix.get_mut(ix)) else {
            return;
        };
        let (offeree, owner) = (info.offeree.take(), info.owner.take());
        let agent = info.agent.clone();
        self.unattend(call_id, offeree, owner);
        if let Some(set) = self.of_agent.get_mut(&agent) {
            set.remove(call_id);
            if set.is_empty() {
                self.of_agent.remove(&agent);
            }
        }
    }

    /// The open calls of `agent`.
    pub fn open_of(&self, agent: &str) -> Vec<CallId> {
        self.of_agent
            .get(agent)
            .map(|set| set.ids().cloned().collect())
            .unwrap_or_default()
    }

    /// The open calls `answerer` is offered or owns.
    pub fn attended_by(&self, answerer: &str) -> Vec<CallId> {
        (self.who_of(answerer))
            .and_then(|who| self.attended_by.get(&who))
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Every open call.
    pub fn open_ids(&self) -> Vec<CallId> {
        self.of_agent.values().flat_map(CallSet::ids).cloned().collect()
    }

    /// A process loss: every answerer is gone, so no call is offered or owned.
    pub fn nobody_attends(&mut self) {
        for (_, calls) in self.attended_by.drain() {
            for call_id in calls {
                let ix = self.ids.get(&call_id);
                if let Some(info) = ix.and_then(|ix| self.by_ix.get_mut(ix)) {
                    info.offeree = None;
                    info.owner = None;
                }
            }
        }
    }

    /// Every call, in the order the log first named them (for what is checked
    /// once, at the end).
    pub fn iter(&self) -> impl Iterator<Item = (&CallId, &CallInfo)> {
        let ids = self.ids.by_ix();
        (self.by_ix.iter()).map(move |(ix, info)| (ids[ix.index()], info))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(agent: &str) -> CallInfo {
        CallInfo::new(agent.into(), Schema::Timed, 1, 0.0)
    }

    fn names(ids: Vec<CallId>) -> Vec<String> {
        let mut names: Vec<String> = ids.iter().map(|c| c.to_string()).collect();
        names.sort();
        names
    }

    #[test]
    fn the_indexes_hold_open_calls_only_and_follow_who_attends_them() {
        let mut calls = Calls::default();
        let (one, two): (CallId, CallId) = ("root/1".into(), "root/2".into());
        calls.insert(&one, info("root"));
        calls.insert(&two, info("root"));
        assert_eq!(names(calls.open_of("root")), ["root/1", "root/2"]);
        calls.offer(&one, &"web".into());
        assert_eq!(names(calls.attended_by("web")), ["root/1"]);
        calls.accept(&one, &"web".into());
        assert_eq!(
            names(calls.attended_by("web")),
            ["root/1"],
            "the offeree became the owner"
        );
        calls.decline(&one, "web", false);
        assert_eq!(
            names(calls.attended_by("web")),
            ["root/1"],
            "an owner's decline changes nothing"
        );
        calls.decline(&one, "web", true);
        assert!(calls.attended_by("web").is_empty(), "a dead owner owns nothing");
        calls.offer(&two, &"web".into());
        calls.offer(&two, &"terminal".into());
        assert!(calls.attended_by("web").is_empty(), "the waterfall moved on");
        assert_eq!(names(calls.attended_by("terminal")), ["root/2"]);
        calls.detach(&two);
        assert!(calls.attended_by("terminal").is_empty());
        assert_eq!(names(calls.open_of("root")), ["root/1"]);
        assert_eq!(names(calls.open_ids()), ["root/1"]);
    }

    #[test]
    fn a_process_loss_leaves_nobody_attending() {
        let mut calls = Calls::default();
        let one: CallId = "root/1".into();
        calls.insert(&one, info("root"));
        calls.offer(&one, &"web".into());
        calls.accept(&one, &"web".into());
        calls.nobody_attends();
        assert!(calls.attended_by("web").is_empty());
        assert!(
            calls
                .get("root/1")
                .is_some_and(|i| i.owner.is_none() && i.offeree.is_none())
        );
        assert_eq!(
            names(calls.open_of("root")),
            ["root/1"],
            "still open: a timed call survives"
        );
        let _ = one;
    }

    /// A run's checker holds one record a call, in place: its size is a
    /// run's memory (issue #19).
    #[test]
    fn a_calls_record_is_128_bytes() {
        assert_eq!(std::mem::size_of::<CallInfo>(), 128);
        assert_eq!(
            std::mem::size_of::<Rare>(),
            72,
            "the rare facts, boxed for the few"
        );
    }

    #[test]
    fn waiting_and_open_follow_the_calls_life() {
        let mut call = info("root");
        assert!(call.waiting() && call.open());
        call.result = Some((2, 1.0, ResultKind::Pending));
        call.pending = true;
        assert!(!call.waiting() && call.open());
        call.closed = true;
        assert!(!call.open());
        let mut lost = info("root");
        lost.rare_mut().lost = NonZeroU64::new(3);
        assert!(!lost.waiting() && !lost.open());
    }
}
