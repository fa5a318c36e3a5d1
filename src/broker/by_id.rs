//! The broker's agents by id. Every executor of asksim's broker numbers its
//! agents from 1 as it spawns them, so the ids are dense: a dense store by id
//! ([`crate::dense`]) holds them in place and finds one by index. A B-tree held
//! them before:
//! appended to in order, its nodes stayed half full (~68 bytes an agent), and
//! each lookup walked four or five nodes at 10^5 agents, one cache miss each.
//!
//! An id far past what the store holds (more than twice its largest id, and
//! past [`DENSE_MIN`]) goes to a table instead, so no stray id can size it.

use rustc_hash::FxHashMap;

use crate::dense::Dense;
use crate::protocol::AgentId;

/// Ids below this always go to the dense store.
const DENSE_MIN: usize = 4096;

/// The first id a store is given goes to the dense store too when it is below
/// this, however far from 0: a restarted broker's agents continue the ids of
/// the life before (a process loss of 10^5 roots starts the next life at
/// 10^5 + 1), and went to the table, ~70 bytes an agent more. The dense
/// store allocates a chunk when it is first written, so the gap below costs a
/// list's header per [`crate::dense::CHUNK`] ids (at most 384 KB).
const FIRST_MAX: usize = 1 << 24;

/// Values by agent id, in place (a delivery to one of 10^5 agents reads its
/// entry without a pointer to follow, one cache miss fewer), never removed.
#[derive(Debug)]
pub struct ById<V> {
    dense: Dense<AgentId, V>,
    /// One past the largest id the dense store holds.
    end: usize,
    sparse: FxHashMap<AgentId, V>,
}

impl<V> Default for ById<V> {
    fn default() -> Self {
        ById {
            dense: Dense::default(),
            end: 0,
            sparse: FxHashMap::default(),
        }
    }
}

impl<V> ById<V> {
    /// The slot of `id` in the dense store, if it has one there or may be given
    /// one.
    fn dense_at(&self, id: AgentId) -> Option<usize> {
        let bound = match self.end {
            0 => FIRST_MAX,
            end => end.saturating_mul(2).max(DENSE_MIN),
        };
        usize::try_from(id).ok().filter(|at| *at < bound)
    }

    /// `id` holds `value` now.
    pub fn insert(&mut self, id: AgentId, value: V) {
        if let Some(slot) = self.sparse.get_mut(&id) {
            *slot = value;
            return;
        }
        match self.dense_at(id) {
            Some(at) => {
                self.end = self.end.max(at + 1);
                self.dense.insert(id, value);
            }
            None => {
                self.sparse.insert(id, value);
            }
        }
    }

    pub fn get(&self, id: AgentId) -> Option<&V> {
        (self.dense.get(id)).or_else(|| self.sparse.get(&id))
    }

    pub fn get_mut(&mut self, id: AgentId) -> Option<&mut V> {
        if let Some(value) = self.sparse.get_mut(&id) {
            return Some(value);
        }
        self.dense.get_mut(id)
    }

    pub fn contains_key(&self, id: AgentId) -> bool {
        self.get(id).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_ids_sit_in_the_vector_and_a_far_one_in_the_table() {
        let mut by_id: ById<u64> = ById::default();
        for id in [1, 2, 5] {
            by_id.insert(id, id * 10);
        }
        let far = u64::MAX - 1;
        by_id.insert(far, 7);
        assert_eq!((by_id.end, by_id.sparse.len()), (6, 1), "a far id sizes nothing");
        assert_eq!(by_id.get(far), Some(&7));
        assert_eq!(
            (by_id.get(5), by_id.get(3), by_id.get(0)),
            (Some(&50), None, None)
        );
        if let Some(value) = by_id.get_mut(2) {
            *value += 1;
        }
        assert_eq!(by_id.get(2), Some(&21));
        assert!(by_id.contains_key(far) && !by_id.contains_key(far - 1));
    }

    #[test]
    fn a_first_id_far_from_zero_and_its_followers_sit_in_the_vector() {
        let mut by_id: ById<u64> = ById::default();
        let first = 100_001;
        for id in first..first + 10 {
            by_id.insert(id, id);
        }
        assert_eq!((by_id.end, by_id.sparse.len()), (100_011, 0));
        assert_eq!(by_id.get(first + 9), Some(&(first + 9)));
        let mut stray: ById<u64> = ById::default();
        stray.insert(FIRST_MAX as AgentId, 1);
        assert_eq!(
            (stray.end, stray.sparse.len()),
            (0, 1),
            "a stray first id sizes nothing"
        );
    }

    #[test]
    fn an_id_the_vector_grew_past_stays_where_it_was_put() {
        let mut by_id: ById<u64> = ById::default();
        by_id.insert(1, 0);
        let id = (2 * DENSE_MIN) as AgentId;
        by_id.insert(id, 1);
        assert_eq!(by_id.sparse.len(), 1, "past the vector's bound: the table");
        for id in 1..=(DENSE_MIN as AgentId + 10) {
            by_id.insert(id, 0);
        }
        assert!(by_id.end * 2 > id as usize, "the dense bound covers it now");
        by_id.insert(id, 2);
        assert_eq!(by_id.get(id), Some(&2), "replaced in the table, not held twice");
        assert!(by_id.dense.get(id).is_none());
        if let Some(value) = by_id.get_mut(id) {
            *value += 1;
        }
        assert_eq!(by_id.get(id), Some(&3));
    }
}
