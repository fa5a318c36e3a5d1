//! The events a recorder keeps, in chunks that are never moved once full: a
//! long-lived runtime that keeps every event (a library host started with
//! `Runtime::start`, criterion's millions of round trips) never reallocates
//! and copies all it kept so far, as one growing `Vec` did on every doubling
//! (issue #23: a quarter of a round trip's profile, on the journal's thread).
//!
//! The first chunk grows as a `Vec` does, so a short run (a test, a simulated
//! scenario) holds one vector no larger than it needs and gives it back whole
//! ([`KeptEvents::into_vec`] copies nothing then); from [`CHUNK_EVENTS`] on,
//! each new chunk is allocated at that size and only filled. Memory grows by
//! one event's size (and the text it holds) per event, up to the recorder's
//! limit on events: a host that runs for good keeps none
//! (`Runtime::start_without_events`) or moves them out now and then
//! (`EventLog::take`).

use crate::event::Event;

/// Events a full chunk holds: about 1 MB of `Event`s, so a chunk is one
/// allocation among millions of events and a half-empty last chunk wastes
/// little.
pub const CHUNK_EVENTS: usize = 8_192;

/// Every event a recorder kept, in `seq` order: read with
/// [`KeptEvents::iter`], [`KeptEvents::chunks`] (each a slice) or
/// [`KeptEvents::to_vec`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeptEvents {
    /// Full chunks of [`CHUNK_EVENTS`] each, then the one being filled (never
    /// empty unless it is the only one).
    chunks: Vec<Vec<Event>>,
    len: usize,
}

impl KeptEvents {
    /// None kept.
    pub const fn new() -> KeptEvents {
        KeptEvents {
            chunks: Vec::new(),
            len: 0,
        }
    }

    /// Keeps one more event, after the others: no event kept before is moved.
    pub fn push(&mut self, event: Event) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK_EVENTS => last.push(event),
            _ => {
                // The first chunk grows from empty; every later one is made
                // full-sized, so it is never reallocated.
                let mut chunk = match self.chunks.is_empty() {
                    true => Vec::new(),
                    false => Vec::with_capacity(CHUNK_EVENTS),
                };
                chunk.push(event);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Each event, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Event> + '_ {
        self.chunks.iter().flatten()
    }

    /// The events as consecutive slices, in order (each chunk's).
    pub fn chunks(&self) -> impl DoubleEndedIterator<Item = &[Event]> + '_ {
        self.chunks.iter().map(Vec::as_slice)
    }

    /// The `index`th event kept (from 0), if there are that many.
    pub fn get(&self, index: usize) -> Option<&Event> {
        // Every chunk but the last is full, the first one included once a
        // second exists.
        let chunk = self.chunks.get(index / CHUNK_EVENTS)?;
        chunk.get(index % CHUNK_EVENTS)
    }

    /// The last one kept.
    pub fn last(&self) -> Option<&Event> {
        self.chunks.last().and_then(|chunk| chunk.last())
    }

    /// A copy of every event, in one vector.
    pub fn to_vec(&self) -> Vec<Event> {
        let mut all = Vec::with_capacity(self.len);
        self.chunks().for_each(|chunk| all.extend_from_slice(chunk));
        all
    }

    /// Every event in one vector: the first chunk itself when it is the only
    /// one, otherwise one copy of each.
    pub fn into_vec(mut self) -> Vec<Event> {
        if self.chunks.len() <= 1 {
            return self.chunks.pop().unwrap_or_default();
        }
        let mut all = Vec::with_capacity(self.len);
        self.chunks.into_iter().for_each(|chunk| all.extend(chunk));
        all
    }
}

impl<'a> IntoIterator for &'a KeptEvents {
    type Item = &'a Event;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<Event>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.chunks.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;

    fn event(seq: u64) -> Event {
        Event {
            seq,
            t: seq as f64,
            kind: EventKind::Stop {
                agent: format!("a{seq}").into(),
            },
        }
    }

    /// Past a chunk, an event kept is never moved: its address holds while
    /// thousands more are kept (a growing `Vec` moved them all on each
    /// doubling); and every read gives them in order.
    #[test]
    fn kept_events_stay_where_they_are_and_read_in_order() {
        let mut kept = KeptEvents::new();
        let n = 3 * CHUNK_EVENTS + 5;
        kept.push(event(1));
        for seq in 2..=(CHUNK_EVENTS as u64 + 1) {
            kept.push(event(seq));
        }
        let second_chunk_first = kept.get(CHUNK_EVENTS).expect("kept") as *const Event;
        for seq in (CHUNK_EVENTS as u64 + 2)..=n as u64 {
            kept.push(event(seq));
        }
        let still = kept.get(CHUNK_EVENTS).expect("kept") as *const Event;
        assert_eq!(still, second_chunk_first, "a kept event moved");
        assert_eq!(kept.len(), n);
        assert_eq!(kept.chunks().count(), 4);
        assert!(kept.chunks().rev().skip(1).all(|c| c.len() == CHUNK_EVENTS));
        let seqs: Vec<u64> = kept.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=n as u64).collect::<Vec<_>>());
        assert_eq!(kept.get(n - 1).map(|e| e.seq), Some(n as u64));
        assert_eq!(kept.get(n), None);
        assert_eq!(kept.last().map(|e| e.seq), Some(n as u64));
        let all = kept.to_vec();
        assert_eq!(all, kept.clone().into_vec());
        assert_eq!(all.iter().map(|e| e.seq).collect::<Vec<_>>(), seqs);
    }

    /// A short run's events are one vector no larger than a `Vec` would be,
    /// given back without a copy.
    #[test]
    fn a_short_run_keeps_one_vector() {
        let mut kept = KeptEvents::new();
        assert!(kept.is_empty() && kept.last().is_none() && kept.get(0).is_none());
        (1..=10).for_each(|seq| kept.push(event(seq)));
        assert_eq!(kept.chunks().count(), 1);
        let first = kept.get(0).expect("kept") as *const Event;
        let all = kept.into_vec();
        assert_eq!(all.as_ptr(), first, "the one chunk is handed back, not copied");
        assert!(all.capacity() < CHUNK_EVENTS);
    }
}
