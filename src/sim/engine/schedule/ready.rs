//! What is deliverable at the current instant, in the order things entered the
//! queue (`seq`), so that a strategy can pick the k-th, find the place of one, add
//! and remove in O(log n) whatever the number of ties (SPEC §6 "Cost": a delivery
//! costs the same whether one or a million others are due at the same instant).
//!
//! The set is a list of sorted blocks of at most [`BLOCK_MAX`] entries, every key
//! of a block below every key of the next, with a Fenwick tree over the blocks'
//! lengths for rank arithmetic. Nearly every insertion is of the largest key yet
//! (a new message or timer: `seq` only grows) and goes to the end of the last
//! block; the rest (the next message of a channel whose head was just delivered)
//! go into their block with a move of at most [`BLOCK_MAX`] entries. A block that
//! grows past the bound splits, one that empties goes; either rebuilds the Fenwick
//! tree over the blocks, which is paid for by the `BLOCK_MAX / 2` insertions or
//! removals that made it necessary.
//!
//! The set also keeps the keys that entered since a strategy last looked
//! ([`Ready::take_entered`]), so a strategy that indexes what is ready its own way
//! (PCT's priorities) keeps its index without a scan.

use crate::effect::TimerId;
use crate::protocol::Addr;

/// One thing deliverable now, as a strategy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The receiver.
    pub to: Addr,
    /// The sender, or `None` for a timer.
    pub from: Option<Addr>,
    /// Its place in the order things entered the queue: unique and stable for a
    /// given schedule prefix.
    pub seq: u64,
    /// The timer's id, for a timer.
    pub(crate) timer: Option<TimerId>,
}

/// Most entries in one block: small enough that a move within a block is a few
/// cache lines' worth of memmove, large enough that the Fenwick tree over the
/// blocks stays a few kilobytes at a million entries.
pub const BLOCK_MAX: usize = 256;

/// The candidates deliverable now, ordered by `seq`.
#[derive(Debug, Default)]
pub struct Ready {
    /// Sorted blocks, each non-empty, in key order.
    blocks: Vec<Vec<Candidate>>,
    /// Fenwick tree over the blocks' lengths (1-based internally).
    fenwick: Vec<usize>,
    len: usize,
    /// Keys added since the last [`Ready::take_entered`], in insertion order.
    entered: Vec<u64>,
}

impl Ready {
    /// How many candidates are ready.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The candidate of rank `rank` (0-based, in `seq` order).
    pub fn nth(&self, rank: usize) -> Candidate {
        assert!(rank < self.len, "rank {rank} of {} ready", self.len);
        let (block, offset) = self.locate_rank(rank);
        self.blocks[block][offset]
    }

    /// The candidate with key `seq`, if it is ready.
    pub fn get(&self, seq: u64) -> Option<Candidate> {
        let block = self.block_of(seq)?;
        let at = self.blocks[block].binary_search_by_key(&seq, |c| c.seq).ok()?;
        Some(self.blocks[block][at])
    }

    /// Whether the candidate with key `seq` is ready.
    pub fn contains(&self, seq: u64) -> bool {
        self.get(seq).is_some()
    }

    /// The rank of the candidate with key `seq`, if it is ready.
    pub fn rank_of(&self, seq: u64) -> Option<usize> {
        let block = self.block_of(seq)?;
        let at = self.blocks[block].binary_search_by_key(&seq, |c| c.seq).ok()?;
        Some(self.prefix(block) + at)
    }

    /// Every ready candidate, in `seq` order (O(n): for `explore`, whose scopes
    /// are small, and for rebuilding after a process loss).
    pub fn iter(&self) -> impl Iterator<Item = &Candidate> {
        self.blocks.iter().flatten()
    }

    /// Adds `candidate` (its `seq` not ready yet).
    pub fn insert(&mut self, candidate: Candidate) {
        if self.entered.len() > 2 * self.len + 64 {
            // A strategy that never takes them (`random`, `fifo`): keep the log
            // the size of the set, at O(log n) a key amortised.
            let mut entered = std::mem::take(&mut self.entered);
            entered.retain(|seq| self.contains(*seq));
            self.entered = entered;
        }
        self.entered.push(candidate.seq);
        self.len += 1;
        let last_key = self.blocks.last().and_then(|b| b.last()).map(|c| c.seq);
        if last_key.is_none_or(|last| candidate.seq > last) {
            match self.blocks.last_mut() {
                Some(block) if block.len() < BLOCK_MAX => {
                    block.push(candidate);
                    let at = self.blocks.len() - 1;
                    self.add(at, 1);
                }
                _ => {
                    self.blocks.push(vec![candidate]);
                    self.rebuild();
                }
            }
            return;
        }
        let block = self.block_of(candidate.seq).unwrap_or(0);
        let at = self.blocks[block]
            .binary_search_by_key(&candidate.seq, |c| c.seq)
            .expect_err("a seq is ready at most once");
        self.blocks[block].insert(at, candidate);
        if self.blocks[block].len() > BLOCK_MAX {
            let tail = self.blocks[block].split_off(BLOCK_MAX / 2);
            self.blocks.insert(block + 1, tail);
            self.rebuild();
        } else {
            self.add(block, 1);
        }
    }

    /// Removes and returns the candidate with key `seq`, if it is ready.
    pub fn remove(&mut self, seq: u64) -> Option<Candidate> {
        let block = self.block_of(seq)?;
        let at = self.blocks[block].binary_search_by_key(&seq, |c| c.seq).ok()?;
        Some(self.remove_at(block, at))
    }

    /// Removes and returns the candidate of rank `rank`.
    pub fn remove_nth(&mut self, rank: usize) -> Candidate {
        assert!(rank < self.len, "rank {rank} of {} ready", self.len);
        let (block, offset) = self.locate_rank(rank);
        self.remove_at(block, offset)
    }

    /// Keeps only the candidates `keep` accepts (a process loss: O(n), once).
    pub fn retain(&mut self, mut keep: impl FnMut(&Candidate) -> bool) {
        let kept: Vec<Candidate> = self.iter().copied().filter(|c| keep(c)).collect();
        self.blocks = kept.chunks(BLOCK_MAX / 2).map(<[Candidate]>::to_vec).collect();
        self.len = kept.len();
        self.entered
            .retain(|seq| kept.binary_search_by_key(seq, |c| c.seq).is_ok());
        self.rebuild();
    }

    /// The keys added since the last call, in `seq` order, with those no longer
    /// ready left out.
    pub fn take_entered(&mut self) -> Vec<u64> {
        let mut entered = std::mem::take(&mut self.entered);
        entered.retain(|seq| self.contains(*seq));
        entered.sort_unstable();
        entered
    }

    fn remove_at(&mut self, block: usize, at: usize) -> Candidate {
        let candidate = self.blocks[block].remove(at);
        self.len -= 1;
        if self.blocks[block].is_empty() {
            self.blocks.remove(block);
            self.rebuild();
        } else {
            self.sub(block, 1);
        }
        if self.len == 0 {
            // Nothing ready: what entered is gone too, and its log with it.
            self.entered.clear();
        }
        candidate
    }

    /// The block whose keys span `seq`: the last whose first key is at most it.
    fn block_of(&self, seq: u64) -> Option<usize> {
        let after = self.blocks.partition_point(|b| b[0].seq <= seq);
        after.checked_sub(1)
    }

    /// The block holding rank `rank`, and the offset in it.
    fn locate_rank(&self, rank: usize) -> (usize, usize) {
        // Fenwick descent: the largest prefix of blocks holding at most `rank`.
        let mut position = 0;
        let mut remaining = rank;
        let mut step = self.fenwick.len().next_power_of_two();
        while step > 0 {
            let next = position + step;
            if next <= self.fenwick.len() && self.fenwick[next - 1] <= remaining {
                position = next;
                remaining -= self.fenwick[next - 1];
            }
            step /= 2;
        }
        (position, remaining)
    }

    /// Entries in the blocks before `block`.
    fn prefix(&self, block: usize) -> usize {
        let mut sum = 0;
        let mut i = block;
        while i > 0 {
            sum += self.fenwick[i - 1];
            i &= i - 1;
        }
        sum
    }

    fn add(&mut self, block: usize, n: usize) {
        let mut i = block + 1;
        while i <= self.fenwick.len() {
            self.fenwick[i - 1] += n;
            i += i & i.wrapping_neg();
        }
    }

    fn sub(&mut self, block: usize, n: usize) {
        let mut i = block + 1;
        while i <= self.fenwick.len() {
            self.fenwick[i - 1] -= n;
            i += i & i.wrapping_neg();
        }
    }

    /// The Fenwick tree anew from the blocks' lengths, in O(blocks).
    fn rebuild(&mut self) {
        self.fenwick.clear();
        self.fenwick.extend(self.blocks.iter().map(Vec::len));
        for i in 1..=self.fenwick.len() {
            let parent = i + (i & i.wrapping_neg());
            if parent <= self.fenwick.len() {
                self.fenwick[parent - 1] += self.fenwick[i - 1];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn candidate(seq: u64) -> Candidate {
        Candidate {
            to: Addr::Broker,
            from: None,
            seq,
            timer: Some(seq),
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64),
        Remove(u64),
        RemoveNth(usize),
        Retain(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u64..5_000).prop_map(Op::Insert),
            2 => (0u64..5_000).prop_map(Op::Remove),
            3 => (0usize..5_000).prop_map(Op::RemoveNth),
            1 => (2u64..7).prop_map(Op::Retain),
        ]
    }

    proptest! {
        /// The set agrees with a sorted vector on every operation: rank, select,
        /// membership and order, across block splits and removals.
        #[test]
        fn agrees_with_a_sorted_vector(ops in proptest::collection::vec(op(), 1..3_000)) {
            let mut ready = Ready::default();
            let mut model: Vec<u64> = Vec::new();
            for op in ops {
                match op {
                    Op::Insert(seq) => {
                        if let Err(at) = model.binary_search(&seq) {
                            model.insert(at, seq);
                            ready.insert(candidate(seq));
                        }
                    }
                    Op::Remove(seq) => {
                        let expected = model.binary_search(&seq).ok().map(|at| model.remove(at));
                        prop_assert_eq!(ready.remove(seq).map(|c| c.seq), expected);
                    }
                    Op::RemoveNth(rank) if !model.is_empty() => {
                        let rank = rank % model.len();
                        prop_assert_eq!(ready.remove_nth(rank).seq, model.remove(rank));
                    }
                    Op::RemoveNth(_) => {}
                    Op::Retain(m) => {
                        model.retain(|seq| seq % m != 0);
                        ready.retain(|c| c.seq % m != 0);
                    }
                }
                prop_assert_eq!(ready.len(), model.len());
            }
            let all: Vec<u64> = ready.iter().map(|c| c.seq).collect();
            prop_assert_eq!(&all, &model);
            for (rank, seq) in model.iter().enumerate() {
                prop_assert_eq!(ready.nth(rank).seq, *seq);
                prop_assert_eq!(ready.rank_of(*seq), Some(rank));
            }
        }
    }

    #[test]
    fn entered_keys_come_back_in_seq_order_without_those_gone() {
        let mut ready = Ready::default();
        for seq in [5, 9, 7, 3] {
            ready.insert(candidate(seq));
        }
        ready.remove(9);
        assert_eq!(ready.take_entered(), [3, 5, 7]);
        assert!(ready.take_entered().is_empty());
        ready.insert(candidate(11));
        assert_eq!(ready.take_entered(), [11]);
    }

    #[test]
    fn appends_fill_blocks_and_ranks_hold_across_many_blocks() {
        let mut ready = Ready::default();
        let n = BLOCK_MAX as u64 * 10 + 3;
        for seq in 0..n {
            ready.insert(candidate(seq * 2));
        }
        ready.insert(candidate(2 * 700 + 1));
        assert_eq!(ready.rank_of(2 * 700 + 1), Some(701));
        assert_eq!(ready.nth(701).seq, 1_401);
        assert_eq!(ready.nth(ready.len() - 1).seq, (n - 1) * 2);
    }
}
