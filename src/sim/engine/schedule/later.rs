//! What is due later: the queue's entries past the instant at hand, in the
//! order they fall due (earliest due time first, then their own order).
//!
//! A radix heap over due times. The clock never goes back, and nothing is
//! queued for before the instant at hand, so the earliest due time looked at,
//! [`Later::first_due`], only grows: an entry waits in the bucket named by the
//! highest bit where its due time differs from it, and when the earliest
//! instant is wanted, only the lowest bucket is read, once, and its entries
//! move to lower buckets (each entry moves at most 64 times, in practice a few).
//! The entries of the earliest instant wait in a sorted deque, in their own
//! order: sorted once when the instant is reached (a sort reads its vector in
//! runs, where a binary heap's pops, one at a time, each sifted through every
//! level: at an instant of 10^5 timers, a tree's children ending at once, a
//! cache miss a level; issue #19), and what joins it later is the newest, put
//! at its end.
//!
//! Why not one binary heap: with jitter every message passes through here, a
//! run at 10^5 calls holds 10^5 to 10^6 entries, and each pop of a binary heap
//! sifts a hole through all its levels, a cache miss a level once the heap
//! outgrows the cache (the largest single growth of the jittered loads,
//! BENCHMARKS.md, twenty-seventh session). Here a push appends to a vector and
//! a bucket is read in order, as the prefetcher likes.
//!
//! What comes out is what a binary heap of the same entries gives: every entry
//! of the earliest due time, in their order, then the next due time's.

use std::collections::VecDeque;

use crate::protocol::Nanos;
use crate::trim::Trim;

/// An entry's due time.
pub(super) trait Due {
    /// When it falls due.
    fn due(&self) -> Nanos;
}

/// One bucket per bit of a due time.
const BUCKETS: usize = Nanos::BITS as usize;

/// How many entries past a bucket's end an append asks for the line of.
const AHEAD: usize = 8;

/// The most entries of room an emptied bucket keeps (64 buckets: 4,096 at most).
const KEPT_MAX: usize = 64;

/// The entries due later, by due time.
#[derive(Debug)]
pub(super) struct Later<T> {
    /// No entry is due before it: the earliest due time looked at (0 at first).
    at: Nanos,
    /// The entries due at `at`, in their order (ascending).
    now: VecDeque<T>,
    /// Bucket `k` holds the entries due after `at` whose due time differs from
    /// `at` first (from the top) at bit `k`, in no order.
    buckets: [Vec<T>; BUCKETS],
    /// Bit `k` set: bucket `k` holds an entry.
    occupied: u64,
    len: usize,
}

impl<T> Default for Later<T> {
    fn default() -> Self {
        Later {
            at: 0,
            now: VecDeque::new(),
            buckets: std::array::from_fn(|_| Vec::new()),
            occupied: 0,
            len: 0,
        }
    }
}

impl<T: Due + Ord> Later<T> {
    /// How many entries wait.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The room its vectors hold, in entries.
    #[cfg(test)]
    pub(super) fn capacity(&self) -> usize {
        self.now.capacity() + self.buckets.iter().map(Vec::capacity).sum::<usize>()
    }

    /// Adds `entry`. One due before the earliest looked at (which a run never
    /// queues: the clock does not go back) costs a rebuild, not a wrong order.
    pub(super) fn push(&mut self, entry: T) {
        if entry.due() < self.at {
            self.rebase(entry.due());
        }
        self.len += 1;
        self.place(entry);
    }

    fn place(&mut self, entry: T) {
        let due = entry.due();
        if due == self.at {
            // What joins the instant at hand is nearly always the newest (a
            // message or timer made now, due now): at the end. Else, its place.
            if self.now.back().is_none_or(|last| *last <= entry) {
                self.now.push_back(entry);
            } else {
                let at = self.now.partition_point(|queued| *queued < entry);
                self.now.insert(at, entry);
            }
        } else {
            let k = (Nanos::BITS - 1 - (due ^ self.at).leading_zeros()) as usize;
            let bucket = &mut self.buckets[k];
            // Appends write a line nobody has read since the bucket's room was
            // made: at a tree of 10^5 each spawn's work timer wrote one, and a
            // store that misses holds every store behind it (96% of `place`'s
            // time at 10^5 was waiting there). Asked for a few entries ahead,
            // the line is in when the append comes.
            crate::prefetch::line_at(bucket.as_ptr().wrapping_add(bucket.len() + AHEAD));
            bucket.push(entry);
            self.occupied |= 1 << k;
        }
    }

    /// Whether an entry waits that is due at `instant`, the earliest one
    /// looked at.
    pub(super) fn holds_due(&self, instant: Nanos) -> bool {
        self.at == instant && !self.now.is_empty()
    }

    /// The earliest due time of what waits, its entries made ready for
    /// [`Later::pop_now`]; nothing may be pushed for before it afterwards.
    pub(super) fn first_due(&mut self) -> Option<Nanos> {
        if !self.now.is_empty() {
            return Some(self.at);
        }
        if self.occupied == 0 {
            return None;
        }
        // The lowest bucket holds the earliest entries; its earliest is the
        // new `at`, and its entries share every bit above `k` with it, so each
        // moves to a lower bucket (or to `now`); the higher buckets stay.
        let k = self.occupied.trailing_zeros() as usize;
        let mut bucket = std::mem::take(&mut self.buckets[k]);
        self.occupied &= !(1 << k);
        let at = (bucket.iter().map(Due::due).min()).expect("an occupied bucket holds an entry");
        self.at = at;
        if bucket.capacity() <= KEPT_MAX {
            // A small bucket keeps its room: it is read once each time it fills.
            for entry in bucket.drain(..) {
                if entry.due() == at {
                    self.now.push_back(entry);
                } else {
                    self.place(entry);
                }
            }
            self.now.make_contiguous().sort_unstable();
            self.buckets[k] = bucket;
            return Some(at);
        }
        // A large one (a burst: 10^5 windows falling due at one instant) becomes
        // the instant's deque in place, what falls due later leaving it first:
        // moved whole, its entries would be held twice at the burst's peak.
        let mut i = 0;
        while i < bucket.len() {
            if bucket[i].due() == at {
                i += 1;
            } else {
                let later = bucket.swap_remove(i);
                self.place(later);
            }
        }
        bucket.sort_unstable();
        self.now = VecDeque::from(bucket);
        Some(at)
    }

    /// The first entry due at the earliest due time [`Later::first_due`] gave.
    pub(super) fn peek_now(&self) -> Option<&T> {
        self.now.front()
    }

    /// Takes the first entry due at the earliest due time [`Later::first_due`]
    /// gave; `None` once they are all taken.
    pub(super) fn pop_now(&mut self) -> Option<T> {
        let entry = self.now.pop_front()?;
        self.len -= 1;
        Some(entry)
    }

    /// Keeps only the entries `keep` says to keep.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        self.now.retain(|entry| keep(entry));
        self.occupied = 0;
        self.now.trim();
        for (k, bucket) in self.buckets.iter_mut().enumerate() {
            bucket.retain(&mut keep);
            // What a process loss made stale leaves its room too.
            bucket.trim();
            if !bucket.is_empty() {
                self.occupied |= 1 << k;
            }
        }
        self.len = self.now.len() + self.buckets.iter().map(Vec::len).sum::<usize>();
    }

    /// Everything placed again from `at`, an earlier due time. Nothing held
    /// is due at `at` (all of it is due at or after the old one), so no entry
    /// lands in the instant's deque here, and its insert in place never runs.
    fn rebase(&mut self, at: Nanos) {
        let mut all: Vec<T> = std::mem::take(&mut self.now).into();
        for bucket in &mut self.buckets {
            all.append(bucket);
        }
        (self.at, self.occupied) = (at, 0);
        for entry in all {
            self.place(entry);
        }
    }
}

impl<T: Ord> Trim for Later<T> {
    fn trim(&mut self) {
        self.now.trim();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    struct E(Nanos, u64);

    impl Due for E {
        fn due(&self) -> Nanos {
            self.0
        }
    }

    /// Everything due at the earliest instant, in order, as the queue drains it.
    fn drain_instant(later: &mut Later<E>) -> Vec<E> {
        later.first_due();
        std::iter::from_fn(|| later.pop_now()).collect()
    }

    #[test]
    fn entries_come_out_by_due_time_then_their_order() {
        let mut later = Later::default();
        for e in [E(30, 1), E(5, 2), E(30, 0), E(7, 3), E(5, 1), E(1 << 40, 4)] {
            later.push(e);
        }
        assert_eq!(later.len(), 6);
        assert_eq!(later.first_due(), Some(5));
        assert!(later.holds_due(5) && !later.holds_due(7));
        assert_eq!(drain_instant(&mut later), [E(5, 1), E(5, 2)]);
        assert!(!later.holds_due(5));
        later.push(E(7, 0)); // due later than the instant drained, earlier than the rest
        assert_eq!(drain_instant(&mut later), [E(7, 0), E(7, 3)]);
        assert_eq!(drain_instant(&mut later), [E(30, 0), E(30, 1)]);
        assert_eq!(drain_instant(&mut later), [E(1 << 40, 4)]);
        assert_eq!(later.first_due(), None);
        assert_eq!(later.len(), 0);
    }

    #[test]
    fn an_entry_due_before_the_earliest_looked_at_still_comes_out_first() {
        let mut later = Later::default();
        later.push(E(100, 1));
        assert_eq!(later.first_due(), Some(100));
        later.push(E(50, 2));
        later.push(E(100, 0));
        assert_eq!(drain_instant(&mut later), [E(50, 2)]);
        assert_eq!(drain_instant(&mut later), [E(100, 0), E(100, 1)]);
    }

    #[test]
    fn a_burst_due_at_one_instant_comes_out_in_order_whatever_order_it_came_in() {
        // Above `KEPT_MAX` entries in one bucket: the instant is made from the
        // bucket in place, here with its entries in reverse order and one due
        // later among them.
        let mut later = Later::default();
        let burst = 4 * KEPT_MAX as u64;
        for seq in (0..burst).rev() {
            later.push(E(1_000, seq));
        }
        later.push(E(1_001, burst));
        assert_eq!(later.first_due(), Some(1_000));
        later.push(E(1_000, burst + 1)); // joins the instant at hand, the newest
        let want: Vec<E> = (0..burst + 2)
            .filter(|s| *s != burst)
            .map(|s| E(1_000, s))
            .collect();
        assert_eq!(std::iter::from_fn(|| later.pop_now()).collect::<Vec<_>>(), want);
        assert_eq!(drain_instant(&mut later), [E(1_001, burst)]);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Push(Nanos, u64),
        Drain,
        Retain(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u64..64, any::<u64>()).prop_map(|(d, s)| Op::Push(d, s)),
            1 => (0u64..1 << 50, any::<u64>()).prop_map(|(d, s)| Op::Push(d, s)),
            3 => Just(Op::Drain),
            1 => (2u64..5).prop_map(Op::Retain),
        ]
    }

    proptest! {
        /// As the queue uses it (pushes at or after the instant at hand, whole
        /// instants drained), it gives what a binary heap of the same entries
        /// gives.
        #[test]
        fn agrees_with_a_binary_heap(ops in proptest::collection::vec(op(), 1..2_000)) {
            let (mut later, mut heap) = (Later::default(), BinaryHeap::new());
            let mut now = 0;
            for op in ops {
                match op {
                    Op::Push(ahead, seq) => {
                        let e = E(now + ahead, seq);
                        later.push(e);
                        heap.push(Reverse(e));
                    }
                    Op::Drain => {
                        let got = drain_instant(&mut later);
                        let mut want = Vec::new();
                        if let Some(Reverse(first)) = heap.peek().copied() {
                            now = first.0;
                            while heap.peek().is_some_and(|Reverse(e)| e.0 == now) {
                                want.push(heap.pop().unwrap().0);
                            }
                        }
                        prop_assert_eq!(got, want);
                    }
                    Op::Retain(m) => {
                        later.retain(|e| e.1 % m != 0);
                        heap.retain(|Reverse(e)| e.1 % m != 0);
                    }
                }
                prop_assert_eq!(later.len(), heap.len());
            }
        }
    }
}
