//! Records in place by a dense number: a call's [`CallIx`] in the judge, an
//! agent's id in the simulated world.
//!
//! A hash table's slots (with their slack, a power of two at 44-88% load) and
//! a boxed record each cost memory and, once a run outgrows the cache, a miss
//! apiece at every look-up. A dense store holds its records in place, in chunks
//! of [`CHUNK`] that never move once full, so a record costs its size, a
//! look-up is one index, and growing never copies more than the first chunk.
//!
//! [`CallIx`]: crate::sim::judge::call_ix::CallIx

use std::marker::PhantomData;

/// A dense number: what a [`Dense`] store is indexed by.
pub trait Number: Copy {
    /// Its place in a list by number.
    fn index(self) -> usize;
    /// The number at `index`.
    fn at(index: usize) -> Self;
}

impl Number for u64 {
    fn index(self) -> usize {
        usize::try_from(self).expect("dense numbers fit in memory")
    }

    fn at(index: usize) -> u64 {
        index as u64
    }
}

/// Records per chunk: a full chunk is never moved again.
pub const CHUNK: usize = 1024;

/// A record per number `I`, in place. The first chunk grows as a vector does (a
/// small run allocates for its few records, not for [`CHUNK`]); every later one
/// is allocated whole.
#[derive(Debug)]
pub struct Dense<I, T> {
    chunks: Vec<Vec<Option<T>>>,
    number: PhantomData<fn(I)>,
}

impl<I, T> Default for Dense<I, T> {
    fn default() -> Self {
        Dense {
            chunks: Vec::new(),
            number: PhantomData,
        }
    }
}

impl<I: Number, T> Dense<I, T> {
    fn place(ix: I) -> (usize, usize) {
        (ix.index() / CHUNK, ix.index() % CHUNK)
    }

    /// The record of `ix`, if it has one.
    pub fn get(&self, ix: I) -> Option<&T> {
        let (chunk, at) = Dense::<I, T>::place(ix);
        self.chunks.get(chunk)?.get(at)?.as_ref()
    }

    /// The same, to change.
    pub fn get_mut(&mut self, ix: I) -> Option<&mut T> {
        let (chunk, at) = Dense::<I, T>::place(ix);
        self.chunks.get_mut(chunk)?.get_mut(at)?.as_mut()
    }

    /// Asks the processor to bring the record of `ix` into its cache, without
    /// waiting for it: a hint, nothing is read.
    pub fn prefetch(&self, ix: I) {
        let (chunk, at) = Dense::<I, T>::place(ix);
        if let Some(slot) = self.chunks.get(chunk).and_then(|records| records.get(at)) {
            crate::prefetch::lines(slot);
        }
    }

    /// The slot of `ix`, made if it is past the end.
    fn slot(&mut self, ix: I) -> &mut Option<T> {
        let (chunk, at) = Dense::<I, T>::place(ix);
        while self.chunks.len() <= chunk {
            self.chunks.push(Vec::new());
        }
        let records = &mut self.chunks[chunk];
        if chunk > 0 && records.capacity() == 0 {
            // Allocated when first written, not when a later number passes it:
            // numbers need not start at 0 (a restart's agents continue the
            // count of the life before).
            records.reserve_exact(CHUNK);
        }
        if records.len() <= at {
            records.resize_with(at + 1, || None);
        }
        &mut records[at]
    }

    /// `ix` holds `record` now; what it held before, if anything.
    ///
    /// A number just past the last one held (the next agent a run spawns) is
    /// appended without a read of its slot: `replace` copied the empty slot
    /// out first, a read of every cache line of a record the size of an
    /// agent's, each a miss on a chunk just allocated (at a tree of 10^5
    /// agents, the world's agents and the broker's entries: 390,000 read
    /// misses, 8% of the world's, made writes, which do not stall it).
    pub fn insert(&mut self, ix: I, record: T) -> Option<T> {
        let (chunk, at) = Dense::<I, T>::place(ix);
        if let Some(records) = self.chunks.get_mut(chunk)
            && records.len() == at
            && records.capacity() > at
        {
            records.push(Some(record));
            return None;
        }
        self.slot(ix).replace(record)
    }

    /// The record of `ix`, a default one made if it has none.
    pub fn get_or_default(&mut self, ix: I) -> &mut T
    where
        T: Default,
    {
        self.slot(ix).get_or_insert_with(T::default)
    }

    /// Takes the record of `ix` out, leaving its number empty.
    pub fn take(&mut self, ix: I) -> Option<T> {
        let (chunk, at) = Dense::<I, T>::place(ix);
        self.chunks.get_mut(chunk)?.get_mut(at)?.take()
    }

    /// Keeps the records `keep` accepts (by number, in order); the others go.
    pub fn retain(&mut self, mut keep: impl FnMut(I, &mut T) -> bool) {
        for (chunk, records) in self.chunks.iter_mut().enumerate() {
            for (at, slot) in records.iter_mut().enumerate() {
                if let Some(record) = slot
                    && !keep(I::at(chunk * CHUNK + at), record)
                {
                    *slot = None;
                }
            }
        }
    }

    /// Every record goes (and the memory that held them).
    pub fn clear(&mut self) {
        self.chunks.clear();
    }

    /// Every record, by number.
    pub fn iter(&self) -> impl Iterator<Item = (I, &T)> {
        let numbered = self.chunks.iter().enumerate().flat_map(|(chunk, records)| {
            (records.iter().enumerate()).map(move |(at, record)| (chunk * CHUNK + at, record))
        });
        numbered.filter_map(|(ix, record)| Some((I::at(ix), record.as_ref()?)))
    }

    /// Every record, by number, to change.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (I, &mut T)> {
        let numbered = self.chunks.iter_mut().enumerate().flat_map(|(chunk, records)| {
            (records.iter_mut().enumerate()).map(move |(at, record)| (chunk * CHUNK + at, record))
        });
        numbered.filter_map(|(ix, record)| Some((I::at(ix), record.as_mut()?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_live_at_their_number_across_chunks() {
        let mut dense: Dense<u64, u64> = Dense::default();
        let far = (3 * CHUNK + 5) as u64;
        assert!(dense.insert(2, 20).is_none());
        assert!(dense.insert(far, 99).is_none());
        assert_eq!(dense.insert(2, 21), Some(20));
        *dense.get_or_default(CHUNK as u64) += 7;
        assert_eq!(dense.get(2), Some(&21));
        assert_eq!(dense.get(1), None, "a gap holds nothing");
        assert_eq!(dense.get(u64::from(u32::MAX)), None, "past the end holds nothing");
        if let Some(record) = dense.get_mut(far) {
            *record += 1;
        }
        let all: Vec<(u64, u64)> = dense.iter().map(|(ix, r)| (ix, *r)).collect();
        assert_eq!(all, vec![(2, 21), (CHUNK as u64, 7), (far, 100)]);
        assert_eq!(dense.iter_mut().count(), 3);
        assert_eq!(
            dense.chunks[1].capacity(),
            CHUNK,
            "a later chunk is allocated whole"
        );
        assert_eq!(dense.chunks[3].capacity(), CHUNK, "so it never moves");
        assert_eq!(
            dense.chunks[2].capacity(),
            0,
            "a chunk nothing was written to takes no room"
        );
        assert_eq!(dense.take(2), Some(21));
        assert_eq!(dense.take(2), None, "taken once");
        assert_eq!(dense.get(2), None);
        assert_eq!(dense.take(u64::from(u32::MAX)), None, "past the end");
        let mut seen = Vec::new();
        dense.retain(|ix, record| {
            seen.push(ix);
            *record += 1;
            ix != CHUNK as u64
        });
        assert_eq!(seen, [CHUNK as u64, far], "each record once, by number");
        let all: Vec<(u64, u64)> = dense.iter().map(|(ix, r)| (ix, *r)).collect();
        assert_eq!(all, vec![(far, 101)]);
        dense.clear();
        assert_eq!(dense.get(2), None, "cleared");
    }

    #[test]
    fn numbers_inserted_in_order_are_appended_at_their_place() {
        let mut dense: Dense<u64, u64> = Dense::default();
        let end = (2 * CHUNK + 10) as u64;
        for ix in 0..end {
            assert!(dense.insert(ix, ix * 10).is_none(), "{ix} was empty");
        }
        for ix in 0..end {
            assert_eq!(dense.get(ix), Some(&(ix * 10)));
        }
        assert_eq!(
            dense.insert(CHUNK as u64, 1),
            Some(CHUNK as u64 * 10),
            "a second insert replaces"
        );
        assert_eq!(dense.insert(end + 1, 5), None, "past a gap");
        assert_eq!(dense.get(end), None, "the gap holds nothing");
        assert_eq!(dense.insert(end, 4), None, "the gap filled later");
        assert_eq!(dense.insert(end + 1, 6), Some(5));
        assert_eq!(dense.iter().count(), end as usize + 2);
        assert_eq!(
            dense.chunks[1].capacity(),
            CHUNK,
            "appends never move a later chunk"
        );
        assert_eq!(dense.chunks[2].capacity(), CHUNK);
    }
}
