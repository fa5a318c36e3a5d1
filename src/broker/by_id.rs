//! The broker's agents by id. Every executor of asksim's broker numbers its
//! agents from 1 as it spawns them, so the ids are dense: a vector by id holds
//! them in 8 bytes a slot and finds one by index. A B-tree held them before:
//! appended to in order, its nodes stayed half full (~68 bytes an agent), and
//! each lookup walked four or five nodes at 10^5 agents, one cache miss each.
//!
//! An id far past what the vector holds (more than twice its length, and past
//! [`DENSE_MIN`]) goes to a table instead, so no stray id can size the vector.

use rustc_hash::FxHashMap;

use crate::protocol::AgentId;

/// Ids below this always go to the vector.
const DENSE_MIN: usize = 4096;

/// Values by agent id, never removed.
#[derive(Debug)]
pub struct ById<V> {
    dense: Vec<Option<Box<V>>>,
    sparse: FxHashMap<AgentId, Box<V>>,
}

impl<V> Default for ById<V> {
    fn default() -> Self {
        ById {
            dense: Vec::new(),
            sparse: FxHashMap::default(),
        }
    }
}

impl<V> ById<V> {
    /// The slot of `id` in the vector, if it has one there or may be given one.
    fn dense_at(&self, id: AgentId) -> Option<usize> {
        let bound = self.dense.len().saturating_mul(2).max(DENSE_MIN);
        usize::try_from(id).ok().filter(|at| *at < bound)
    }

    /// `id` holds `value` now.
    pub fn insert(&mut self, id: AgentId, value: Box<V>) {
        if let Some(slot) = self.sparse.get_mut(&id) {
            *slot = value;
            return;
        }
        match self.dense_at(id) {
            Some(at) => {
                if self.dense.len() <= at {
                    self.dense.resize_with(at + 1, || None);
                }
                self.dense[at] = Some(value);
            }
            None => {
                self.sparse.insert(id, value);
            }
        }
    }

    pub fn get(&self, id: AgentId) -> Option<&V> {
        let dense = usize::try_from(id)
            .ok()
            .and_then(|at| self.dense.get(at)?.as_deref());
        dense.or_else(|| self.sparse.get(&id).map(|value| &**value))
    }

    pub fn get_mut(&mut self, id: AgentId) -> Option<&mut V> {
        if let Some(value) = self.sparse.get_mut(&id) {
            return Some(value);
        }
        let at = usize::try_from(id).ok()?;
        self.dense.get_mut(at)?.as_deref_mut()
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
            by_id.insert(id, Box::new(id * 10));
        }
        let far = u64::MAX - 1;
        by_id.insert(far, Box::new(7));
        assert_eq!(
            (by_id.dense.len(), by_id.sparse.len()),
            (6, 1),
            "a far id sizes nothing"
        );
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
    fn an_id_the_vector_grew_past_stays_where_it_was_put() {
        let mut by_id: ById<u64> = ById::default();
        let id = (2 * DENSE_MIN) as AgentId;
        by_id.insert(id, Box::new(1));
        assert_eq!(by_id.sparse.len(), 1, "past the vector's bound: the table");
        for id in 1..=(DENSE_MIN as AgentId + 10) {
            by_id.insert(id, Box::new(0));
        }
        assert!(
            by_id.dense.len() * 2 > id as usize,
            "the vector's bound covers it now"
        );
        by_id.insert(id, Box::new(2));
        assert_eq!(by_id.get(id), Some(&2), "replaced in the table, not held twice");
        assert!(by_id.dense.get(id as usize).is_none_or(Option::is_none));
        if let Some(value) = by_id.get_mut(id) {
            *value += 1;
        }
        assert_eq!(by_id.get(id), Some(&3));
    }
}
