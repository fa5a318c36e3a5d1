//! Cache hints: asking the processor for memory a moment before it is read.
//!
//! The `unsafe` for speed in the simulator (issue #19): at a tree of 10^5
//! agents `random` delivers to agents in random order, and each delivery's
//! look-ups (the queue's entry, then the agent's slot, then its script) were
//! cache misses one after the other. Asking for the agent's slot when its entry
//! is picked lets the two first overlap: the trees' runs at 10^5 took 6-10%
//! less (criterion `scaling`, BENCHMARKS.md), the runs at 10^3 the same. A
//! plain read of the slot started as early (safe code) did not do it: the
//! cancel of a tree stayed at the old figure, as a load that misses holds up
//! what follows it where a prefetch does not. Stable Rust has no safe hint
//! (`core::intrinsics::prefetch_read_data` is unstable), so every function
//! here comes down to the one instruction, `prefetcht0` ([`line_at`]), which
//! reads nothing and never faults. The same hint asks for an agent's timer with its slot, and for the
//! line an append to a long vector is about to write ([`line_at`]: a store
//! that misses holds up every store behind it).

/// Asks for every cache line of `value` to be brought into the cache, without
/// waiting: a hint that never reads `value` and never faults.
#[inline]
pub fn lines<T>(value: &T) {
    lines_at(std::ptr::from_ref(value));
}

/// Asks for every cache line a `T` at `ptr` would span: a hint, so `ptr` may
/// point anywhere (a value that may have moved or gone since its address was
/// noted).
#[inline]
pub fn lines_at<T>(ptr: *const T) {
    let start = ptr.cast::<u8>();
    for offset in line_offsets(start.addr(), size_of::<T>()) {
        line_at(start.wrapping_add(offset));
    }
}

/// Asks for the cache line at `ptr` to be brought into the cache, without
/// waiting: a hint that reads nothing and never faults, so `ptr` may point
/// anywhere (past the end of a vector's room, say).
#[inline]
pub fn line_at<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: `prefetcht0` is a hint: it reads nothing into the program,
        // never faults, and takes any address; SSE, which it needs, is in
        // every x86_64 processor's baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(ptr.cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// A cache line's size on x86_64.
const LINE: usize = 64;

/// Offsets from `addr` that fall in each cache line of the `size` bytes there:
/// one a line, from the line `addr` is in to the line of its last byte. Steps
/// of a line from `addr` itself miss the last line of a value whose size is a
/// multiple of a line and that does not start one (192 bytes from 8 bytes
/// into a line span four lines; three steps reach three).
fn line_offsets(addr: usize, size: usize) -> impl Iterator<Item = usize> {
    let lines = match size {
        0 => 0,
        _ => (addr + size - 1) / LINE - addr / LINE + 1,
    };
    (0..lines).map(move |line| (line * LINE).saturating_sub(addr % LINE))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines each offset falls in, from `addr`.
    fn lines(addr: usize, size: usize) -> Vec<usize> {
        line_offsets(addr, size)
            .map(|offset| (addr + offset) / LINE)
            .collect()
    }

    #[test]
    fn a_hint_at_any_address_never_faults() {
        let room: Vec<u64> = Vec::with_capacity(4);
        line_at(room.as_ptr().wrapping_add(1 << 20)); // far past its room
        line_at(std::ptr::null::<u64>());
        line_at(usize::MAX as *const u8);
    }

    #[test]
    fn every_line_a_value_spans_is_asked_for_once() {
        // 200 bytes from a line's start, or from 56 bytes in: four lines.
        assert_eq!(lines(640, 200), [10, 11, 12, 13]);
        assert_eq!(lines(640 + 56, 200), [10, 11, 12, 13]);
        // 192 bytes: three lines from a line's start, four from 8 bytes in.
        assert_eq!(lines(640, 192), [10, 11, 12]);
        assert_eq!(lines(640 + 8, 192), [10, 11, 12, 13]);
        assert_eq!(lines(640 + 63, 2), [10, 11]);
        assert_eq!(lines(640 + 8, 8), [10]);
        assert_eq!(lines(640, 0), Vec::<usize>::new());
        // The first offset is the value's own start, inside its first line.
        assert_eq!(line_offsets(640 + 56, 200).next(), Some(0));
    }
}
