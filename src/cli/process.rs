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

/// The same for a process that runs one run (`asksim run`), while its peak
/// resident size is under [`HOLD_UNTIL_KIB`]: mimalloc's own default. Purging
/// at once gave a run's small pages back the moment they emptied, to fault
/// them in again (zeroed, with a TLB shootdown of the other core) moments
/// later: `load-10k` handed back 430-470 MiB in ~580 `madvise` calls at a
/// peak of 37 MB, and with this delay 60 calls and 73 MiB, 9-13% less wall
/// time (BENCHMARKS.md, issue #19, forty-sixth session).
const SMALL_RUN_PURGE_DELAY_MS: std::ffi::c_long = 10;

/// Past it, none: what a run frees it does not need again soon, and a delay
/// held what it freed in its last moments resident at its peak. A tie of 10^5
/// roots asking twice peaked at 2.24-2.26 KB a call above 64 MiB with a
/// second's delay, 1.98 KB without (SPEC §8: 2 KB; BENCHMARKS.md, issue #19,
/// sixteenth session), and the loss family at 10^5 came within 1-2 MB of its
/// 2 KB a call with 5-10 ms (forty-second and forty-fourth sessions). Many
/// small runs in one process do pay for it: 100 runs of a tree of 10^3 took
/// 13-20% longer, all of it the kernel clearing pages again.
const LARGE_RUN_PURGE_DELAY_MS: std::ffi::c_long = 0;

/// The peak resident size (KiB) at which a run's purge delay drops from
/// [`SMALL_RUN_PURGE_DELAY_MS`] to [`LARGE_RUN_PURGE_DELAY_MS`]: SPEC §8's
/// fixed allowance, 64 MiB. A run that stays under it has room for what it
/// freed in the last few milliseconds; one that passes it is measured by the
/// call, and from then on holds nothing freed (what was already waiting is
/// purged within the small delay).
const HOLD_UNTIL_KIB: i64 = 64 * 1024;

/// Sets the process up as the binary runs: call first thing in `main`, in a
/// program whose global allocator is mimalloc (the option is mimalloc's; with
/// another allocator it is set and never read).
pub fn tune() {
    purge_delay(PURGE_DELAY_MS);
    no_huge_pages();
}

/// Sets the process up for one run: call before it, after [`tune`]. Freed
/// pages wait 10 ms until the process's peak resident size passes 64 MiB, then
/// go back at once. The peak is read where memory grows: mimalloc calls its
/// "deferred free" hook on an allocating thread every 100 allocations that
/// need a fresh page or a free list of one, and the hook is let go once the
/// peak has passed (the peak never falls). Where the peak cannot be read,
/// freed pages go back at once from the start.
pub fn tune_for_one_run() {
    let delay = one_run_delay(peak_resident_kib());
    purge_delay(delay);
    if delay != LARGE_RUN_PURGE_DELAY_MS {
        // SAFETY: the hook is a function of the program's lifetime that takes no
        // argument it reads (the null `arg` is never dereferenced); mimalloc
        // stores both atomically.
        unsafe { libmimalloc_sys::mi_register_deferred_free(Some(watch_peak), std::ptr::null_mut()) };
    }
}

/// mimalloc's deferred-free hook while a run holds freed pages: once the peak
/// resident size has passed [`HOLD_UNTIL_KIB`], freed pages go back at once
/// and the hook unregisters itself. It may run on two threads at once; both
/// write the same values. It neither allocates nor unwinds (`getrusage` and
/// two atomic stores), as a hook called from inside `malloc` must not.
unsafe extern "C" fn watch_peak(
    _force: bool,
    _heartbeat: std::ffi::c_ulonglong,
    _arg: *mut std::ffi::c_void,
) {
    if one_run_delay(peak_resident_kib()) == LARGE_RUN_PURGE_DELAY_MS {
        purge_delay(LARGE_RUN_PURGE_DELAY_MS);
        // SAFETY: unregistering is an atomic store of a null hook, allowed
        // from within the hook (mimalloc has loaded it already).
        unsafe { libmimalloc_sys::mi_register_deferred_free(None, std::ptr::null_mut()) };
    }
}

/// The purge delay of a one-run process whose peak resident size is
/// `peak_kib` (none where it cannot be read).
fn one_run_delay(peak_kib: Option<i64>) -> std::ffi::c_long {
    match peak_kib {
        Some(kib) if kib < HOLD_UNTIL_KIB => SMALL_RUN_PURGE_DELAY_MS,
        _ => LARGE_RUN_PURGE_DELAY_MS,
    }
}

/// The process's peak resident size in KiB, as the kernel keeps it
/// (`getrusage`'s `ru_maxrss`, what `/usr/bin/time %M` prints).
#[cfg(target_os = "linux")]
fn peak_resident_kib() -> Option<i64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` writes one `rusage` through the pointer, which is
    // valid and as large as it; it is read only when the call succeeded.
    let usage =
        unsafe { (libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) == 0).then(|| usage.assume_init()) };
    usage.map(|usage| usage.ru_maxrss)
}

/// Elsewhere the unit of `ru_maxrss` differs: not read.
#[cfg(not(target_os = "linux"))]
fn peak_resident_kib() -> Option<i64> {
    None
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_holds_freed_pages_only_while_its_peak_is_under_the_allowance() {
        assert_eq!(one_run_delay(Some(0)), SMALL_RUN_PURGE_DELAY_MS);
        assert_eq!(one_run_delay(Some(HOLD_UNTIL_KIB - 1)), SMALL_RUN_PURGE_DELAY_MS);
        assert_eq!(one_run_delay(Some(HOLD_UNTIL_KIB)), LARGE_RUN_PURGE_DELAY_MS);
        assert_eq!(one_run_delay(Some(HOLD_UNTIL_KIB * 8)), LARGE_RUN_PURGE_DELAY_MS);
        assert_eq!(
            one_run_delay(None),
            LARGE_RUN_PURGE_DELAY_MS,
            "unread, nothing is held"
        );
        const { assert!(SMALL_RUN_PURGE_DELAY_MS > LARGE_RUN_PURGE_DELAY_MS) };
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_peak_resident_size_is_read_and_never_falls() {
        let before = peak_resident_kib().expect("getrusage works on Linux");
        assert!(before > 0, "a running process is resident");
        // Touch 16 MiB, then free it: the peak is at least what was resident.
        let touched = std::hint::black_box(vec![1u8; 16 << 20]);
        let while_held = peak_resident_kib().expect("read again");
        assert!(while_held >= (touched.len() >> 10) as i64, "{while_held} KiB");
        drop(touched);
        assert!(peak_resident_kib().expect("read again") >= while_held);
    }
}
