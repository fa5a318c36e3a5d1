//! What one agent keeps per call: who waits for a call's result, which calls
//! went pending, which closed for good. Nearly every agent has one call in each
//! at a time (a script's step, a model's tool call), and a run holds many
//! agents: the first call is kept in place, a few more in a vector, any more in
//! a map. (A B-tree here
//! took a node of eleven slots per agent for its one entry: 3.7 MB of
//! `load-10k`'s peak for the waiting calls alone.) The checker keeps each
//! agent's open calls in one too, for the same reason (a hash set of one took a
//! table of four). Its iteration order is no order at all: only what does not
//! depend on it iterates (nothing that reaches output).

use rustc_hash::FxHashMap;

use crate::protocol::CallId;

/// A value per callId of one agent.
#[derive(Debug)]
pub(crate) struct CallMap<V> {
    first: Option<(CallId, V)>,
    /// Boxed: most never hold a second call, and an empty vector or table in
    /// place is three or four words.
    more: Option<Box<More<V>>>,
}

/// The calls past the first. A few in a vector, searched in order: an agent
/// that holds a second call mostly holds two or three (a root whose first
/// question went pending asks its next), and a table for one more entry took
/// two allocations of ~130 bytes where the vector takes one of 16. Past
/// [`FEW`] a table, so no operation costs more than [`FEW`] comparisons.
#[derive(Debug)]
enum More<V> {
    Few(Vec<(CallId, V)>),
    Many(FxHashMap<CallId, V>),
}

/// Calls past the first that a vector holds before they move to a table.
const FEW: usize = 8;

impl<V> More<V> {
    fn contains(&self, call_id: &str) -> bool {
        match self {
            More::Few(few) => few.iter().any(|(id, _)| **id == *call_id),
            More::Many(many) => many.contains_key(call_id),
        }
    }

    fn insert(&mut self, call_id: CallId, value: V) {
        match self {
            More::Few(few) => {
                if let Some((_, slot)) = few.iter_mut().find(|(id, _)| *id == call_id) {
                    *slot = value;
                } else if few.len() < FEW {
                    if few.capacity() == 0 {
                        few.reserve_exact(1);
                    }
                    few.push((call_id, value));
                } else {
                    let mut many: FxHashMap<CallId, V> = std::mem::take(few).into_iter().collect();
                    many.insert(call_id, value);
                    *self = More::Many(many);
                }
            }
            More::Many(many) => {
                many.insert(call_id, value);
            }
        }
    }

    /// What `call_id` holds, `make` put there first if it holds nothing: one
    /// search, where a look, an insertion and a look again took three.
    fn get_or_insert_with(&mut self, call_id: &CallId, make: impl FnOnce() -> V) -> &mut V {
        let full =
            matches!(self, More::Few(few) if few.len() >= FEW && !few.iter().any(|(id, _)| id == call_id));
        if full && let More::Few(few) = self {
            let many: FxHashMap<CallId, V> = std::mem::take(few).into_iter().collect();
            *self = More::Many(many);
        }
        match self {
            More::Few(few) => {
                let at = match few.iter().position(|(id, _)| id == call_id) {
                    Some(at) => at,
                    None => {
                        if few.capacity() == 0 {
                            few.reserve_exact(1);
                        }
                        few.push((call_id.clone(), make()));
                        few.len() - 1
                    }
                };
                &mut few[at].1
            }
            More::Many(many) => many.entry(call_id.clone()).or_insert_with(make),
        }
    }

    fn get_mut(&mut self, call_id: &str) -> Option<&mut V> {
        match self {
            More::Few(few) => few.iter_mut().find(|(id, _)| **id == *call_id).map(|(_, v)| v),
            More::Many(many) => many.get_mut(call_id),
        }
    }

    fn get(&self, call_id: &str) -> Option<&V> {
        match self {
            More::Few(few) => few.iter().find(|(id, _)| **id == *call_id).map(|(_, v)| v),
            More::Many(many) => many.get(call_id),
        }
    }

    fn remove(&mut self, call_id: &str) -> Option<V> {
        match self {
            More::Few(few) => {
                let at = few.iter().position(|(id, _)| **id == *call_id)?;
                Some(few.swap_remove(at).1)
            }
            More::Many(many) => many.remove(call_id),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            More::Few(few) => few.is_empty(),
            More::Many(many) => many.is_empty(),
        }
    }

    fn ids(&self) -> impl Iterator<Item = &CallId> {
        let (few, many) = match self {
            More::Few(few) => (Some(few), None),
            More::Many(many) => (None, Some(many)),
        };
        let few = few.into_iter().flatten().map(|(id, _)| id);
        few.chain(many.into_iter().flat_map(|many| many.keys()))
    }
}

/// The callIds of one agent in some state.
pub(crate) type CallSet = CallMap<()>;

impl<V> Default for CallMap<V> {
    fn default() -> Self {
        CallMap {
            first: None,
            more: None,
        }
    }
}

impl<V> CallMap<V> {
    /// `call_id` holds `value` now (in place of what it held, if anything).
    pub(crate) fn insert(&mut self, call_id: CallId, value: V) {
        match &mut self.first {
            Some((id, slot)) if **id == *call_id => *slot = value,
            None if !self.more.as_ref().is_some_and(|more| more.contains(&call_id)) => {
                self.first = Some((call_id, value));
            }
            _ => {
                let more = self.more.get_or_insert_with(|| Box::new(More::Few(Vec::new())));
                more.insert(call_id, value);
            }
        }
    }

    /// What `call_id` holds, `make` put there first if it holds nothing (one
    /// search of the calls past the first, not three).
    pub(crate) fn get_or_insert_with(&mut self, call_id: &CallId, make: impl FnOnce() -> V) -> &mut V {
        let in_first = self.first.as_ref().map(|(id, _)| id == call_id);
        if in_first == Some(true) {
            return &mut self.first.as_mut().expect("holds call_id").1;
        }
        if in_first.is_none() && !self.more.as_ref().is_some_and(|more| more.contains(call_id)) {
            return &mut self.first.insert((call_id.clone(), make())).1;
        }
        let more = self.more.get_or_insert_with(|| Box::new(More::Few(Vec::new())));
        more.get_or_insert_with(call_id, make)
    }

    /// What `call_id` holds, if anything.
    pub(crate) fn get(&self, call_id: &str) -> Option<&V> {
        match &self.first {
            Some((id, value)) if **id == *call_id => Some(value),
            _ => self.more.as_ref()?.get(call_id),
        }
    }

    /// The same, to change.
    pub(crate) fn get_mut(&mut self, call_id: &str) -> Option<&mut V> {
        match &mut self.first {
            Some((id, value)) if **id == *call_id => Some(value),
            _ => self.more.as_mut()?.get_mut(call_id),
        }
    }

    #[cfg(test)]
    fn contains(&self, call_id: &str) -> bool {
        self.first.as_ref().is_some_and(|(id, _)| **id == *call_id)
            || self.more.as_ref().is_some_and(|more| more.contains(call_id))
    }

    /// Whether it holds no call.
    pub(crate) fn is_empty(&self) -> bool {
        self.first.is_none() && self.more.is_none()
    }

    /// Every callId it holds, in no set order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = &CallId> {
        self.first
            .iter()
            .map(|(id, _)| id)
            .chain(self.more.iter().flat_map(|more| more.ids()))
    }

    /// What `call_id` held, which it holds no more.
    pub(crate) fn remove(&mut self, call_id: &str) -> Option<V> {
        if self.first.as_ref().is_some_and(|(id, _)| **id == *call_id) {
            return self.first.take().map(|(_, value)| value);
        }
        let more = self.more.as_mut()?;
        let value = more.remove(call_id);
        if more.is_empty() {
            self.more = None; // its room back, once no call is left in it
        }
        value
    }
}

impl FromIterator<CallId> for CallSet {
    fn from_iter<I: IntoIterator<Item = CallId>>(ids: I) -> CallSet {
        let mut set = CallSet::default();
        for id in ids {
            set.insert(id, ());
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_comes_back_once_in_any_order() {
        let mut map = CallMap::default();
        for n in 1..=5u32 {
            map.insert(format!("a/{n}").into(), n);
        }
        assert!(
            matches!(map.more.as_deref(), Some(More::Few(_))),
            "a few past the first in a vector"
        );
        for n in [3u32, 1, 5, 2, 4] {
            assert!(map.contains(&format!("a/{n}")));
            assert_eq!(map.remove(&format!("a/{n}")), Some(n), "a/{n}");
            assert_eq!(map.remove(&format!("a/{n}")), None, "a/{n} twice");
            assert!(!map.contains(&format!("a/{n}")));
        }
        assert_eq!(map.remove("a/9"), None);
        assert!(map.first.is_none() && map.more.is_none(), "nothing held");
        map.insert("a/6".into(), 6);
        assert_eq!(map.remove("a/6"), Some(6));
        for n in 1..=3u32 {
            map.insert(format!("b/{n}").into(), n);
        }
        for n in 1..=3u32 {
            *map.get_mut(&format!("b/{n}")).expect("held") += 10;
            assert_eq!(
                map.get(&format!("b/{n}")),
                Some(&(n + 10)),
                "b/{n}, in place or not"
            );
        }
        assert_eq!(map.get("b/4"), None);
        assert_eq!(map.get_mut("b/4"), None);
    }

    #[test]
    fn past_a_few_the_calls_move_to_a_table_and_none_is_lost() {
        let mut map = CallMap::default();
        let n = (FEW + 4) as u32;
        for k in 1..=n {
            map.insert(format!("a/{k}").into(), k);
        }
        assert!(
            matches!(map.more.as_deref(), Some(More::Many(_))),
            "past FEW, a table"
        );
        map.insert("a/2".into(), 200); // in the table, replaced
        let mut ids: Vec<String> = map.ids().map(|id| id.to_string()).collect();
        ids.sort();
        assert_eq!(ids.len(), n as usize, "each call once");
        assert_eq!(map.remove("a/2"), Some(200));
        for k in (1..=n).filter(|k| *k != 2) {
            assert_eq!(map.remove(&format!("a/{k}")), Some(k), "a/{k}");
        }
        assert!(map.is_empty(), "nothing held");
    }

    #[test]
    fn a_call_inserted_again_holds_one_value_wherever_it_is() {
        let mut map = CallMap::default();
        map.insert("a/1".into(), 1);
        map.insert("a/2".into(), 2);
        map.insert("a/1".into(), 10); // in place
        assert_eq!(map.remove("a/1"), Some(10));
        map.insert("a/2".into(), 20); // in the map, with the place free
        assert_eq!(map.remove("a/2"), Some(20));
        assert!(!map.contains("a/1") && !map.contains("a/2"), "each held once");
        let set: CallSet = ["a/3".into(), "a/3".into(), "a/4".into()].into_iter().collect();
        assert!(set.contains("a/3") && set.contains("a/4") && !set.contains("a/5"));
    }

    #[test]
    fn get_or_insert_makes_a_value_once_wherever_it_is_kept() {
        // In the first place, in the vector and in the table past it: a value
        // is made only for a callId not held, and the one held is given back.
        let mut map: CallMap<u32> = CallMap::default();
        let ids: Vec<CallId> = (0..3 * FEW as u32).map(|n| format!("a/{n}").into()).collect();
        for (n, id) in ids.iter().enumerate() {
            *map.get_or_insert_with(id, || 0) += n as u32 + 1;
            if n == 0 {
                assert!(map.more.is_none(), "the first call in place");
            }
            if n == FEW {
                assert!(matches!(map.more.as_deref(), Some(More::Few(_))), "then a vector");
            }
        }
        assert!(matches!(map.more.as_deref(), Some(More::Many(_))), "then a table");
        for (n, id) in ids.iter().enumerate() {
            let value = map.get_or_insert_with(id, || unreachable!("{id} is held"));
            assert_eq!(*value, n as u32 + 1, "{id}");
        }
        assert_eq!(map.remove("a/0"), Some(1));
        assert_eq!(*map.get_or_insert_with(&ids[0], || 7), 7, "made again once gone");
        assert_eq!(map.ids().count(), ids.len());
    }
}
