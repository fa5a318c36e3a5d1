//! Giving back what a burst left: a collection holding under a quarter of its
//! capacity, above [`TRIM_MIN`] slots, shrinks to twice what it holds.
//!
//! Why: a burst (10^5 windows at one instant, 10^5 requests queued for the
//! broker) grows a table or a queue that then stays that large for the rest of
//! the run, memory the later records cannot use. Checked where entries leave,
//! the rule costs O(1) amortised: each shrink at least halves the capacity and
//! rehashes or moves what is left, at most half of what left since the last
//! one; growth back doubles as usual. Shrinking never reorders what a map or a
//! queue iterates in a way that reaches output: ordered structures keep their
//! order, and the hashed ones it is used on are never iterated into output.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash};

/// Slots below which nothing is shrunk (small tables are not worth a rehash).
pub(crate) const TRIM_MIN: usize = 4096;

/// The capacity to shrink to, if a collection of `capacity` slots holding `len`
/// is to shrink.
pub(crate) fn trimmed(capacity: usize, len: usize) -> Option<usize> {
    (capacity > TRIM_MIN && len < capacity / 4).then_some(len * 2)
}

/// A collection that can give back spare capacity.
pub(crate) trait Trim {
    /// Shrinks to twice its length if it holds under a quarter of its capacity
    /// (above [`TRIM_MIN`]).
    fn trim(&mut self);
}

impl<T> Trim for Vec<T> {
    fn trim(&mut self) {
        if let Some(to) = trimmed(self.capacity(), self.len()) {
            self.shrink_to(to);
        }
    }
}

impl<T> Trim for VecDeque<T> {
    fn trim(&mut self) {
        if let Some(to) = trimmed(self.capacity(), self.len()) {
            self.shrink_to(to);
        }
    }
}

impl<K: Eq + Hash, V, S: BuildHasher> Trim for HashMap<K, V, S> {
    fn trim(&mut self) {
        if let Some(to) = trimmed(self.capacity(), self.len()) {
            self.shrink_to(to);
        }
    }
}

impl<K: Eq + Hash, S: BuildHasher> Trim for HashSet<K, S> {
    fn trim(&mut self) {
        if let Some(to) = trimmed(self.capacity(), self.len()) {
            self.shrink_to(to);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_emptied_by_three_quarters_shrinks_and_a_small_one_never_does() {
        let mut map: HashMap<u64, u64> = (0..4 * TRIM_MIN as u64).map(|i| (i, i)).collect();
        let full = map.capacity();
        map.retain(|k, _| *k < TRIM_MIN as u64 / 2);
        map.trim();
        assert!(map.capacity() <= full / 4, "{} of {full}", map.capacity());
        assert_eq!(map.len(), TRIM_MIN / 2, "nothing lost");

        let mut small: Vec<u64> = Vec::with_capacity(TRIM_MIN);
        small.push(1);
        small.trim();
        assert_eq!(small.capacity(), TRIM_MIN);
    }

    #[test]
    fn a_queue_keeps_its_order_when_it_shrinks() {
        let mut queue: VecDeque<u64> = (0..4 * TRIM_MIN as u64).collect();
        queue.drain(..4 * TRIM_MIN - 10);
        queue.trim();
        assert!(queue.capacity() < 4 * TRIM_MIN);
        assert!(
            queue
                .iter()
                .copied()
                .eq(4 * TRIM_MIN as u64 - 10..4 * TRIM_MIN as u64)
        );
    }
}
