//! The calls of one agent that wait for their tool result, and who waits for
//! each. Nearly every agent waits on one call at a time (a script's step, a
//! model's tool call), and a run holds many agents: the first call is kept in
//! place, any more in a map. (A B-tree here took a node of eleven slots per
//! agent for its one entry: 3.7 MB of `load-10k`'s peak.) Nothing iterates it,
//! so no order reaches output.

use rustc_hash::FxHashMap;

use crate::protocol::CallId;

/// The waiting calls of one agent, by callId.
#[derive(Debug)]
pub(super) struct Waiting<W> {
    first: Option<(CallId, W)>,
    more: FxHashMap<CallId, W>,
}

impl<W> Default for Waiting<W> {
    fn default() -> Self {
        Waiting {
            first: None,
            more: FxHashMap::default(),
        }
    }
}

impl<W> Waiting<W> {
    /// `call_id` waits now (a callId is new each time: an agent numbers its calls).
    pub(super) fn insert(&mut self, call_id: CallId, waiter: W) {
        if self.first.is_none() {
            self.first = Some((call_id, waiter));
        } else {
            self.more.insert(call_id, waiter);
        }
    }

    /// Who waited for `call_id`, which waits no more.
    pub(super) fn remove(&mut self, call_id: &str) -> Option<W> {
        if self.first.as_ref().is_some_and(|(id, _)| **id == *call_id) {
            return self.first.take().map(|(_, waiter)| waiter);
        }
        let waiter = self.more.remove(call_id);
        if self.more.is_empty() && self.more.capacity() > 0 {
            self.more = FxHashMap::default(); // its table back, once no call is left in it
        }
        waiter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_waiter_comes_back_once_in_any_order() {
        let mut waiting = Waiting::default();
        for n in 1..=5u32 {
            waiting.insert(format!("a/{n}").into(), n);
        }
        for n in [3u32, 1, 5, 2, 4] {
            assert_eq!(waiting.remove(&format!("a/{n}")), Some(n), "a/{n}");
            assert_eq!(waiting.remove(&format!("a/{n}")), None, "a/{n} twice");
        }
        assert_eq!(waiting.remove("a/9"), None);
        assert!(
            waiting.first.is_none() && waiting.more.capacity() == 0,
            "nothing held"
        );
        waiting.insert("a/6".into(), 6);
        assert_eq!(waiting.remove("a/6"), Some(6));
    }
}
