//! The judge's calls by number: each callId a log names gets a [`CallIx`] at its
//! first sight ([`CallIds`]), and the checker, protocol conformance and the
//! coverage pass keep their records in [`Dense`] stores by that number
//! ([`crate::dense`]).
//!
//! One table by callId for the whole judge, where each part kept its own: a
//! hash table's slots (with their slack, a power of two at 44-88% load) cost
//! ~40 bytes a call each, and each part's boxed record an allocation. A dense
//! store holds its records in place, in chunks of [`CHUNK`](crate::dense::CHUNK) that never move
//! once full, so a record costs its size and nothing while the store grows.
//! The event's callId is hashed once per event, by the checker, instead of by
//! every part.

use rustc_hash::FxHashMap;

use crate::dense::Number;
use crate::event::Event;
use crate::protocol::CallId;

/// A call's number among those a log named, from 0 in order of first sight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallIx(u32);

impl CallIx {
    /// Its place in a list by number.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The callIds seen, each with its number.
#[derive(Default)]
pub struct CallIds {
    of: FxHashMap<CallId, CallIx>,
    /// The callId interned last, with its number: the event at hand's, which
    /// the checker's parts look up again while they read that event (a string
    /// compare instead of a hash and a probe of a table of every call).
    last: Option<(CallId, CallIx)>,
}

impl CallIds {
    /// The number of `call_id`, given now if it has none.
    pub fn intern(&mut self, call_id: &CallId) -> CallIx {
        let ix = match self.of.get(&**call_id) {
            Some(ix) => *ix,
            None => {
                let ix = CallIx(u32::try_from(self.of.len()).expect("fewer than 2^32 calls a log"));
                self.of.insert(call_id.clone(), ix);
                ix
            }
        };
        self.last = Some((call_id.clone(), ix));
        ix
    }

    /// The number of the callId `event` names, if it names one (given now if
    /// the log never named it before): what every part is handed with the event.
    pub fn intern_event(&mut self, event: &Event) -> Option<CallIx> {
        event.kind.call_id_text().map(|id| self.intern(id))
    }

    /// The number of `call_id`, if it was seen.
    pub fn get(&self, call_id: &str) -> Option<CallIx> {
        match &self.last {
            Some((last, ix)) if **last == *call_id => Some(*ix),
            _ => self.of.get(call_id).copied(),
        }
    }

    /// Every callId, by its number: built once, for what is judged at the end
    /// (a run keeps no second table of them while it goes).
    pub fn by_ix(&self) -> Vec<&CallId> {
        let mut ids: Vec<Option<&CallId>> = vec![None; self.of.len()];
        for (id, ix) in &self.of {
            ids[ix.index()] = Some(id);
        }
        ids.into_iter()
            .map(|id| id.expect("the numbers are 0..len"))
            .collect()
    }
}

impl Number for CallIx {
    fn index(self) -> usize {
        self.0 as usize
    }

    fn at(index: usize) -> CallIx {
        CallIx(u32::try_from(index).expect("a run numbers under 2^32 calls"))
    }
}

/// A record per [`CallIx`], in place.
pub type Dense<T> = crate::dense::Dense<CallIx, T>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callid_keeps_its_number_and_numbers_follow_first_sight() {
        let mut ids = CallIds::default();
        let (a, b) = (CallId::from("a"), CallId::from("b"));
        assert_eq!(ids.intern(&b), CallIx(0));
        assert_eq!(ids.intern(&a), CallIx(1));
        assert_eq!(ids.intern(&b), CallIx(0));
        assert_eq!(ids.get("a"), Some(CallIx(1)));
        assert_eq!(ids.get("c"), None);
        // The last interned answers first; the others still by the table.
        assert_eq!(ids.get("b"), Some(CallIx(0)));
        assert_eq!(ids.intern(&a), CallIx(1));
        assert_eq!((ids.get("a"), ids.get("b")), (Some(CallIx(1)), Some(CallIx(0))));
        assert_eq!(ids.by_ix(), vec![&b, &a]);
    }
}
