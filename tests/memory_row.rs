//! SPEC §8's memory row (issue #19: a run's peak resident memory at most 2,000
//! bytes a call plus 64 MiB), kept by a test and not only by a benchmark: the
//! `asksim` binary runs each scaling family at 10^5, and the kernel's count of
//! its peak resident set (`wait4`'s `ru_maxrss`, what `/usr/bin/time %M`
//! reports) is held to the row. A family whose calls are few (a tree's) counts
//! its agents instead.
//!
//! Why a test: 52f8290 took a run whose instants are one delivery long off the
//! one place the queue gave a burst's room back, and the loss family's peak
//! rose past the row (2,024 B a call) for a session before a measurement by
//! hand found it. The heap the program asks for did not move (a counting
//! allocator saw the same peak, 2,260 B a root, either way): what grew was the
//! allocator's pages held at the peak, which only the resident set shows.
//!
//! The waterfall of 64 is left out (19 s at 10^5; its peak is the waterfall of
//! 8's); a run's peak varies by well under 1 MB from run to run (the journal's
//! queue is bounded). Linux only: `ru_maxrss` in kilobytes is Linux's.

#![cfg(all(target_os = "linux", feature = "cli"))]

#[path = "../benches/families/mod.rs"]
mod families;

use std::io::Read;
use std::process::{Command, Stdio};

use families::Family;
use serde_json::Value;

/// SPEC §8: bytes a call above the allowance.
const BYTES_A_CALL: u64 = 2_000;
/// SPEC §8: the allowance.
const ALLOWANCE: u64 = 64 << 20;

/// Runs `asksim run FILE --json` and gives its report and its peak resident
/// set in bytes.
#[allow(clippy::zombie_processes)] // reaped by `wait4`, which gives its usage too
fn run_measured(file: &std::path::Path) -> (Value, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(["run", file.to_str().expect("a UTF-8 path"), "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("asksim starts");
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("its stdout")
        .read_to_string(&mut out)
        .expect("its report");
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `wait4` reaps our own child `pid` (not waited for by anyone else:
    // `child` is dropped without a wait) and writes into the two locals it is
    // given, which live for the call.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{} did not pass: status {status}",
        file.display()
    );
    let report: Value = serde_json::from_str(&out).expect("a JSON report");
    let peak = u64::try_from(usage.ru_maxrss).expect("a size") * 1024;
    (report, peak)
}

#[test]
fn every_family_at_100000_peaks_under_2000_bytes_a_call_above_64_mib() {
    let n = 100_000;
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut over = Vec::new();
    for family in Family::ALL {
        if family == Family::Waterfall(64) {
            continue;
        }
        let file = dir.path().join(format!("{}.json", family.name()));
        std::fs::write(&file, family.scenario(n)).expect("a scenario file");
        let (report, peak) = run_measured(&file);
        let calls = report["calls"].as_u64().expect("calls");
        let units = calls.max(n as u64);
        let a_unit = peak.saturating_sub(ALLOWANCE) / units;
        eprintln!(
            "{}: {units} units, peak {} KB, {a_unit} B a unit",
            family.name(),
            peak / 1024
        );
        if a_unit > BYTES_A_CALL {
            over.push(format!("{}: {a_unit} B a unit", family.name()));
        }
    }
    assert!(over.is_empty(), "over SPEC §8's memory row: {over:?}");
}
