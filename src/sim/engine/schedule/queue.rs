//! The delivery queue: every message between actors and every timer of a
//! simulated run passes through it (SPEC §6 "Scheduling").
//!
//! Messages travel on channels, one per ordered pair of actors, and leave a channel
//! in the order they entered it, as ractor guarantees between two actors. A timer
//! is a message an actor sends itself, due at a time. At each step the queue
//! gathers everything deliverable at the earliest instant (the heads of the
//! channels and the timers due then) and a [`Chooser`] picks one; the next is
//! picked only after the receiver has handled it. The queue also keeps the
//! account of what is still due, so the run's end is known (SPEC §5): messages,
//! timers and scheduled events are work; a fault timer (`crash_at`, or an
//! outside broker's timer) is not, unless its owner could still change something.
//!
//! Every step costs O(log n) in what is due (SPEC §6 "Cost"): what is deliverable
//! now is a [`Ready`] set ordered by `seq`, a cancelled timer leaves it at once,
//! and a strategy picks by rank without seeing the whole set.

use std::collections::{VecDeque, hash_map};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::effect::TimerId;
use crate::protocol::{Addr, AnswererIx, Envelope, Nanos};
use crate::sim::engine::schedule::fired::Fired;
use crate::sim::engine::schedule::later::{Due, Later};
use crate::sim::engine::schedule::ready::Slot;
pub use crate::sim::engine::schedule::ready::{Candidate, Ready};
use crate::sim::engine::schedule::timers::{FAULT_BIT, Timer, Timers};
use crate::trim::Trim;

/// Picks the next delivery among what is ready (at least two, in `seq` order).
pub trait Chooser {
    /// The rank (index in `seq` order) of the candidate to deliver. `ready` is
    /// mutable only so that a chooser may take [`Ready::take_entered`].
    fn pick(&mut self, ready: &mut Ready) -> usize;

    /// Whether the run should stop before delivering what was just picked (an
    /// exploration that found every order from here covered).
    fn halted(&self) -> bool {
        false
    }

    /// Hears that a delivery was made, and whether it touched state shared by
    /// every actor (an agent spawned takes the next agent id).
    fn delivered(&mut self, _shared: bool) {}
}

/// One delivery.
#[derive(Debug)]
pub struct Delivery {
    /// The sender (the receiver itself for a timer).
    pub from: Addr,
    /// The message and its receiver.
    pub envelope: Envelope,
    /// Its place in the broker's mailbox, for messages to the broker.
    pub mbox: Option<u64>,
    /// The time it is delivered at.
    pub at: Nanos,
}

/// Why the queue has nothing more to deliver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// No work is due any more: the run is over.
    Done,
    /// Work is due only past this limit: the run stops at the limit.
    Limit,
}

#[derive(Debug)]
struct Message {
    due: Nanos,
    seq: u64,
    /// Its place in the broker's mailbox, from 1; 0 for a message to anyone
    /// else (8 bytes, not an `Option`'s 16: a channel of 10^5 offers holds one
    /// message a call).
    mbox: u64,
    envelope: Envelope,
}

/// A channel exists while it holds messages; its head is in the heap or in
/// `ready`. The head lives in the table's slot, beside the key a delivery looks
/// up: most channels carry one message at a time (a request, a settle), and a
/// deque of one was an allocation of its own and a second cache miss at every
/// delivery, the largest part of a delivery's cost once a run's channels no
/// longer fit in the cache (a tree of 10^5 agents).
#[derive(Debug)]
struct Channel {
    head: Message,
    /// What follows the head, in order; boxed, and only while there is any:
    /// most channels never queue behind their head, and a table slot is a
    /// channel's size (a tie's window-expiry instant holds a channel to every
    /// agent: an empty deque in place was 16 bytes of each slot more).
    #[allow(clippy::box_collection)] // the box is the point: 8 bytes in the slot, not 24
    rest: Option<Box<VecDeque<Message>>>,
}

impl Channel {
    fn last(&self) -> &Message {
        self.rest
            .as_ref()
            .and_then(|rest| rest.back())
            .unwrap_or(&self.head)
    }

    fn len(&self) -> usize {
        1 + self.rest.as_ref().map_or(0, |rest| rest.len())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Channel(Addr, Addr),
    Timer(Addr, TimerId),
}

/// What the heap holds of an entry: its due time and its [`Slot`] (its `seq`,
/// unique, so the order never reaches the key, and its key packed in two
/// words), 32 bytes in all where the enum took 48: a heap of every pending
/// timer is a run's largest vector. Ordered by (due, seq).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    due: Nanos,
    slot: Slot,
}

impl Due for Entry {
    fn due(&self) -> Nanos {
        self.due
    }
}

impl Entry {
    fn new(due: Nanos, seq: u64, key: Key) -> Entry {
        let slot = match key {
            Key::Channel(from, to) => Slot::channel(seq, from, to),
            Key::Timer(owner, id) => Slot::timer(seq, owner, id),
        };
        Entry { due, slot }
    }

    fn seq(&self) -> u64 {
        self.slot.seq
    }

    fn key(&self) -> Key {
        self.slot.candidate().key()
    }
}

impl Candidate {
    fn key(&self) -> Key {
        match (self.from, self.timer) {
            (_, Some(id)) => Key::Timer(self.to, id),
            (Some(from), None) => Key::Channel(from, self.to),
            (None, None) => unreachable!("a candidate is a channel's head or a timer"),
        }
    }
}

/// A channel's key in the queue's table.
fn channel_key(from: Addr, to: Addr) -> (u64, u64) {
    (from.code(), to.code())
}

/// Stale heap entries below this many are left for their due time.
const STALE_MIN: usize = 1024;

/// The queue.
#[derive(Debug, Default)]
pub struct Queue {
    now: Nanos,
    seq: u64,
    mbox: u64,
    /// Keyed by the sender's and the receiver's [`Addr::code`]: 16 bytes a key,
    /// hashed and compared as two words (an `(Addr, Addr)` key took 32 and compared
    /// two enums at every probe; a channel is made and dropped per message).
    channels: FxHashMap<(u64, u64), Channel>,
    /// Live timers, by owner and id (an agent's in place by its id).
    timers: Timers,
    /// The live timers of each answerer, the one kind of actor that dies on its
    /// own: its death drops them without a look at anyone else's.
    answerer_timers: FxHashMap<AnswererIx, FxHashSet<TimerId>>,
    /// What is due later (and stale entries, skipped when they come up).
    heap: Later<Entry>,
    /// How many entries of `heap` may be stale (timers cancelled or dropped,
    /// channels dropped; an upper bound). Once they outnumber the rest the heap
    /// is rebuilt without them: a cancelled timer costs O(1) amortised instead of
    /// its slot until its due time (a window timer cancelled by an early answer
    /// would otherwise stay for the whole window).
    stale: usize,
    /// The `seq` of each timer that left the table while its entry waited in
    /// `heap` (cancelled, or its answerer died), since the heap was last
    /// rebuilt: a rebuild drops the entries listed here with no look-up in the
    /// tables. Looking each entry up cost a cache miss for every live one once
    /// the tables outgrew the cache (a cancel of a tree of 10^5 agents rebuilt
    /// its heap of work timers from 10^5 look-ups, then 5x10^4, ...).
    dead: FxHashSet<u64>,
    /// Whether `heap` may hold a stale entry `dead` does not list: a process
    /// loss drops channels and timers wholesale, and the next rebuild looks
    /// every entry up, as every rebuild did before.
    unlisted: bool,
    /// Deliverable at `now`: live entries only.
    ready: Ready,
    /// Messages queued plus live timers that are not faults.
    work: usize,
    /// Live fault timers.
    faults: usize,
}

impl Queue {
    /// An empty queue at time 0.
    pub fn new() -> Queue {
        Queue::default()
    }

    /// The time of the delivery at hand.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Work still due: queued messages and timers that are not faults.
    pub fn work(&self) -> usize {
        self.work
    }

    /// Queues `envelope` from `from`, deliverable at `due` but never before what
    /// `from` sent its receiver earlier.
    pub fn send(&mut self, from: Addr, envelope: Envelope, due: Nanos) {
        let to = envelope.to();
        self.seq += 1;
        let mbox = if to == Addr::Broker {
            self.mbox += 1;
            self.mbox
        } else {
            0
        };
        let now = self.now;
        let message = |due: Nanos, seq: u64| Message {
            due: due.max(now),
            seq,
            mbox,
            envelope,
        };
        self.work += 1;
        match self.channels.entry(channel_key(from, to)) {
            hash_map::Entry::Occupied(mut channel) => {
                let channel = channel.get_mut();
                let message = message(due.max(channel.last().due), self.seq);
                // Room for one, not the four of a first push (352 bytes).
                let rest = (channel.rest).get_or_insert_with(|| Box::new(VecDeque::with_capacity(1)));
                rest.push_back(message);
            }
            hash_map::Entry::Vacant(slot) => {
                let head = message(due, self.seq);
                let entry = Entry::new(head.due, head.seq, Key::Channel(from, to));
                slot.insert(Channel { head, rest: None });
                self.schedule(entry);
            }
        }
    }

    /// Starts a timer of `owner` that delivers `envelope` to it at `due`.
    pub fn timer(&mut self, owner: Addr, id: TimerId, envelope: Envelope, due: Nanos, fault: bool) {
        self.seq += 1;
        let previous = self.timers.insert(
            owner,
            id,
            Timer {
                fired: Fired::pack(owner, id, envelope),
                tagged: self.seq | if fault { FAULT_BIT } else { 0 },
            },
        );
        assert!(previous.is_none(), "timer {id} of {owner:?} started twice");
        if let Addr::Answerer(index) = owner {
            self.answerer_timers.entry(index).or_default().insert(id);
        }
        if fault {
            self.faults += 1;
        } else {
            self.work += 1;
        }
        self.schedule(Entry::new(due.max(self.now), self.seq, Key::Timer(owner, id)));
    }

    /// Cancels a timer if it has not fired.
    pub fn cancel(&mut self, owner: Addr, id: TimerId) {
        if let Some(timer) = self.timers.remove(owner, id) {
            self.unindex(owner, id);
            self.forget(&timer);
            self.left(timer.seq());
        }
    }

    /// A timer with `seq` left the table: out of the ready set if it waits
    /// there, else listed as dead for the heap's next rebuild.
    fn left(&mut self, seq: u64) {
        if self.ready.remove(seq).is_none() {
            self.dead.insert(seq);
        }
        self.went_stale(1);
    }

    /// Counts `n` more entries that may be stale, and drops them all from the
    /// heap when they are half of it. Which entries are live does not depend on
    /// the heap's layout, and its order is total (`seq` is unique), so what is
    /// delivered, and when, is the same with or without the rebuild.
    ///
    /// The dead list is bounded the same way: entries skipped as they come up
    /// leave `stale` but stay listed, so once the list outgrows the heap a
    /// rebuild empties it (each rebuild follows at least as many listings as
    /// it reads entries: O(1) amortised a cancel).
    fn went_stale(&mut self, n: usize) {
        self.stale += n;
        let due = self.stale >= STALE_MIN && self.stale * 2 >= self.heap.len();
        if !due && self.dead.len() <= STALE_MIN.max(self.heap.len()) {
            return;
        }
        let mut heap = std::mem::take(&mut self.heap);
        if self.unlisted {
            heap.retain(|entry| self.live(entry.key(), entry.seq()));
        } else {
            heap.retain(|entry| !self.dead.contains(&entry.seq()));
        }
        self.heap = heap;
        self.stale = 0;
        self.dead.clear();
        self.dead.trim();
        self.unlisted = false;
    }

    /// Gives back what the heap and the tables hold far beyond their contents
    /// (once per instant; see [`crate::trim`]).
    fn trim(&mut self) {
        self.heap.trim();
        self.timers.trim();
        self.channels.trim();
    }

    fn unindex(&mut self, owner: Addr, id: TimerId) {
        if let Addr::Answerer(index) = owner
            && let Some(ids) = self.answerer_timers.get_mut(&index)
        {
            ids.remove(&id);
            if ids.is_empty() {
                self.answerer_timers.remove(&index);
            }
        }
    }

    fn forget(&mut self, timer: &Timer) {
        if timer.fault() {
            self.faults -= 1;
        } else {
            self.work -= 1;
        }
    }

    /// Drops every timer of answerer `index`, which died: a dead answerer's timers
    /// would fire into nothing, yet count as work and keep the run going (on the
    /// real clock they die with their actor). Costs its own timers, not everyone's.
    pub fn drop_answerer_timers(&mut self, index: AnswererIx) {
        let owner = Addr::Answerer(index);
        let mut ids: Vec<TimerId> = (self.answerer_timers.remove(&index))
            .map(|ids| ids.into_iter().collect())
            .unwrap_or_default();
        ids.sort_unstable(); // a set's order is no order
        for id in ids {
            if let Some(timer) = self.timers.remove(owner, id) {
                self.forget(&timer);
                self.left(timer.seq());
            }
        }
    }

    /// Drops every channel and timer that `keep` rejects (process loss: only the
    /// driver's own schedule survives).
    pub fn retain(&mut self, keep: impl Fn(Addr, Addr) -> bool) {
        let (mut dropped, mut faults) = (0, 0);
        self.channels.retain(|(from, to), channel| {
            let kept = keep(Addr::from_code(*from), Addr::from_code(*to));
            if !kept {
                dropped += channel.len();
            }
            kept
        });
        self.timers.retain(|owner, timer| {
            let kept = keep(owner, owner);
            match (kept, timer.fault()) {
                (false, false) => dropped += 1,
                (false, true) => faults += 1,
                _ => {}
            }
            kept
        });
        self.work -= dropped;
        self.faults -= faults;
        self.unlisted = true;
        self.went_stale(dropped + faults);
        let timers = &self.timers;
        self.answerer_timers.retain(|index, ids| {
            ids.retain(|id| timers.get(Addr::Answerer(*index), *id).is_some());
            !ids.is_empty()
        });
        // Stale entries in the heap are skipped when they come up; the ready set
        // holds live entries only.
        let mut ready = std::mem::take(&mut self.ready);
        ready.retain(|c| self.live(c.key(), c.seq));
        self.ready = ready;
    }

    /// Puts `entry` where it waits: with what is ready if it is due now and
    /// joins what is ready (or what will be, nothing else being due now),
    /// else in the heap. A message due now while nothing is ready goes
    /// straight to the ready set when the heap holds nothing due now: the heap
    /// would give it back at the next step as the only entry of the instant
    /// (in the binary heap it had then, after a push and a pop through a
    /// tree's 10^5 work timers, seventeen levels, at nearly every delivery of
    /// a tree whose instants are one delivery long). A timer due now still
    /// goes through the heap when nothing is ready: a fault's timer must not
    /// keep a run going that has no work left, and the heap decides that.
    fn schedule(&mut self, entry: Entry) {
        let due_now = entry.due == self.now;
        let joins = !self.ready.is_empty() || (!entry.slot.is_timer() && !self.heap.holds_due(self.now));
        if due_now && joins {
            if self.ready.is_empty() {
                // An instant's first entry, which the heap took before and
                // `advance` gave back, trimming: trim here as there, or a run
                // whose instants are one delivery long never gives a burst's
                // room back (the loss family held 5 MB more at 10^5).
                self.trim();
            }
            self.ready.insert_slot(entry.slot);
        } else {
            self.heap.push(entry);
        }
    }

    fn live(&self, key: Key, seq: u64) -> bool {
        match key {
            Key::Channel(from, to) => self
                .channels
                .get(&channel_key(from, to))
                .is_some_and(|c| c.head.seq == seq),
            Key::Timer(owner, id) => self.timers.get(owner, id).is_some_and(|t| t.seq() == seq),
        }
    }

    /// Whether a heap entry is live. With no entry counted stale (`stale` is an
    /// upper bound, so none is) this looks nothing up: a run that cancels
    /// nothing (a tree's children working) would otherwise probe the timer or
    /// channel table once more for every entry the clock reaches, a cache miss
    /// apiece once a run's tables outgrow the cache.
    ///
    /// With every stale entry listed in `dead` (no process loss since the last
    /// rebuild), the list answers: it holds what left since then (a rebuild
    /// empties it once it outgrows the heap, [`Queue::went_stale`]), 8 bytes
    /// a `seq`, where the tables hold every live timer and channel of the run
    /// with their messages (a miss apiece in a mixed load, whose window timers
    /// cancelled by early answers keep an entry counted stale at nearly every
    /// instant).
    fn surely_live(&self, entry: &Entry) -> bool {
        if self.stale == 0 {
            debug_assert!(
                self.live(entry.key(), entry.seq()),
                "an entry not counted stale is live"
            );
            return true;
        }
        if !self.unlisted {
            let live = !self.dead.contains(&entry.seq());
            debug_assert_eq!(
                live,
                self.live(entry.key(), entry.seq()),
                "`dead` lists every stale entry while nothing is unlisted"
            );
            return live;
        }
        self.live(entry.key(), entry.seq())
    }

    /// The next delivery, chosen by `chooser` among what is deliverable at the
    /// earliest instant; or why there is none. Nothing past `limit` is delivered.
    /// Fault timers count as work only when `faults_matter` (a crash can still
    /// change something).
    pub fn next(
        &mut self,
        chooser: &mut dyn Chooser,
        limit: Nanos,
        faults_matter: bool,
    ) -> Result<Delivery, Stop> {
        self.next_hinting(chooser, limit, &mut |_| faults_matter, &mut |_| {})
    }

    /// [`Queue::next`], telling `picked` the receiver of each entry as soon as
    /// it is picked, before its message is taken out. Once nothing but fault
    /// timers is left, they count as work only if `fault_matters` says of one
    /// of their owners that its fault could still change something (SPEC §5:
    /// faults are not work); it is asked then only, once a live fault timer at
    /// most.
    pub fn next_hinting(
        &mut self,
        chooser: &mut dyn Chooser,
        limit: Nanos,
        fault_matters: &mut dyn FnMut(Addr) -> bool,
        picked: &mut dyn FnMut(Addr),
    ) -> Result<Delivery, Stop> {
        loop {
            if self.ready.is_empty() {
                if self.work == 0 && !(self.faults > 0 && self.a_fault_matters(fault_matters)) {
                    return Err(Stop::Done);
                }
                self.advance(limit)?;
                continue;
            }
            let rank = if self.ready.len() == 1 {
                0
            } else {
                chooser.pick(&mut self.ready).min(self.ready.len() - 1)
            };
            let candidate = self.ready.remove_nth(rank);
            picked(candidate.to);
            // An agent's live timer is in place by its id: asked for now, it
            // comes with the agent's slot, not after it (the delivery may
            // cancel or fire it).
            self.timers.prefetch(candidate.to);
            if let Some(delivery) = self.take(candidate.key(), candidate.seq) {
                return Ok(delivery);
            }
        }
    }

    /// Whether a live fault timer's owner is one whose fault `fault_matters`.
    /// With no work left every live timer is a fault: the table holds faults
    /// only (in no set order, and `any` of a pure question needs none).
    fn a_fault_matters(&self, fault_matters: &mut dyn FnMut(Addr) -> bool) -> bool {
        debug_assert_eq!(self.work, 0, "asked only once nothing but faults is left");
        self.timers.any_owner(fault_matters)
    }

    /// Moves the clock to the earliest due entry and gathers everything due then.
    fn advance(&mut self, limit: Nanos) -> Result<(), Stop> {
        let due = loop {
            let Some(due) = self.heap.first_due() else {
                return Err(Stop::Done);
            };
            let top = (self.heap.peek_now().copied()).expect("the earliest instant's entries wait in `now`");
            if self.surely_live(&top) {
                break due;
            }
            self.heap.pop_now();
            self.stale = self.stale.saturating_sub(1);
        };
        if due > limit {
            self.now = limit.max(self.now);
            return Err(Stop::Limit);
        }
        self.now = due;
        // The heap gives what is due at one instant in `seq` order (its order is
        // (due, seq)), so each insertion into the empty ready set is an append,
        // with no list of the instant's entries on the side (a tie's instant holds
        // every root's timer: that list was ~90 bytes a call at the peak).
        debug_assert!(
            self.ready.is_empty(),
            "the clock moves only when nothing is ready"
        );
        while let Some(top) = self.heap.pop_now() {
            if self.surely_live(&top) {
                self.ready.insert_slot(top.slot);
            } else {
                self.stale = self.stale.saturating_sub(1);
            }
        }
        self.trim();
        Ok(())
    }

    /// Takes the entry's message out (a stale entry gives nothing).
    fn take(&mut self, key: Key, seq: u64) -> Option<Delivery> {
        match key {
            Key::Timer(owner, id) => {
                let timer = self.timers.remove(owner, id).filter(|t| t.seq() == seq)?;
                self.unindex(owner, id);
                self.forget(&timer);
                Some(Delivery {
                    from: owner,
                    envelope: timer.fired.unpack(owner, id),
                    mbox: None,
                    at: self.now,
                })
            }
            Key::Channel(from, to) => {
                let hash_map::Entry::Occupied(mut channel) = self.channels.entry(channel_key(from, to))
                else {
                    return None;
                };
                if channel.get().head.seq != seq {
                    return None; // a channel of a life before a process loss
                }
                self.work -= 1;
                let rest = &mut channel.get_mut().rest;
                let next = rest.as_mut().and_then(|queued| queued.pop_front());
                match rest {
                    Some(queued) if queued.is_empty() => *rest = None,
                    // A burst on one channel (every root's registration at the
                    // start) gives its room back as it drains.
                    Some(queued) => queued.trim(),
                    None => {}
                }
                let message = match next {
                    Some(next) => {
                        let entry = Entry::new(next.due, next.seq, Key::Channel(from, to));
                        let message = std::mem::replace(&mut channel.get_mut().head, next);
                        self.schedule(entry);
                        message
                    }
                    // An empty channel goes: a send makes it again, with nothing
                    // ahead of its first message, as here.
                    None => channel.remove().head,
                };
                Some(Delivery {
                    from,
                    envelope: message.envelope,
                    mbox: (message.mbox > 0).then_some(message.mbox),
                    at: self.now,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AgentMsg, BrokerMsg};
    use crate::trim::TRIM_MIN;

    #[test]
    fn a_packed_entry_gives_back_its_key() {
        let addrs = [
            Addr::Driver,
            Addr::Broker,
            Addr::Agent(0),
            Addr::Agent(7),
            Addr::Agent((1 << 60) - 1),
            Addr::Answerer(0),
            Addr::Answerer(63),
        ];
        for a in addrs {
            assert_eq!(Addr::from_code(a.code()), a);
            for b in addrs {
                let channel = Key::Channel(a, b);
                assert_eq!(Entry::new(5, 9, channel).key(), channel);
            }
            for id in [0, 1, u64::MAX] {
                let timer = Key::Timer(a, id);
                assert_eq!(Entry::new(5, 9, timer).key(), timer);
            }
        }
        assert_eq!(std::mem::size_of::<Entry>(), 32);
        assert_eq!(std::mem::size_of::<Message>(), 88);
        assert_eq!(std::mem::size_of::<Timer>(), 24);
    }

    struct Last;
    impl Chooser for Last {
        fn pick(&mut self, ready: &mut Ready) -> usize {
            ready.len() - 1
        }
    }

    struct First;
    impl Chooser for First {
        fn pick(&mut self, _: &mut Ready) -> usize {
            0
        }
    }

    fn stop(agent: u64) -> Envelope {
        Envelope::Broker(BrokerMsg::Stop(agent))
    }

    fn agent_of(delivery: &Delivery) -> u64 {
        match delivery.envelope {
            Envelope::Broker(BrokerMsg::Stop(agent)) => agent,
            _ => panic!("not a stop"),
        }
    }

    #[test]
    fn one_channel_delivers_in_send_order_even_when_a_later_message_is_due_first() {
        let mut queue = Queue::new();
        queue.send(Addr::Agent(1), stop(1), 50);
        queue.send(Addr::Agent(1), stop(2), 10);
        let first = queue.next(&mut Last, u64::MAX, false).unwrap();
        let second = queue.next(&mut Last, u64::MAX, false).unwrap();
        assert_eq!((agent_of(&first), first.at), (1, 50));
        assert_eq!(
            (agent_of(&second), second.at),
            (2, 50),
            "FIFO per pair: held back to the first"
        );
        assert_eq!(queue.next(&mut Last, u64::MAX, false).unwrap_err(), Stop::Done);
    }

    #[test]
    fn a_message_due_now_with_nothing_ready_meets_a_timer_due_now_as_a_tie() {
        // Nothing ready at 0: a zero-delay timer goes to the heap, and a
        // message sent next, due now too, must wait with it there (not skip to
        // the ready set alone), so that both are candidates of the instant.
        let mut queue = Queue::new();
        queue.timer(Addr::Agent(7), 1, stop(1), 0, false);
        queue.send(Addr::Agent(2), stop(2), 0);
        let first = queue.next(&mut First, u64::MAX, false).unwrap();
        assert_eq!(agent_of(&first), 1, "the timer, entered first, is a candidate");
        // A message due now while nothing else is: delivered at once, in order.
        queue.send(Addr::Agent(3), stop(3), 0);
        let order: Vec<u64> = std::iter::from_fn(|| queue.next(&mut First, u64::MAX, false).ok())
            .map(|d| agent_of(&d))
            .collect();
        assert_eq!(order, [2, 3]);
    }

    #[test]
    fn a_fault_timer_due_now_keeps_no_run_going_that_has_no_work() {
        let mut queue = Queue::new();
        queue.timer(Addr::Driver, 1, stop(1), 0, true);
        assert_eq!(queue.next(&mut First, u64::MAX, false).unwrap_err(), Stop::Done);
        let fired = queue.next(&mut First, u64::MAX, true).unwrap();
        assert_eq!(agent_of(&fired), 1, "while a fault matters, it fires");
    }

    #[test]
    fn only_a_fault_that_matters_keeps_a_run_going() {
        let mut queue = Queue::new();
        queue.timer(Addr::Answerer(0), 1, stop(1), 10, true);
        queue.timer(Addr::Answerer(1), 1, stop(2), 20, true);
        let mut asked = Vec::new();
        let mut nobody = |owner: Addr| {
            asked.push(owner);
            false
        };
        let stopped = queue.next_hinting(&mut First, u64::MAX, &mut nobody, &mut |_| {});
        assert_eq!(stopped.unwrap_err(), Stop::Done);
        asked.sort_unstable_by_key(|a| a.code());
        assert_eq!(
            asked,
            [Addr::Answerer(0), Addr::Answerer(1)],
            "each fault's owner asked"
        );
        // The second answerer's crash matters: both fire, in time order, and
        // the run stops once that one has.
        let mut second = |owner: Addr| owner == Addr::Answerer(1);
        let fired: Vec<u64> = std::iter::from_fn(|| {
            let delivery = queue.next_hinting(&mut First, u64::MAX, &mut second, &mut |_| {});
            delivery.ok().map(|d| d.at)
        })
        .collect();
        assert_eq!(fired, [10, 20]);
    }

    #[test]
    fn ties_between_senders_go_to_the_chooser() {
        for (chooser, expected) in [(&mut First as &mut dyn Chooser, 1), (&mut Last, 2)] {
            let mut queue = Queue::new();
            queue.send(Addr::Agent(1), stop(1), 5);
            queue.send(Addr::Agent(2), stop(2), 5);
            let delivery = queue.next(chooser, u64::MAX, false).unwrap();
            assert_eq!(agent_of(&delivery), expected);
        }
    }

    #[test]
    fn a_dead_answerers_timers_go_and_nobody_elses() {
        let mut queue = Queue::new();
        queue.timer(Addr::Answerer(0), 1, stop(1), 100, false);
        queue.timer(Addr::Answerer(0), 2, stop(2), 100, true);
        queue.timer(Addr::Answerer(0), 3, stop(3), 10, false);
        queue.cancel(Addr::Answerer(0), 3);
        queue.timer(Addr::Answerer(1), 1, stop(4), 100, false);
        queue.timer(Addr::Agent(7), 1, stop(5), 50, false);
        assert_eq!((queue.work(), queue.faults), (3, 1));
        queue.drop_answerer_timers(0);
        assert_eq!((queue.work(), queue.faults), (2, 0), "its work and its fault go");
        let first = queue.next(&mut First, u64::MAX, true).unwrap();
        let second = queue.next(&mut First, u64::MAX, true).unwrap();
        assert_eq!((agent_of(&first), first.at), (5, 50));
        assert_eq!(
            (agent_of(&second), second.at),
            (4, 100),
            "another answerer's stays"
        );
        assert!(queue.answerer_timers.is_empty(), "a fired timer leaves the index");
        assert_eq!(queue.next(&mut First, u64::MAX, true).unwrap_err(), Stop::Done);
        queue.drop_answerer_timers(1); // nothing left: nothing happens
        assert_eq!(queue.work(), 0);
    }

    #[test]
    fn cancelled_timers_leave_the_heap_long_before_their_due_time() {
        let mut queue = Queue::new();
        let n = 10 * STALE_MIN as u64;
        for id in 0..n {
            queue.timer(Addr::Broker, id, stop(id), 1_000_000 + id, false);
        }
        for id in (0..n).filter(|id| id % 10 != 0) {
            queue.cancel(Addr::Broker, id);
        }
        every_tenth_is_left_and_fires(&mut queue, n);
    }

    /// Of `n` timers, only every tenth is left: the heap holds little more,
    /// and they fire in due order.
    fn every_tenth_is_left_and_fires(queue: &mut Queue, n: u64) {
        assert!(
            queue.heap.len() <= (n / 10) as usize * 2 + STALE_MIN,
            "{} entries",
            queue.heap.len()
        );
        let fired: Vec<u64> = std::iter::from_fn(|| queue.next(&mut First, u64::MAX, false).ok())
            .map(|d| agent_of(&d))
            .collect();
        assert_eq!(
            fired,
            (0..n).step_by(10).collect::<Vec<_>>(),
            "the rest fire, in due order"
        );
    }

    #[test]
    fn a_process_loss_leaves_no_stale_entry_behind_the_next_rebuild() {
        // A loss drops timers without listing them; the rebuild after it must
        // still find them stale (it looks them up), or the heap keeps them.
        let mut queue = Queue::new();
        let n = 10 * STALE_MIN as u64;
        for id in 0..n {
            queue.timer(Addr::Agent(id % 2), id, stop(id), 1_000_000 + id, false);
        }
        queue.retain(|_, to| to != Addr::Agent(1));
        for id in (0..n).filter(|id| id % 2 == 0 && id % 10 != 0) {
            queue.cancel(Addr::Agent(0), id);
        }
        every_tenth_is_left_and_fires(&mut queue, n);
    }

    #[test]
    fn the_dead_list_stays_bounded_when_stale_entries_go_as_they_come_up() {
        // Each timer is cancelled and the clock passes its due time before the
        // next: the stale count never reaches a rebuild, yet the list of dead
        // entries must not grow with the run.
        let mut queue = Queue::new();
        queue.timer(Addr::Broker, u64::MAX, stop(0), u64::MAX / 2, false);
        for id in 0..20 * STALE_MIN as u64 {
            queue.timer(Addr::Broker, 2 * id, stop(id), 10 * id + 5, false);
            queue.timer(Addr::Broker, 2 * id + 1, stop(id), 10 * id + 6, false);
            queue.cancel(Addr::Broker, 2 * id);
            let fired = queue.next(&mut First, u64::MAX, false).expect("the kept timer");
            assert_eq!(agent_of(&fired), id);
            assert!(queue.dead.len() <= STALE_MIN + 1, "{} listed", queue.dead.len());
        }
    }

    #[test]
    fn a_burst_gives_its_memory_back_once_it_has_fired() {
        let mut queue = Queue::new();
        let n = 4 * TRIM_MIN as u64;
        for id in 0..n {
            queue.timer(Addr::Broker, id, stop(id), 1_000 + id / 2, false);
        }
        queue.timer(Addr::Broker, n, stop(n), 1_000_000, false); // one left for later
        let peak = (queue.timers.capacity(), queue.heap.capacity());
        assert!(peak.0 >= n as usize && peak.1 >= n as usize);
        let fired = std::iter::from_fn(|| queue.next(&mut First, 999_999, false).ok()).count();
        assert_eq!(fired, n as usize, "every timer of the burst fires");
        assert!(
            queue.timers.capacity() <= TRIM_MIN && queue.heap.capacity() <= TRIM_MIN,
            "a table of {} and a heap of {} slots hold one timer",
            queue.timers.capacity(),
            queue.heap.capacity()
        );
        let last = queue
            .next(&mut First, u64::MAX, false)
            .expect("the last timer still fires");
        assert_eq!((agent_of(&last), last.at), (n, 1_000_000));
    }

    /// A message due now skips the heap when nothing is ready, so a run whose
    /// instants are one delivery long may never reach `advance`, which trims:
    /// the burst's room must go back at the next instant's first entry all
    /// the same (without it, the loss family held 5 MB more at 10^5).
    #[test]
    fn a_burst_gives_its_room_back_when_the_instants_after_it_skip_the_heap() {
        let mut queue = Queue::new();
        // One timer far ahead: the heap holds nothing due now.
        queue.timer(Addr::Broker, 0, stop(0), 1_000_000, false);
        let n = 4 * TRIM_MIN as u64;
        for agent in 0..n {
            queue.send(Addr::Agent(agent), stop(agent), 0);
        }
        let full = queue.channels.capacity();
        assert!(full >= n as usize);
        for _ in 0..n {
            queue.next(&mut First, 999_999, false).expect("the burst");
        }
        assert_eq!(queue.now(), 0, "the burst took one instant");
        queue.send(Addr::Agent(0), stop(0), 0);
        assert!(
            queue.channels.capacity() <= TRIM_MIN,
            "a table of {} slots (of {full} at the burst) holds one channel",
            queue.channels.capacity()
        );
    }

    #[test]
    fn fault_timers_are_not_work_and_cancelled_timers_never_fire() {
        let mut queue = Queue::new();
        queue.timer(Addr::Answerer(0), 1, stop(1), 1_000, true);
        assert_eq!(queue.work(), 0);
        assert_eq!(queue.next(&mut First, u64::MAX, false).unwrap_err(), Stop::Done);
        let fired = queue
            .next(&mut First, u64::MAX, true)
            .expect("a fault that matters fires");
        assert_eq!(fired.at, 1_000);
        let mut queue = Queue::new();
        queue.timer(Addr::Broker, 1, stop(1), 10, false);
        queue.timer(Addr::Broker, 2, stop(2), 20, false);
        queue.cancel(Addr::Broker, 1);
        let delivery = queue.next(&mut First, u64::MAX, false).unwrap();
        assert_eq!((agent_of(&delivery), delivery.at), (2, 20));
    }

    #[test]
    fn nothing_past_the_limit_is_delivered() {
        let mut queue = Queue::new();
        queue.timer(Addr::Broker, 1, stop(1), 100, false);
        assert_eq!(queue.next(&mut First, 99, false).unwrap_err(), Stop::Limit);
        assert_eq!(queue.now(), 99);
    }

    #[test]
    fn the_broker_mailbox_numbers_messages_in_the_order_they_enter() {
        let mut queue = Queue::new();
        queue.send(Addr::Agent(2), stop(2), 0);
        queue.send(
            Addr::Agent(1),
            Envelope::Agent(1, AgentMsg::WorkDone { step: 0 }),
            0,
        );
        queue.send(Addr::Agent(1), stop(1), 0);
        let mut mboxes = Vec::new();
        while let Ok(delivery) = queue.next(&mut Last, u64::MAX, false) {
            mboxes.push(delivery.mbox);
        }
        assert_eq!(mboxes, [Some(2), None, Some(1)]);
    }
}
