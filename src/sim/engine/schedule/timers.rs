//! The queue's live timers, by owner and id.
//!
//! An agent's timers are its script's `work` steps, one at a time (a script
//! waits for its work before its next step), and a delivery to an agent is
//! often the one that fires or cancels it: the cancel of a tree of 10^5 agents
//! reaches each child in random order, and each ends its work. In a hash table
//! that timer was found through its key, made of the timer's id, which is in
//! the agent's slot: one cache miss after another (the slot, then the table),
//! the largest single growth of that delivery at 10^5 after the queue's own.
//! Here an agent's live timer sits in place by the agent's id, so the queue
//! asks for it the moment it picks a delivery to that agent
//! ([`Timers::prefetch`]), beside the agent's slot, before either is read.
//! Every other timer (the broker's windows and offers, the answerers', the
//! driver's, an agent's second if it ever holds two) is in a hash table.
//!
//! Which table holds a timer is never seen: the queue reads a timer by its key
//! and iterates the tables only for order-free questions (a process loss's
//! `retain`, whether any fault timer's owner matters).

use rustc_hash::FxHashMap;

use crate::dense::Dense;
use crate::effect::TimerId;
use crate::protocol::{Addr, AgentId};
use crate::sim::engine::schedule::fired::Fired;
use crate::trim::Trim;

/// A live timer: 24 bytes in the table. A run's timer table is its largest
/// (every window, offer timeout and answerer latency of every open call), and a
/// table's slots are its empty ones too and, while it grows, the old table's
/// beside the new: an `Envelope` in place (64 bytes, the size of its largest
/// variant, when most timers carry a few bytes) cost ~300 bytes a call at a tie's
/// peak, and boxed, an allocation of 64 bytes a timer. [`Fired`] holds the common
/// timers' messages in 16 bytes and boxes only the rest.
#[derive(Debug)]
pub(super) struct Timer {
    pub(super) fired: Fired,
    /// Its `seq`, with [`FAULT_BIT`] set for a fault timer.
    pub(super) tagged: u64,
}

/// The top bit of a timer's tagged `seq`: a fault timer (`seq` counts messages
/// and timers of one run, far below it).
pub(super) const FAULT_BIT: u64 = 1 << 63;

impl Timer {
    pub(super) fn seq(&self) -> u64 {
        self.tagged & !FAULT_BIT
    }

    pub(super) fn fault(&self) -> bool {
        self.tagged & FAULT_BIT != 0
    }
}

/// An agent's live timer and its id, in place by the agent's id.
#[derive(Debug)]
struct AgentTimer {
    id: TimerId,
    timer: Timer,
}

/// Agent ids at or past this go to the hash table: a dense store's index
/// list grows with the largest id it holds, and the world hands ids out from
/// one counter, far below it.
const DENSE_IDS: AgentId = 1 << 32;

/// The live timers.
#[derive(Debug, Default)]
pub(super) struct Timers {
    /// Each agent's live timer (its first, if it ever holds two).
    agents: Dense<AgentId, AgentTimer>,
    /// How many `agents` holds.
    in_place: usize,
    /// Every other live timer, keyed by its owner's [`Addr::code`] and its id.
    others: FxHashMap<(u64, TimerId), Timer>,
    /// How many of `others` are agents' (a second timer of an agent, or one
    /// past [`DENSE_IDS`]): while none is, an agent's timer is looked for in
    /// its place only.
    agents_in_others: usize,
}

/// The agent whose timers may sit in place.
fn placed(owner: Addr) -> Option<AgentId> {
    match owner {
        Addr::Agent(id) if id < DENSE_IDS => Some(id),
        _ => None,
    }
}

/// Whether `owner` is an agent (its timers may be in place, or, past
/// [`DENSE_IDS`] or as a second one, counted in `agents_in_others`).
fn is_agent(owner: Addr) -> bool {
    matches!(owner, Addr::Agent(_))
}

impl Timers {
    /// Adds timer `id` of `owner`; the timer it replaces, if it was live.
    pub(super) fn insert(&mut self, owner: Addr, id: TimerId, timer: Timer) -> Option<Timer> {
        if let Some(agent) = placed(owner) {
            match self.agents.get_mut(agent) {
                Some(held) if held.id == id => return Some(std::mem::replace(&mut held.timer, timer)),
                Some(_) => {}
                // Its place is free, and the key is not in the table (where a
                // second timer went while the place was taken).
                None if self.agents_in_others == 0 || !self.others.contains_key(&(owner.code(), id)) => {
                    self.agents.insert(agent, AgentTimer { id, timer });
                    self.in_place += 1;
                    return None;
                }
                None => {}
            }
        }
        let previous = self.others.insert((owner.code(), id), timer);
        if is_agent(owner) && previous.is_none() {
            self.agents_in_others += 1;
        }
        previous
    }

    /// Takes timer `id` of `owner` out, if it is live.
    pub(super) fn remove(&mut self, owner: Addr, id: TimerId) -> Option<Timer> {
        if let Some(agent) = placed(owner)
            && self.agents.get(agent).is_some_and(|held| held.id == id)
        {
            self.in_place -= 1;
            return self.agents.take(agent).map(|held| held.timer);
        }
        if is_agent(owner) && self.agents_in_others == 0 {
            return None;
        }
        let removed = self.others.remove(&(owner.code(), id));
        if is_agent(owner) && removed.is_some() {
            self.agents_in_others -= 1;
        }
        removed
    }

    /// Timer `id` of `owner`, if it is live.
    pub(super) fn get(&self, owner: Addr, id: TimerId) -> Option<&Timer> {
        if let Some(agent) = placed(owner)
            && let Some(held) = self.agents.get(agent).filter(|held| held.id == id)
        {
            return Some(&held.timer);
        }
        if is_agent(owner) && self.agents_in_others == 0 {
            return None;
        }
        self.others.get(&(owner.code(), id))
    }

    /// Asks for the place of `owner`'s timer to be brought into the cache (a
    /// hint, for a delivery to `owner` just picked).
    pub(super) fn prefetch(&self, owner: Addr) {
        if let Some(agent) = placed(owner) {
            self.agents.prefetch(agent);
        }
    }

    /// Keeps the timers `keep` accepts, told each one's owner.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(Addr, &Timer) -> bool) {
        let mut dropped = 0;
        self.agents.retain(|agent, held| {
            let kept = keep(Addr::Agent(agent), &held.timer);
            dropped += usize::from(!kept);
            kept
        });
        self.in_place -= dropped;
        let mut agents_dropped = 0;
        self.others.retain(|(owner, _), timer| {
            let owner = Addr::from_code(*owner);
            let kept = keep(owner, timer);
            agents_dropped += usize::from(!kept && is_agent(owner));
            kept
        });
        self.agents_in_others -= agents_dropped;
    }

    /// Whether `owner_matters` says of the owner of any live timer that it
    /// matters (in no set order: a pure question's `any` needs none).
    pub(super) fn any_owner(&self, mut owner_matters: impl FnMut(Addr) -> bool) -> bool {
        let placed = self.in_place > 0
            && self
                .agents
                .iter()
                .any(|(agent, _)| owner_matters(Addr::Agent(agent)));
        placed || (self.others.keys()).any(|(owner, _)| owner_matters(Addr::from_code(*owner)))
    }

    /// Gives back what the hash table holds far beyond its timers (see
    /// [`crate::trim`]); an agent's place is its agent's as long as the run.
    pub(super) fn trim(&mut self) {
        self.others.trim();
    }

    /// The hash table's room, in timers.
    #[cfg(test)]
    pub(super) fn capacity(&self) -> usize {
        self.others.capacity()
    }

    /// How many are live.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.in_place + self.others.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timer(seq: u64) -> Timer {
        Timer {
            fired: Fired::Work { step: 0 },
            tagged: seq,
        }
    }

    #[test]
    fn an_agents_second_timer_and_every_other_owners_go_to_the_table() {
        let mut timers = Timers::default();
        assert!(timers.insert(Addr::Agent(3), 1, timer(10)).is_none());
        assert!(
            timers.insert(Addr::Agent(3), 2, timer(11)).is_none(),
            "a second one"
        );
        assert!(timers.insert(Addr::Broker, 1, timer(12)).is_none());
        assert!(timers.insert(Addr::Agent(DENSE_IDS), 1, timer(13)).is_none());
        assert_eq!((timers.in_place, timers.others.len()), (1, 3));
        assert_eq!(timers.get(Addr::Agent(3), 1).map(Timer::seq), Some(10));
        assert_eq!(timers.get(Addr::Agent(3), 2).map(Timer::seq), Some(11));
        assert_eq!(timers.get(Addr::Agent(4), 1).map(Timer::seq), None);
        assert_eq!(timers.get(Addr::Broker, 1).map(Timer::seq), Some(12));
        assert_eq!(
            timers.insert(Addr::Agent(3), 1, timer(14)).map(|t| t.seq()),
            Some(10),
            "the same key again replaces"
        );
        // The first leaves its place; the second stays in the table, found there.
        assert_eq!(timers.remove(Addr::Agent(3), 1).map(|t| t.seq()), Some(14));
        assert!(timers.remove(Addr::Agent(3), 1).is_none(), "gone");
        assert_eq!(timers.get(Addr::Agent(3), 2).map(Timer::seq), Some(11));
        assert_eq!(timers.remove(Addr::Agent(3), 2).map(|t| t.seq()), Some(11));
        assert!(
            timers.insert(Addr::Agent(3), 5, timer(15)).is_none(),
            "the place is free again"
        );
        assert_eq!((timers.in_place, timers.others.len()), (1, 2));
        assert_eq!(timers.len(), 3);
        // A key in the table while the place is free stays the table's.
        timers.insert(Addr::Agent(3), 6, timer(16));
        timers.remove(Addr::Agent(3), 5);
        assert_eq!(
            timers.insert(Addr::Agent(3), 6, timer(17)).map(|t| t.seq()),
            Some(16),
            "started twice is seen, wherever the first one is"
        );
        assert_eq!(timers.remove(Addr::Agent(3), 6).map(|t| t.seq()), Some(17));
        assert_eq!(timers.agents_in_others, 1, "the agent past the dense ids");
    }

    #[test]
    fn retain_and_any_see_every_timer_in_both_tables() {
        let mut timers = Timers::default();
        for agent in 1..=5 {
            timers.insert(Addr::Agent(agent), 7, timer(agent));
        }
        timers.insert(Addr::Agent(2), 8, timer(20));
        timers.insert(Addr::Broker, 1, timer(30));
        assert!(timers.any_owner(|owner| owner == Addr::Agent(4)));
        assert!(timers.any_owner(|owner| owner == Addr::Broker));
        assert!(!timers.any_owner(|owner| owner == Addr::Agent(6)));
        let mut seen = Vec::new();
        timers.retain(|owner, timer| {
            seen.push(timer.seq());
            owner == Addr::Agent(2) || owner == Addr::Broker
        });
        seen.sort_unstable();
        assert_eq!(seen, [1, 2, 3, 4, 5, 20, 30], "each timer asked once");
        assert_eq!(timers.len(), 3);
        assert_eq!(timers.in_place, 1);
        assert!(timers.get(Addr::Agent(1), 7).is_none());
        assert_eq!(timers.get(Addr::Agent(2), 7).map(Timer::seq), Some(2));
        assert_eq!(timers.get(Addr::Agent(2), 8).map(Timer::seq), Some(20));
        assert!(!timers.any_owner(|owner| owner == Addr::Agent(4)), "dropped");
    }
}
