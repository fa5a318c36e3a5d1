//! What is deliverable at the current instant, in the order things entered the
//! queue (`seq`), so that a strategy can pick the k-th, find the place of one, add
//! and remove in O(log n) whatever the number of ties (SPEC §6 "Cost": a delivery
//! costs the same whether one or a million others are due at the same instant).
//!
//! The set is a list of sorted blocks of at most [`BLOCK_MAX`] entries, every key
//! of a block below every key of the next, with a Fenwick tree over the blocks'
//! live counts for rank arithmetic. Nearly every insertion is of the largest key
//! yet (a new message or timer: `seq` only grows) and goes to the end of the last
//! block; the rest (the next message of a channel whose head was just delivered)
//! go into their block with a move of at most [`BLOCK_MAX`] entries. A removal
//! moves nothing: it clears the entry's bit in its block's bitmap of live entries,
//! and the k-th live entry of a block is found by counting bits, so a random pick
//! touches the bitmap and the entry's own line, not the quarter of a block a
//! removal in place moved (at a burst of 10^5, ~1.5 KB a delivery, out of the
//! cache: the largest growth of the cancelled tree's delivery, BENCHMARKS.md,
//! thirty-fifth session). Dead entries keep their place (and their key, so the
//! blocks stay sorted) until an insertion among older keys takes the place of
//! the nearest one, moving only the entries between, or an append to a full
//! last block compacts it. A block that grows past the bound splits, one whose
//! last live entry leaves goes; either rebuilds the Fenwick tree over the
//! blocks, which is paid for by the `BLOCK_MAX / 2` insertions or removals that
//! made it necessary.
//!
//! The set also keeps the keys that entered since a strategy last looked
//! ([`Ready::take_entered`]), so a strategy that indexes what is ready its own way
//! (PCT's priorities) keeps its index without a scan. It starts keeping them at
//! that first look (which returns everything ready): `random` and `fifo` never
//! look, and pay nothing for it.
//!
//! Entries are stored packed (`Slot`, 24 bytes, not a [`Candidate`]'s 56), and
//! each block's first key is kept in one vector of its own, so finding a key's
//! block reads one contiguous array instead of the head of every block it passes:
//! at a tie of 10^5 (400 blocks) a removal moved ~7 KB of its block and a lookup
//! missed the cache at each step of its search.

use crate::bits::bit;
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

/// The top bit of a slot's first word: a timer.
const TIMER_BIT: u64 = 1 << 63;

/// A candidate as the set and the queue's heap store it: its `seq` and, packed
/// in two words, its receiver's [`Addr::code`] (top bit set for a timer) and its
/// sender's code or its timer's id. Ordered by `seq` first (unique), so the
/// packing never decides an order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Slot {
    pub(crate) seq: u64,
    packed: (u64, u64),
}

impl Slot {
    /// The head of the channel from `from` to `to`.
    pub(crate) fn channel(seq: u64, from: Addr, to: Addr) -> Slot {
        Slot::packed(seq, (to.code(), from.code()))
    }

    /// Timer `id` of `owner`.
    pub(crate) fn timer(seq: u64, owner: Addr, id: TimerId) -> Slot {
        Slot::packed(seq, (owner.code() | TIMER_BIT, id))
    }

    fn packed(seq: u64, packed: (u64, u64)) -> Slot {
        debug_assert!(
            (packed.0 & !TIMER_BIT) < (TIMER_BIT >> 1),
            "an address code fits its word"
        );
        Slot { seq, packed }
    }

    fn of(candidate: Candidate) -> Slot {
        match (candidate.from, candidate.timer) {
            (_, Some(id)) => Slot::timer(candidate.seq, candidate.to, id),
            (Some(from), None) => Slot::channel(candidate.seq, from, candidate.to),
            (None, None) => unreachable!("a candidate is a channel's head or a timer"),
        }
    }

    /// Whether it is a timer (not a channel's head).
    pub(crate) fn is_timer(self) -> bool {
        self.packed.0 & TIMER_BIT != 0
    }

    /// The candidate it packs.
    pub(crate) fn candidate(self) -> Candidate {
        let (first, second) = self.packed;
        if self.is_timer() {
            Candidate {
                to: Addr::from_code(first & !TIMER_BIT),
                from: None,
                seq: self.seq,
                timer: Some(second),
            }
        } else {
            Candidate {
                to: Addr::from_code(first),
                from: Some(Addr::from_code(second)),
                seq: self.seq,
                timer: None,
            }
        }
    }
}

/// Most entries in one block: small enough that a move within a block is a few
/// cache lines' worth of memmove, large enough that the Fenwick tree over the
/// blocks stays a few kilobytes at a million entries.
pub const BLOCK_MAX: usize = 256;

/// Words of a block's bitmap of live entries.
const WORDS: usize = BLOCK_MAX / 64;

/// A sorted run of entries, live and dead: a dead entry keeps its place and its
/// key until the block is compacted.
#[derive(Debug, Default)]
struct Block {
    /// In key order, at most [`BLOCK_MAX`].
    slots: Vec<Slot>,
    /// Bit `i`: `slots[i]` is live.
    live: [u64; WORDS],
    /// Live entries (the bits set).
    count: usize,
}

impl Block {
    fn is_live(&self, at: usize) -> bool {
        let (word, mask) = bit(at);
        self.live[word] & mask != 0
    }

    /// Where the entry with key `seq` is, live or dead.
    fn find(&self, seq: u64) -> Result<usize, usize> {
        self.slots.binary_search_by_key(&seq, |slot| slot.seq)
    }

    /// Where the live entry with key `seq` is.
    fn find_live(&self, seq: u64) -> Option<usize> {
        self.find(seq).ok().filter(|at| self.is_live(*at))
    }

    /// How many live entries come before place `at`.
    fn rank(&self, at: usize) -> usize {
        let word = at / 64;
        let below: usize = self.live[..word].iter().map(|w| w.count_ones() as usize).sum();
        let mask = (1u64 << (at % 64)) - 1;
        below + (self.live[word] & mask).count_ones() as usize
    }

    /// The place of the live entry of rank `rank` (below `count`).
    fn select(&self, rank: usize) -> usize {
        if self.count == self.slots.len() {
            return rank; // no dead entry: places are ranks
        }
        let mut remaining = rank;
        for (word, bits) in self.live.iter().enumerate() {
            let ones = bits.count_ones() as usize;
            if remaining < ones {
                return word * 64 + select_in_word(*bits, remaining as u32) as usize;
            }
            remaining -= ones;
        }
        unreachable!("rank {rank} of {} live", self.count)
    }

    fn kill(&mut self, at: usize) {
        debug_assert!(self.is_live(at), "a live entry dies once");
        let (word, mask) = bit(at);
        self.live[word] &= !mask;
        self.count -= 1;
    }

    /// Puts `slot` back at the place its dead self kept.
    fn revive(&mut self, at: usize, slot: Slot) {
        assert!(!self.is_live(at), "a seq is ready at most once");
        self.slots[at] = slot;
        let (word, mask) = bit(at);
        self.live[word] |= mask;
        self.count += 1;
    }

    fn push(&mut self, slot: Slot) {
        let at = self.slots.len();
        self.slots.push(slot);
        let (word, mask) = bit(at);
        self.live[word] |= mask;
        self.count += 1;
    }

    /// Marks every entry live (after a compaction, an insertion or a split).
    fn all_live(&mut self) {
        let n = self.slots.len();
        debug_assert!(n <= BLOCK_MAX);
        for (word, bits) in self.live.iter_mut().enumerate() {
            let from = word * 64;
            *bits = match n.saturating_sub(from) {
                0 => 0,
                k if k >= 64 => u64::MAX,
                k => (1 << k) - 1,
            };
        }
        self.count = n;
    }

    /// Puts `slot` at place `at`, its place in key order, over the nearest dead
    /// entry: the live entries between move one place toward it, and it is
    /// live again, holding the last of them. Every entry between `at` and the
    /// nearest dead one is live (it is the nearest), so only that dead entry's
    /// bit changes. A move of the entries between, where dropping every dead
    /// entry first (a compaction) read and moved the whole block at each
    /// insertion: a channel's next message enters among older keys, at every
    /// delivery of a long channel (a waterfall of 64 at 10^5 roots: a tenth of
    /// the run's samples, in blocks out of the cache). False, moving nothing,
    /// when the block has no dead entry.
    fn insert_over_dead(&mut self, at: usize, slot: Slot) -> bool {
        let dead = match (self.dead_before(at), self.dead_from(at)) {
            (Some(b), Some(a)) => {
                if at - b <= a - at {
                    b
                } else {
                    a
                }
            }
            (Some(dead), None) | (None, Some(dead)) => dead,
            (None, None) => return false,
        };
        if dead < at {
            self.slots.copy_within(dead + 1..at, dead);
            self.slots[at - 1] = slot;
        } else {
            self.slots.copy_within(at..dead, at + 1);
            self.slots[at] = slot;
        }
        let (word, mask) = bit(dead);
        self.live[word] |= mask;
        self.count += 1;
        true
    }

    /// The first dead entry at or after place `at`.
    fn dead_from(&self, at: usize) -> Option<usize> {
        let mut word = at / 64;
        let mut dead = !self.live.get(word)? & (u64::MAX << (at % 64));
        loop {
            if dead != 0 {
                let place = word * 64 + dead.trailing_zeros() as usize;
                // Past the last entry every bit is clear: no entry, not a dead one.
                return (place < self.slots.len()).then_some(place);
            }
            word += 1;
            dead = !*self.live.get(word)?;
        }
    }

    /// The last dead entry before place `at`.
    fn dead_before(&self, at: usize) -> Option<usize> {
        let last = at.checked_sub(1)?;
        let mut word = last / 64;
        let mut dead = !self.live[word] & (u64::MAX >> (63 - last % 64));
        loop {
            if dead != 0 {
                return Some(word * 64 + 63 - dead.leading_zeros() as usize);
            }
            word = word.checked_sub(1)?;
            dead = !self.live[word];
        }
    }

    /// Drops the dead entries, keeping the live ones' order.
    fn compact(&mut self) {
        if self.count == self.slots.len() {
            return;
        }
        let live = self.live;
        let mut at = 0;
        self.slots.retain(|_| {
            let (word, mask) = bit(at);
            at += 1;
            live[word] & mask != 0
        });
        self.all_live();
    }

    fn live_slots(&self) -> impl Iterator<Item = Slot> + '_ {
        (self.slots.iter().enumerate())
            .filter(|(at, _)| self.is_live(*at))
            .map(|(_, slot)| *slot)
    }

    /// A block of `slots`, all live.
    fn of(slots: Vec<Slot>) -> Block {
        let mut block = Block {
            slots,
            live: [0; WORDS],
            count: 0,
        };
        block.all_live();
        block
    }
}

/// The place of the set bit of rank `rank` in `bits` (which has more set bits
/// than `rank`): below 8, by clearing the lowest set bit `rank` times; above,
/// by halving without a branch, six steps whatever the rank, where clearing
/// took up to 63 dependent steps. At each step the low `width` bits hold the
/// bit sought or not; if not, they are shifted out and their count taken from
/// `rank`.
fn select_in_word(mut bits: u64, mut rank: u32) -> u32 {
    if rank < 8 {
        // A low rank (a sparse block's words, late in a burst): fewer steps
        // clearing the bits below it than halving.
        for _ in 0..rank {
            bits &= bits - 1;
        }
        return bits.trailing_zeros();
    }
    let mut at = 0;
    for width in [32u32, 16, 8, 4, 2, 1] {
        let ones = (bits & ((1u64 << width) - 1)).count_ones();
        // All ones when the bit sought lies above the low `width` bits.
        let above = u32::from(rank >= ones).wrapping_neg();
        rank -= ones & above;
        bits >>= width & above;
        at += width & above;
    }
    at
}

/// The candidates deliverable now, ordered by `seq`.
#[derive(Debug, Default)]
pub struct Ready {
    /// Sorted blocks, each with a live entry, in key order.
    blocks: Vec<Block>,
    /// Each block's first key (its first entry's, live or dead).
    firsts: Vec<u64>,
    /// Fenwick tree over the blocks' live counts (1-based internally).
    fenwick: Vec<usize>,
    len: usize,
    /// Keys added since the last [`Ready::take_entered`], in insertion order,
    /// once a strategy has looked (`tracking`).
    entered: Vec<u64>,
    tracking: bool,
    /// The room of the last block that emptied, for the next block to start
    /// in: what is ready drains to nothing at nearly every instant and fills
    /// again, and a block made anew was an allocation of one entry and then
    /// its growth, two or more allocations an instant (a tree of 10^5 agents,
    /// whose instants are mostly one delivery long).
    spare: Vec<Slot>,
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
        let block = &self.blocks[block];
        block.slots[block.select(offset)].candidate()
    }

    /// The candidate with key `seq`, if it is ready.
    pub fn get(&self, seq: u64) -> Option<Candidate> {
        let (block, at) = self.find_live(seq)?;
        Some(self.blocks[block].slots[at].candidate())
    }

    /// Whether the candidate with key `seq` is ready.
    pub fn contains(&self, seq: u64) -> bool {
        self.find_live(seq).is_some()
    }

    /// The rank of the candidate with key `seq`, if it is ready.
    pub fn rank_of(&self, seq: u64) -> Option<usize> {
        let (block, at) = self.find_live(seq)?;
        Some(self.prefix(block) + self.blocks[block].rank(at))
    }

    /// Every ready candidate, in `seq` order (O(n): for `explore`, whose scopes
    /// are small, and for rebuilding after a process loss).
    pub fn iter(&self) -> impl Iterator<Item = Candidate> + '_ {
        (self.blocks.iter())
            .flat_map(Block::live_slots)
            .map(|slot| slot.candidate())
    }

    /// Adds `candidate` (its `seq` not ready yet).
    pub fn insert(&mut self, candidate: Candidate) {
        self.insert_slot(Slot::of(candidate));
    }

    /// Adds `slot` (its `seq` not ready yet).
    pub(crate) fn insert_slot(&mut self, slot: Slot) {
        if self.tracking {
            if self.entered.len() > 2 * self.len + 64 {
                // Keys that left again before the strategy looked: keep the log
                // the size of the set, at O(log n) a key amortised.
                let mut entered = std::mem::take(&mut self.entered);
                entered.retain(|seq| self.contains(*seq));
                self.entered = entered;
            }
            self.entered.push(slot.seq);
        }
        self.len += 1;
        let last_key = (self.blocks.last()).and_then(|b| b.slots.last()).map(|c| c.seq);
        if last_key.is_none_or(|last| slot.seq > last) {
            self.append(slot);
            return;
        }
        let block = self.block_of(slot.seq).unwrap_or(0);
        let at = match self.blocks[block].find(slot.seq) {
            Ok(at) => {
                // Its dead self, still in place: live again.
                self.blocks[block].revive(at, slot);
                self.add(block, 1);
                return;
            }
            Err(at) if self.blocks[block].insert_over_dead(at, slot) => {
                self.firsts[block] = self.blocks[block].slots[0].seq;
                self.add(block, 1);
                return;
            }
            Err(at) => at,
        };
        let target = &mut self.blocks[block];
        target.slots.insert(at, slot);
        self.firsts[block] = target.slots[0].seq;
        if target.slots.len() > BLOCK_MAX {
            let tail = target.slots.split_off(BLOCK_MAX / 2);
            target.all_live();
            self.blocks.insert(block + 1, Block::of(tail));
            self.rebuild();
        } else {
            target.all_live();
            self.add(block, 1);
        }
    }

    /// Adds `slot`, whose key is above every key in the set.
    fn append(&mut self, slot: Slot) {
        let last = self.blocks.len().wrapping_sub(1);
        if let Some(block) = self.blocks.last_mut()
            && block.slots.len() == BLOCK_MAX
            && block.count <= BLOCK_MAX * 3 / 4
        {
            // A quarter of the block died since it filled: their room, for a
            // move of one block paid for by those removals.
            block.compact();
            self.firsts[last] = block.slots[0].seq;
        }
        match self.blocks.last_mut() {
            Some(block) if block.slots.len() < BLOCK_MAX => {
                block.push(slot);
                let at = self.blocks.len() - 1;
                self.add(at, 1);
            }
            _ => {
                let mut block = Block::of(std::mem::take(&mut self.spare));
                block.push(slot);
                self.blocks.push(block);
                self.rebuild();
            }
        }
    }

    /// Removes and returns the candidate with key `seq`, if it is ready.
    pub fn remove(&mut self, seq: u64) -> Option<Candidate> {
        let (block, at) = self.find_live(seq)?;
        Some(self.remove_at(block, at))
    }

    /// Removes and returns the candidate of rank `rank`.
    pub fn remove_nth(&mut self, rank: usize) -> Candidate {
        assert!(rank < self.len, "rank {rank} of {} ready", self.len);
        let (block, offset) = self.locate_rank(rank);
        let at = self.blocks[block].select(offset);
        self.remove_at(block, at)
    }

    /// Keeps only the candidates `keep` accepts (a process loss: O(n), once).
    pub fn retain(&mut self, mut keep: impl FnMut(&Candidate) -> bool) {
        let kept: Vec<Slot> = (self.blocks.iter().flat_map(Block::live_slots))
            .filter(|slot| keep(&slot.candidate()))
            .collect();
        self.blocks = (kept.chunks(BLOCK_MAX / 2))
            .map(|chunk| Block::of(chunk.to_vec()))
            .collect();
        self.len = kept.len();
        self.entered
            .retain(|seq| kept.binary_search_by_key(seq, |c| c.seq).is_ok());
        self.rebuild();
    }

    /// The keys added since the last call, in `seq` order, with those no longer
    /// ready left out. The first call gives every key ready (all entered since
    /// no one looked), and from then on the set logs what enters.
    pub fn take_entered(&mut self) -> Vec<u64> {
        if !self.tracking {
            self.tracking = true;
            self.entered.clear();
            return self.iter().map(|c| c.seq).collect();
        }
        let mut entered = std::mem::take(&mut self.entered);
        entered.retain(|seq| self.contains(*seq));
        entered.sort_unstable();
        entered
    }

    /// Kills the live entry at place `at` of block `block` and gives it back.
    fn remove_at(&mut self, block: usize, at: usize) -> Candidate {
        let slot = self.blocks[block].slots[at];
        self.blocks[block].kill(at);
        self.len -= 1;
        if self.blocks[block].count == 0 {
            let mut emptied = self.blocks.remove(block).slots;
            if emptied.capacity() > self.spare.capacity() {
                emptied.clear();
                self.spare = emptied;
            }
            self.rebuild();
        } else {
            self.sub(block, 1);
        }
        if self.len == 0 {
            // Nothing ready: what entered is gone too, and its log with it.
            self.entered.clear();
        }
        slot.candidate()
    }

    /// The block and place of the live entry with key `seq`.
    fn find_live(&self, seq: u64) -> Option<(usize, usize)> {
        let block = self.block_of(seq)?;
        Some((block, self.blocks[block].find_live(seq)?))
    }

    /// The block whose keys span `seq`: the last whose first key is at most it.
    fn block_of(&self, seq: u64) -> Option<usize> {
        let after = self.firsts.partition_point(|first| *first <= seq);
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

    /// The Fenwick tree and the first keys anew from the blocks, in O(blocks).
    fn rebuild(&mut self) {
        self.firsts.clear();
        self.firsts.extend(self.blocks.iter().map(|b| b.slots[0].seq));
        self.fenwick.clear();
        self.fenwick.extend(self.blocks.iter().map(|b| b.count));
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
    fn the_set_bit_of_each_rank_is_found_in_any_word() {
        for bits in [
            1u64,
            u64::MAX,
            0x8000_0000_0000_0001,
            0xF0F0_0000_FFFF_0101,
            1 << 63,
        ] {
            let places: Vec<u32> = (0..64).filter(|i| bits & (1 << i) != 0).collect();
            for (rank, place) in places.iter().enumerate() {
                assert_eq!(select_in_word(bits, rank as u32), *place, "{bits:#x} rank {rank}");
            }
        }
    }

    /// A set of the keys 0, 2, 4, … below `2 * n`, inserted in order.
    fn evens(n: u64) -> Ready {
        let mut ready = Ready::default();
        for seq in 0..n {
            ready.insert(candidate(seq * 2));
        }
        ready
    }

    #[test]
    fn dead_entries_keep_their_place_until_their_block_needs_the_room() {
        let n = BLOCK_MAX as u64;
        let mut ready = evens(n);
        // Every other entry dies, the first one too: nothing moves.
        for seq in (0..n).step_by(2) {
            assert_eq!(ready.remove(seq * 2).map(|c| c.seq), Some(seq * 2));
        }
        assert_eq!((ready.blocks.len(), ready.blocks[0].slots.len()), (1, BLOCK_MAX));
        assert_eq!(ready.nth(0).seq, 2);
        assert_eq!(ready.rank_of(6), Some(1));
        assert!(!ready.contains(4) && ready.remove(4).is_none());
        // A dead key comes back in place.
        ready.insert(candidate(4));
        assert_eq!((ready.rank_of(4), ready.nth(1).seq), (Some(1), 4));
        // An append to the full block compacts it instead of starting another.
        ready.insert(candidate(n * 2));
        assert_eq!(ready.blocks.len(), 1);
        assert_eq!(ready.blocks[0].slots.len(), ready.len());
        assert_eq!(ready.nth(ready.len() - 1).seq, n * 2);
        // An insertion between keys takes the dead entry's place, in order.
        ready.remove(6);
        ready.insert(candidate(7));
        let all: Vec<u64> = ready.iter().map(|c| c.seq).collect();
        assert!(all.windows(2).all(|w| w[0] < w[1]), "{all:?}");
        assert_eq!(ready.blocks[0].slots.len(), ready.len(), "no dead left");
        assert!(ready.contains(7) && !ready.contains(6));
    }

    #[test]
    fn an_insertion_between_keys_moves_only_the_entries_up_to_the_nearest_dead_one() {
        let n = BLOCK_MAX as u64;
        let mut ready = evens(n);
        // Two dead entries, at places 10 and 100.
        ready.remove(20);
        ready.remove(200);
        let block = |ready: &Ready| ready.blocks[0].slots.iter().map(|s| s.seq).collect::<Vec<_>>();
        let before = block(&ready);
        // 31 belongs at place 16: the dead entry at 10 is nearer than the one
        // at 100, so places 11-15 move down one and 31 takes place 15.
        ready.insert(candidate(31));
        let after = block(&ready);
        assert_eq!(after.len(), BLOCK_MAX, "no room was added");
        assert_eq!(&after[10..16], &[22, 24, 26, 28, 30, 31]);
        assert_eq!(&after[16..], &before[16..], "nothing above moved");
        assert_eq!(&after[..10], &before[..10], "nothing below moved");
        assert_eq!(ready.rank_of(31), Some(15));
        // 151 belongs at place 76: the only dead entry left is above it, so
        // places 76-99 move up one onto place 100, whose key (200) is gone.
        let before = after;
        ready.insert(candidate(151));
        let after = block(&ready);
        assert_eq!(after.len(), BLOCK_MAX);
        assert_eq!(&after[75..78], &[150, 151, 152]);
        assert_eq!(&after[99..102], &[196, 198, 202]);
        assert_eq!((&after[..76], &after[101..]), (&before[..76], &before[101..]));
        assert_eq!(ready.blocks[0].count, BLOCK_MAX, "every entry is live");
        let all: Vec<u64> = ready.iter().map(|c| c.seq).collect();
        let mut sorted = all.clone();
        sorted.sort_unstable();
        assert_eq!(all, sorted);
        assert_eq!(
            (ready.len(), ready.nth(15).seq, ready.nth(76).seq),
            (BLOCK_MAX, 31, 151)
        );
        assert!(!ready.contains(20) && !ready.contains(200));
        // With no dead entry left, an insertion splits the full block.
        ready.insert(candidate(153));
        assert_eq!(ready.blocks.len(), 2);
        assert_eq!(ready.rank_of(153), Some(78));
    }

    #[test]
    fn appends_fill_blocks_and_ranks_hold_across_many_blocks() {
        let n = BLOCK_MAX as u64 * 10 + 3;
        let mut ready = evens(n);
        ready.insert(candidate(2 * 700 + 1));
        assert_eq!(ready.rank_of(2 * 700 + 1), Some(701));
        assert_eq!(ready.nth(701).seq, 1_401);
        assert_eq!(ready.nth(ready.len() - 1).seq, (n - 1) * 2);
    }
}
