//! An ordered set of keys that nearly always arrive in increasing order: the
//! children of an agent (ids only grow) and the turns derived from one turn
//! (the turns of agents spawned one after another).
//!
//! While every key inserted is larger than those before it, the keys are one
//! sorted vector: an insert is a push, a look-up a binary search over
//! contiguous memory, and a removal clears the key's bit in a bitmap beside
//! it, the vector being compacted once removed keys are over half of it (O(1)
//! amortised). The first key inserted below the largest turns the set into a
//! B-tree for good, so no order of inserts costs more than O(log n).
//!
//! Why: the root of a tree of 10^5 agents holds 10^5 children and its turn
//! 10^5 derived turns, each inserted into a B-tree at its full depth (five
//! levels, ~500 instructions an append, a growth with log n that a tree of 10^3
//! does not pay; BENCHMARKS.md, issue #19, thirty-ninth and fortieth sessions),
//! and dropped node by node at the run's end.

use std::collections::BTreeSet;

use crate::bits::bit;
use crate::trim::Trim;

/// The set. Iterates in ascending order, as a `BTreeSet` does.
#[derive(Debug)]
pub(crate) enum Appended<T> {
    /// Every key so far came in increasing order.
    Sorted(Sorted<T>),
    /// A key came in below the largest.
    Tree(BTreeSet<T>),
}

/// Keys in increasing order, removed ones kept in place until a compaction.
#[derive(Debug)]
pub(crate) struct Sorted<T> {
    keys: Vec<T>,
    /// Bit `i`: `keys[i]` was removed.
    removed: Vec<u64>,
    /// Keys not removed.
    len: usize,
}

impl<T> Default for Appended<T> {
    fn default() -> Self {
        Appended::Sorted(Sorted {
            keys: Vec::new(),
            removed: Vec::new(),
            len: 0,
        })
    }
}

impl<T: Ord + Copy> Sorted<T> {
    fn is_removed(&self, at: usize) -> bool {
        let (word, bit) = bit(at);
        self.removed[word] & bit != 0
    }

    /// The place of `key` if it is held (not removed).
    fn find(&self, key: &T) -> Option<usize> {
        let at = self.keys.binary_search(key).ok()?;
        (!self.is_removed(at)).then_some(at)
    }

    fn live(&self) -> impl Iterator<Item = T> + '_ {
        (self.keys.iter().enumerate())
            .filter(|(at, _)| !self.is_removed(*at))
            .map(|(_, key)| *key)
    }

    /// Drops the removed keys from the vector.
    fn compact(&mut self) {
        let mut kept = 0;
        for at in 0..self.keys.len() {
            if !self.is_removed(at) {
                self.keys[kept] = self.keys[at];
                kept += 1;
            }
        }
        self.keys.truncate(kept);
        self.keys.trim();
        self.removed.clear();
        self.removed.resize(kept.div_ceil(64), 0);
        self.removed.trim();
    }
}

impl<T: Ord + Copy> Appended<T> {
    /// Adds `key`; whether it was not there.
    pub(crate) fn insert(&mut self, key: T) -> bool {
        let sorted = match self {
            Appended::Tree(tree) => return tree.insert(key),
            Appended::Sorted(sorted) => sorted,
        };
        if sorted.keys.last().is_none_or(|last| *last < key) {
            let at = sorted.keys.len();
            sorted.keys.push(key);
            if at % 64 == 0 {
                sorted.removed.push(0);
            }
            sorted.len += 1;
            return true;
        }
        match sorted.keys.binary_search(&key) {
            Ok(at) if sorted.is_removed(at) => {
                let (word, bit) = bit(at);
                sorted.removed[word] &= !bit;
                sorted.len += 1;
                true
            }
            Ok(_) => false,
            Err(_) => {
                let mut tree: BTreeSet<T> = sorted.live().collect();
                tree.insert(key);
                *self = Appended::Tree(tree);
                true
            }
        }
    }

    /// Removes `key`; whether it was there.
    pub(crate) fn remove(&mut self, key: &T) -> bool {
        let sorted = match self {
            Appended::Tree(tree) => return tree.remove(key),
            Appended::Sorted(sorted) => sorted,
        };
        let Some(at) = sorted.find(key) else {
            return false;
        };
        let (word, bit) = bit(at);
        sorted.removed[word] |= bit;
        sorted.len -= 1;
        if sorted.len == 0 {
            // Its room goes too, as a B-tree's nodes did: a root whose 10^5
            // children all stopped kept 800 KB for none.
            (sorted.keys, sorted.removed) = (Vec::new(), Vec::new());
        } else if sorted.len * 2 < sorted.keys.len() {
            sorted.compact();
        }
        true
    }

    /// How many keys it holds.
    pub(crate) fn len(&self) -> usize {
        match self {
            Appended::Sorted(sorted) => sorted.len,
            Appended::Tree(tree) => tree.len(),
        }
    }

    /// Whether it holds no key.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its keys, in ascending order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = T> + '_ {
        let (sorted, tree) = match self {
            Appended::Sorted(sorted) => (Some(sorted.live()), None),
            Appended::Tree(tree) => (None, Some(tree.iter().copied())),
        };
        sorted.into_iter().flatten().chain(tree.into_iter().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn increasing_keys_stay_a_vector_and_removals_compact_it() {
        let mut set = Appended::default();
        for key in 0..200u64 {
            assert!(set.insert(key));
        }
        assert!(!set.insert(199), "held already");
        assert!(set.remove(&1));
        assert!(!set.remove(&1), "removed already");
        assert!(set.insert(1), "a removed key comes back in place");
        for key in (0..200u64).filter(|k| k % 3 != 0) {
            assert!(set.remove(&key));
        }
        let Appended::Sorted(sorted) = &set else {
            panic!("increasing keys and removals keep the vector");
        };
        assert!(sorted.keys.len() < 200, "compacted once most were removed");
        let left: Vec<u64> = set.iter().collect();
        for key in &left {
            set.remove(key);
        }
        let Appended::Sorted(sorted) = &set else {
            panic!("still the vector");
        };
        assert_eq!(sorted.keys.capacity(), 0, "emptied, it keeps no room");
        for key in left {
            set.insert(key);
        }
        let expected: Vec<u64> = (0..200).filter(|k| k % 3 == 0).collect();
        assert_eq!(set.iter().collect::<Vec<_>>(), expected);
        assert_eq!(set.len(), expected.len());
    }

    #[test]
    fn a_key_below_the_largest_turns_it_into_a_tree_with_the_same_keys() {
        let mut set = Appended::default();
        for key in [10u64, 20, 30] {
            set.insert(key);
        }
        set.remove(&20);
        assert!(set.insert(15));
        assert!(matches!(set, Appended::Tree(_)));
        assert_eq!(set.iter().collect::<Vec<_>>(), [10, 15, 30]);
        for key in [10, 15, 30] {
            assert!(set.remove(&key));
        }
        assert!(set.is_empty());
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// Any key (most often below the largest: the set becomes a tree).
        Insert(u16),
        /// A key above every one before it.
        Append(u8),
        /// Removes the `i`-th key appended (held or not).
        Remove(u16),
        /// Inserts the `i`-th key appended again (held or removed).
        Again(u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            1 => any::<u16>().prop_map(Op::Insert),
            8 => any::<u8>().prop_map(Op::Append),
            6 => any::<u16>().prop_map(Op::Remove),
            4 => any::<u16>().prop_map(Op::Again),
        ]
    }

    proptest! {
        /// Whatever the inserts and removals, it holds and iterates what a
        /// B-tree does, and says what a B-tree says of each change.
        #[test]
        fn behaves_as_a_btree_set(ops in proptest::collection::vec(op(), 0..400)) {
            let mut set = Appended::default();
            let mut model = BTreeSet::new();
            let mut appended = vec![0u32];
            let mut next = 0u32;
            for op in ops {
                let nth = |i: u16| appended[usize::from(i) % appended.len()];
                match op {
                    Op::Insert(key) => {
                        prop_assert_eq!(set.insert(u32::from(key)), model.insert(u32::from(key)));
                    }
                    Op::Append(step) => {
                        next += u32::from(step) + 1;
                        appended.push(next);
                        prop_assert_eq!(set.insert(next), model.insert(next));
                    }
                    Op::Remove(i) => {
                        let key = nth(i);
                        prop_assert_eq!(set.remove(&key), model.remove(&key));
                    }
                    Op::Again(i) => {
                        let key = nth(i);
                        prop_assert_eq!(set.insert(key), model.insert(key));
                    }
                }
                prop_assert_eq!(set.len(), model.len());
                prop_assert_eq!(set.is_empty(), model.is_empty());
                prop_assert_eq!(set.iter().collect::<Vec<_>>(), model.iter().copied().collect::<Vec<_>>());
            }
        }
    }
}
