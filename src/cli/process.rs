//! How the `asksim` binary sets up its process before any work: mimalloc's purge
//! delay and no transparent huge pages. Public so that a bench of the simulator
//! (`benches/simulator.rs`) runs as the binary does; the binary's allocator
//! itself is declared in each program (`#[global_allocator]`).

/// mimalloc's `mi_option_purge_delay` in its 2.x line (`mimalloc.h`; the crate
/// names only the stable options).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long (ms) memory freed in whole pages stays mapped before mimalloc hands
/// it back to the system, in a process that runs many runs (a sweep, a hunt, a
/// bench): a second. Its default, 10 ms, gave a run's pages back between one
/// run and the next only to fault them in again (zeroed) moments later.
const PURGE_DELAY_MS: std::ffi::c_long = 1000;

/// The same for a process that runs one run (`asksim run`): none. What a run
/// frees it does not need again soon, and a second's delay held what it freed
/// in its last second resident at its peak: a tie of 10^5 roots asking twice
/// peaked at 2.24-2.26 KB a call above 64 MiB with it, 1.98 KB without (SPEC
/// §8: 2 KB), `load-mixed-30k` at 96-98 MB against 88, and no run was
/// measurably slower (BENCHMARKS.md, issue #19, sixteenth session). Many small
/// runs in one process do pay for it: 100 runs of a tree of 10^3 took 13-20%
/// longer, all of it the kernel clearing pages again.
const ONE_RUN_PURGE_DELAY_MS: std::ffi::c_long = 0;

/// Sets the process up as the binary runs: call first thing in `main`, in a
/// program whose global allocator is mimalloc (the option is mimalloc's; with
/// another allocator it is set and never read).
pub fn tune() {
    purge_delay(PURGE_DELAY_MS);
    no_huge_pages();
}

/// Sets the process up for one run: call before it, after [`tune`].
pub fn tune_for_one_run() {
    purge_delay(ONE_RUN_PURGE_DELAY_MS);
}

fn purge_delay(ms: std::ffi::c_long) {
    // SAFETY: `mi_option_set` writes one of mimalloc's option words (atomically);
    // any value is valid for this option, and it is read only when memory is
    // purged, so setting it at any time, before or after allocations, is sound.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ms) };
}

/// Turns transparent huge pages off for this process. mimalloc asks for them
/// on every region it commits (`madvise`), so a thread's first touch of a
/// region faults in and clears 2 MiB at once: a large run, whose journal's
/// thread has a heap of its own, held ~10 MB more resident for it (`load-10k`
/// 53 -> 63 MB) and spent a tenth of its time in the kernel clearing pages
/// (BENCHMARKS.md, issue #19, thirteenth session). The kernel reads the flag at
/// each fault, so regions mapped before `main` follow it too.
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: `prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)` takes integers only and
    // changes how the kernel backs this process's future page faults, nothing
    // in its memory; on a kernel without it, it fails with EINVAL, ignored.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}
