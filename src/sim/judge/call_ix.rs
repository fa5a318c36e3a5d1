//! The judge's calls by number: each callId a log names gets a [`CallIx`] at its
//! first sight ([`CallIds`]), and the checker, protocol conformance and the
//! coverage pass keep their records in [`Dense`] stores by that number.
//!
//! One table by callId for the whole judge, where each part kept its own: a
//! hash table's slots (with their slack, a power of two at 44-88% load) cost
//! ~40 bytes a call each, and each part's boxed record an allocation. A dense
//! store holds its records in place, in chunks of [`CHUNK`] that never move
//! once full, so a record costs its size and nothing while the store grows.
//! The event's callId is hashed once per event, by the checker, instead of by
//! every part.

use rustc_hash::FxHashMap;

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
}

impl CallIds {
    /// The number of `call_id`, given now if it has none.
    pub fn intern(&mut self, call_id: &CallId) -> CallIx {
        if let Some(ix) = self.of.get(&**call_id) {
            return *ix;
        }
        let ix = CallIx(u32::try_from(self.of.len()).expect("fewer than 2^32 calls a log"));
        self.of.insert(call_id.clone(), ix);
        ix
    }

    /// The number of the callId `event` names, if it names one (given now if
    /// the log never named it before): what every part is handed with the event.
    pub fn intern_event(&mut self, event: &Event) -> Option<CallIx> {
        event.kind.call_id_text().map(|id| self.intern(id))
    }

    /// The number of `call_id`, if it was seen.
    pub fn get(&self, call_id: &str) -> Option<CallIx> {
        self.of.get(call_id).copied()
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

/// Records per chunk: a full chunk is never moved again.
pub const CHUNK: usize = 1024;

/// A record per [`CallIx`], in place. The first chunk grows as a vector does (a
/// small run's judge allocates for its few calls, not for [`CHUNK`]); every
/// later one is allocated whole.
pub struct Dense<T> {
    chunks: Vec<Vec<Option<T>>>,
}

impl<T> Default for Dense<T> {
    fn default() -> Self {
        Dense { chunks: Vec::new() }
    }
}

impl<T> Dense<T> {
    fn place(ix: CallIx) -> (usize, usize) {
        (ix.index() / CHUNK, ix.index() % CHUNK)
    }

    /// The record of `ix`, if it has one.
    pub fn get(&self, ix: CallIx) -> Option<&T> {
        let (chunk, at) = Dense::<T>::place(ix);
        self.chunks.get(chunk)?.get(at)?.as_ref()
    }

    /// The same, to change.
    pub fn get_mut(&mut self, ix: CallIx) -> Option<&mut T> {
        let (chunk, at) = Dense::<T>::place(ix);
        self.chunks.get_mut(chunk)?.get_mut(at)?.as_mut()
    }

    /// The slot of `ix`, made if it is past the end.
    fn slot(&mut self, ix: CallIx) -> &mut Option<T> {
        let (chunk, at) = Dense::<T>::place(ix);
        while self.chunks.len() <= chunk {
            let room = if self.chunks.is_empty() { 0 } else { CHUNK };
            self.chunks.push(Vec::with_capacity(room));
        }
        let records = &mut self.chunks[chunk];
        if records.len() <= at {
            records.resize_with(at + 1, || None);
        }
        &mut records[at]
    }

    /// `ix` holds `record` now; what it held before, if anything.
    pub fn insert(&mut self, ix: CallIx, record: T) -> Option<T> {
        self.slot(ix).replace(record)
    }

    /// The record of `ix`, a default one made if it has none.
    pub fn get_or_default(&mut self, ix: CallIx) -> &mut T
    where
        T: Default,
    {
        self.slot(ix).get_or_insert_with(T::default)
    }

    /// Every record, by number.
    pub fn iter(&self) -> impl Iterator<Item = (CallIx, &T)> {
        let numbered = self.chunks.iter().enumerate().flat_map(|(chunk, records)| {
            (records.iter().enumerate()).map(move |(at, record)| (chunk * CHUNK + at, record))
        });
        numbered.filter_map(|(ix, record)| Some((CallIx(ix as u32), record.as_ref()?)))
    }

    /// Every record, by number, to change.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (CallIx, &mut T)> {
        let numbered = self.chunks.iter_mut().enumerate().flat_map(|(chunk, records)| {
            (records.iter_mut().enumerate()).map(move |(at, record)| (chunk * CHUNK + at, record))
        });
        numbered.filter_map(|(ix, record)| Some((CallIx(ix as u32), record.as_mut()?)))
    }
}

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
        assert_eq!(ids.by_ix(), vec![&b, &a]);
    }

    #[test]
    fn records_live_at_their_number_across_chunks() {
        let mut dense: Dense<u64> = Dense::default();
        let far = CallIx((3 * CHUNK + 5) as u32);
        assert!(dense.insert(CallIx(2), 20).is_none());
        assert!(dense.insert(far, 99).is_none());
        assert_eq!(dense.insert(CallIx(2), 21), Some(20));
        *dense.get_or_default(CallIx(CHUNK as u32)) += 7;
        assert_eq!(dense.get(CallIx(2)), Some(&21));
        assert_eq!(dense.get(CallIx(1)), None, "a gap holds nothing");
        assert_eq!(dense.get(CallIx(u32::MAX)), None, "past the end holds nothing");
        if let Some(record) = dense.get_mut(far) {
            *record += 1;
        }
        let all: Vec<(CallIx, u64)> = dense.iter().map(|(ix, r)| (ix, *r)).collect();
        assert_eq!(all, vec![(CallIx(2), 21), (CallIx(CHUNK as u32), 7), (far, 100)]);
        assert_eq!(dense.iter_mut().count(), 3);
        assert!(
            dense.chunks[1..].iter().all(|chunk| chunk.capacity() == CHUNK),
            "a later chunk is allocated whole, so it never moves"
        );
    }
}
