//! Which holders (live agents, open calls) sit at which turn, and which turns
//! derive from which: firing a turn finds everything it fires by walking its own
//! subtree of turns, never every agent or every call (SPEC §6 "Cost": N turns
//! cancelled one after another cost N walks of what each fires, not N x N).
//!
//! A holder is indexed under its turn's id; a link from a turn to each turn
//! derived from it is kept while something is indexed at or below the derived
//! one, so the index holds as many links as there are turns with something
//! under them. It never decides what a fired turn means: it answers "who is at
//! or below this turn", and the broker filters by its own rules.
//!
//! Links are kept by the turn they lead from, hashed: a walk asks of every
//! turn it reaches whether anything derives from it, and nearly none has
//! anything (a child's own turn), which a look-up in a table of the few turns
//! that do answers at once. In one B-tree of every (turn, derived) pair each
//! of those questions was a descent of its depth, and each spawn an insert at
//! that depth: 7% of a cancelled tree's run at 10^5 agents (BENCHMARKS.md,
//! issue #19, thirty-ninth session).

use std::collections::BTreeSet;
use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;

use super::appended::Appended;
use crate::protocol::{AgentId, Turn, TurnId};

/// Holders of type `K` by turn.
#[derive(Debug)]
pub struct TurnIndex<K> {
    /// (turn, holder): ordered so a turn's holders are one range.
    holders: BTreeSet<(TurnId, K)>,
    /// Each turn something derives from directly, and what does.
    links: FxHashMap<TurnId, Derived>,
}

/// The turns derived directly from one turn, in order: most such turns have
/// one (an agent's, under its owner's), a few many (a root's children's, which
/// come in the order the children were spawned: appended, not inserted into a
/// B-tree at its depth; see [`Appended`]).
#[derive(Debug)]
enum Derived {
    One(TurnId),
    Many(Appended<TurnId>),
}

impl Derived {
    /// Adds `turn`; whether it was not there.
    fn insert(&mut self, turn: TurnId) -> bool {
        match self {
            Derived::One(only) if *only == turn => false,
            Derived::One(only) => {
                let mut many = Appended::default();
                many.insert(*only);
                many.insert(turn);
                *self = Derived::Many(many);
                true
            }
            Derived::Many(set) => set.insert(turn),
        }
    }

    /// Removes `turn`; whether none is left.
    fn remove(&mut self, turn: TurnId) -> bool {
        match self {
            Derived::One(only) => *only == turn,
            Derived::Many(set) => {
                set.remove(&turn);
                set.is_empty()
            }
        }
    }

    fn iter(&self) -> impl Iterator<Item = TurnId> + '_ {
        let (one, many) = match self {
            Derived::One(only) => (Some(*only), None),
            Derived::Many(set) => (None, Some(set.iter())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }
}

impl<K> Default for TurnIndex<K> {
    fn default() -> Self {
        TurnIndex {
            holders: BTreeSet::new(),
            links: FxHashMap::default(),
        }
    }
}

impl<K: Ord + Copy + Bounded> TurnIndex<K> {
    /// Indexes `holder` at `turn`. O(log n) plus the links `turn`'s chain did not
    /// have yet.
    pub fn insert(&mut self, turn: &Turn, holder: K) {
        self.holders.insert((turn.id(), holder));
        self.link(turn);
    }

    /// Links `turn`'s chain, for a holder the index does not hold: one the
    /// caller finds by its turn itself ([`TurnIndex::turns_at_or_below`]).
    pub fn link(&mut self, turn: &Turn) {
        for pair in turn.chain().windows(2).rev() {
            let added = match self.links.entry(pair[0]) {
                Entry::Occupied(derived) => derived.into_mut().insert(pair[1]),
                Entry::Vacant(slot) => {
                    slot.insert(Derived::One(pair[1]));
                    true
                }
            };
            if !added {
                break; // the rest of the chain is linked already
            }
        }
    }

    /// Removes `holder` from `turn` (the turn it was indexed at), and the links
    /// that led only to it.
    pub fn remove(&mut self, turn: &Turn, holder: K) {
        self.remove_where(turn, holder, |_| false);
    }

    /// The same, where `sits(t)` says whether a holder the caller keeps sits
    /// at turn `t`: a link that leads to one stays.
    pub fn remove_where(&mut self, turn: &Turn, holder: K, sits: impl Fn(TurnId) -> bool) {
        if self.holders.remove(&(turn.id(), holder)) {
            self.unlink(turn, sits);
        }
    }

    /// A holder the caller keeps left `turn`: the links that led only to it
    /// go (`sits` as for [`TurnIndex::remove_where`]).
    pub fn unlink(&mut self, turn: &Turn, sits: impl Fn(TurnId) -> bool) {
        let chain = turn.chain();
        for i in (1..chain.len()).rev() {
            if sits(chain[i]) || self.holds_anything(chain[i]) {
                break;
            }
            if let Some(derived) = self.links.get_mut(&chain[i - 1])
                && derived.remove(chain[i])
            {
                self.links.remove(&chain[i - 1]);
            }
        }
    }

    fn holds_anything(&self, turn: TurnId) -> bool {
        self.at(turn).next().is_some() || self.links.contains_key(&turn)
    }

    /// Every holder at any turn of `agent`, in (turn, holder) order. Costs what
    /// it returns.
    pub fn of_agent(&self, agent: AgentId) -> impl Iterator<Item = K> + '_ {
        let (first, last) = (TurnId { agent, n: 0 }, TurnId { agent, n: u32::MAX });
        self.holders
            .range((first, K::MIN)..=(last, K::MAX))
            .map(|(_, k)| *k)
    }

    /// The holders indexed at `turn`.
    pub fn at(&self, turn: TurnId) -> impl Iterator<Item = K> + '_ {
        self.holders
            .range((turn, K::MIN)..=(turn, K::MAX))
            .map(|(_, k)| *k)
    }

    /// `turn` and every turn linked below it. Costs the turns walked.
    pub fn turns_at_or_below(&self, turn: TurnId) -> Vec<TurnId> {
        let mut walked = Vec::new();
        let mut stack = vec![turn];
        while let Some(next) = stack.pop() {
            walked.push(next);
            stack.extend(self.links.get(&next).into_iter().flat_map(Derived::iter));
        }
        walked
    }

    /// Every holder at `turn` or at a turn derived from it, in order. Costs what
    /// it returns plus the turns walked.
    pub fn at_or_below(&self, turn: TurnId) -> Vec<K> {
        let mut found: Vec<K> = (self.turns_at_or_below(turn).into_iter())
            .flat_map(|t| self.at(t))
            .collect();
        found.sort_unstable();
        found
    }

    /// How many holders and links are indexed (for tests of what is dropped).
    #[cfg(test)]
    pub fn size(&self) -> (usize, usize) {
        (
            self.holders.len(),
            self.links.values().map(|d| d.iter().count()).sum(),
        )
    }
}

/// A key type's smallest and largest values, for range queries.
pub trait Bounded {
    const MIN: Self;
    const MAX: Self;
}

impl Bounded for u64 {
    const MIN: u64 = u64::MIN;
    const MAX: u64 = u64::MAX;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(agent: u64, n: u32) -> TurnId {
        TurnId { agent, n }
    }

    #[test]
    fn a_turn_reaches_what_derives_from_it_and_nothing_else() {
        let mut index = TurnIndex::<u64>::default();
        let root = Turn::root(id(1, 1));
        let child = root.derive(id(2, 1));
        let grandchild = child.derive(id(3, 1));
        let other = Turn::root(id(4, 1));
        index.insert(&root, 10);
        index.insert(&grandchild, 30);
        index.insert(&child, 20);
        index.insert(&other, 40);
        assert_eq!(index.at_or_below(id(1, 1)), vec![10, 20, 30]);
        assert_eq!(index.at_or_below(id(2, 1)), vec![20, 30]);
        assert_eq!(index.at_or_below(id(3, 1)), vec![30]);
        assert_eq!(index.at_or_below(id(4, 1)), vec![40]);
        assert_eq!(index.at_or_below(id(1, 2)), Vec::<u64>::new());
    }

    #[test]
    fn removing_the_last_holder_below_a_turn_drops_its_links() {
        let mut index = TurnIndex::<u64>::default();
        let root = Turn::root(id(1, 1));
        let child = root.derive(id(2, 1));
        let grandchild = child.derive(id(3, 1));
        index.insert(&grandchild, 30);
        index.insert(&child, 20);
        assert_eq!(index.size(), (2, 2));
        index.remove(&grandchild, 30);
        assert_eq!(index.size(), (1, 1), "the link to the grandchild's turn goes");
        index.remove(&child, 20);
        assert_eq!(index.size(), (0, 0));
        assert_eq!(index.at_or_below(id(1, 1)), Vec::<u64>::new());
        index.remove(&child, 20); // removing what is not there changes nothing
        index.insert(&grandchild, 31);
        assert_eq!(index.at_or_below(id(1, 1)), vec![31], "links come back");
    }

    #[test]
    fn a_turn_with_a_holder_keeps_its_link_when_one_below_it_goes() {
        let mut index = TurnIndex::<u64>::default();
        let root = Turn::root(id(1, 1));
        let child = root.derive(id(2, 1));
        let grandchild = child.derive(id(3, 1));
        index.insert(&child, 20);
        index.insert(&grandchild, 30);
        index.remove(&grandchild, 30);
        assert_eq!(index.at_or_below(id(1, 1)), vec![20]);
    }
}
