//! Cache hints: asking the processor for memory a moment before it is read.
//!
//! The one `unsafe` for speed in the simulator (issue #19): at a tree of 10^5
//! agents `random` delivers to agents in random order, and each delivery's
//! look-ups (the queue's entry, then the agent's slot, then its script) were
//! cache misses one after the other. Asking for the agent's slot when its entry
//! is picked lets the two first overlap: the trees' runs at 10^5 took 6-10%
//! less (criterion `scaling`, BENCHMARKS.md), the runs at 10^3 the same. A
//! plain read of the slot started as early (safe code) did not do it: the
//! cancel of a tree stayed at the old figure, as a load that misses holds up
//! what follows it where a prefetch does not.

/// Asks for every cache line of `value` to be brought into the cache, without
/// waiting: a hint that never reads `value` and never faults.
#[inline]
pub fn lines<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let start = std::ptr::from_ref(value).cast::<i8>();
        for offset in (0..size_of::<T>()).step_by(64) {
            // SAFETY: `prefetcht0` is a hint: it reads nothing into the program,
            // never faults, and takes any address; SSE, which it needs, is in
            // every x86_64 processor's baseline.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
