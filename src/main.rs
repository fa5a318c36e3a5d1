//! The `asksim` binary: all the work is in the library.

/// mimalloc instead of the system allocator: a run allocates and frees small
/// objects at a high rate (messages, events, strings), where glibc's malloc took
/// about a third of a `load-10k` run's time and held freed memory (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` in its 2.x line (`mimalloc.h`; the crate
/// names only the stable options).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long (ms) memory freed in whole pages stays mapped before mimalloc hands
/// it back to the system. Its default, 10 ms, gave memory back in the middle of a
/// run only to fault it in again (zeroed, often as 2 MiB pages) moments later: a
/// fifth of `load-mixed-30k`'s time was the kernel clearing pages. A second
/// absorbs a run's churn and still returns what an idle process holds; the peak
/// is the same (BENCHMARKS.md).
const PURGE_DELAY_MS: std::ffi::c_long = 1000;

fn main() -> std::process::ExitCode {
    // SAFETY: `mi_option_set` writes one of mimalloc's option words (atomically);
    // any value is valid for this option, and it is read only when memory is
    // purged, so setting it at any time, before or after allocations, is sound.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    asksim::cli::main()
}
