//! SPEC §4.1 and §7 on the command line: `run FILE --log PATH --resume` continues
//! an unfinished run from its log; a damaged log, or one of another scenario or
//! seed, or of a newer `version`, is an error naming the line, exit 2, and the
//! file is left byte for byte as it was (the SHA-256 before and after); a torn
//! last line is dropped and reported.

use crate::durable_support;

use std::path::Path;
use std::process::{Command, Output};

use durable_support::{Scratch, file_hash, lines, scenario, write_lines};
use serde_json::Value;

fn asksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(args)
        .output()
        .expect("asksim runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A whole virtual-clock log of `name` at `path`.
fn logged_run(name: &str, path: &Path) {
    let out = asksim(&["run", &scenario(name), "--log", &path.display().to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// `run --resume` of `name` (with `extra` arguments) on the log at `path` exits
/// 2 naming `line` with `message`, and leaves the file as it was.
fn assert_refused(name: &str, extra: &[&str], path: &Path, line: usize, message: &str) {
    let before = file_hash(path);
    let (file, log) = (scenario(name), path.display().to_string());
    let mut args = vec!["run", &file, "--log", &log, "--resume"];
    args.extend_from_slice(extra);
    let out = asksim(&args);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains(&format!("{log}:{line}: ")), "{text}");
    assert!(text.contains(message), "{text}");
    assert!(
        out.stdout.is_empty(),
        "no report for a log that cannot be resumed"
    );
    assert_eq!(file_hash(path), before, "the file is left exactly as it was");
}

#[test]
fn resume_refuses_a_damaged_line_naming_it() {
    let scratch = Scratch::new("cli-damaged");
    let path = scratch.path("log.jsonl");
    logged_run("pending-late-answer.json", &path);
    let mut all = lines(&path);
    all[3] = all[3].replacen("\"event\":\"offer\"", "\"event\":\"offe", 1);
    write_lines(&path, &all);
    assert_refused("pending-late-answer.json", &[], &path, 4, "bad event");
}

#[test]
fn resume_refuses_a_log_of_another_scenario_seed_or_version() {
    let scratch = Scratch::new("cli-another");
    let path = scratch.path("log.jsonl");
    logged_run("pending-late-answer.json", &path);
    assert_refused(
        "quickstart.json",
        &[],
        &path,
        1,
        "a log of scenario \"pending-late-answer\", not of \"quickstart\"",
    );
    assert_refused(
        "pending-late-answer.json",
        &["--seed", "99"],
        &path,
        1,
        "a log of seed 0, not of seed 99",
    );
    let mut all = lines(&path);
    all[0] = all[0].replacen("\"version\":1", "\"version\":7", 1);
    write_lines(&path, &all);
    assert_refused(
        "pending-late-answer.json",
        &[],
        &path,
        1,
        "written by a newer asksim",
    );
}

#[test]
fn resume_needs_a_log_and_a_readable_policy() {
    for args in [
        vec!["run", "scenarios/quickstart.json", "--resume"],
        vec![
            "run",
            "scenarios/quickstart.json",
            "--log",
            "x.jsonl",
            "--sync",
            "sometimes",
        ],
        vec![
            "run",
            "scenarios/quickstart.json",
            "--log",
            "x.jsonl",
            "--resume",
            "--check-determinism",
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

/// The run's JSON summary.
fn summary(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(out)))
}

/// A virtual-clock run cut short (its log cut after the line of `seq` 60, the
/// next one torn) resumes from its log: the torn line is dropped and reported,
/// the run passes, and two resumes of the same cut log are byte-identical.
#[test]
fn a_virtual_run_resumes_from_its_cut_log_deterministically() {
    let scratch = Scratch::new("cli-virtual");
    let whole = scratch.path("whole.jsonl");
    logged_run("durable-crash-timed.json", &whole);
    let all = lines(&whole);
    let mut cut = all[..61].join("\n").into_bytes();
    cut.push(b'\n');
    cut.extend_from_slice(&all[61].as_bytes()[..all[61].len() / 2]);
    let mut hashes = Vec::new();
    for copy in ["a.jsonl", "b.jsonl"] {
        let path = scratch.path(copy);
        std::fs::write(&path, &cut).unwrap();
        let log = path.display().to_string();
        let file = scenario("durable-crash-timed.json");
        let out = asksim(&["run", &file, "--log", &log, "--resume", "--json"]);
        let text = stderr(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            text.contains(&format!("{log}:62: dropped a torn last line")),
            "{text}"
        );
        let report = summary(&out);
        assert_eq!(report["invariants"]["violations"], serde_json::json!([]));
        assert_eq!(
            report["trace_hash"].as_str().unwrap(),
            file_hash(&path),
            "the trace hash is the file's"
        );
        let resumed = lines(&path);
        assert_eq!(resumed[..61], all[..61], "the whole lines are kept");
        assert!(
            resumed[61].contains("\"event\":\"process_loss\""),
            "{}",
            resumed[61]
        );
        assert!(resumed[62].contains("\"recovered\":true"), "{}", resumed[62]);
        assert!(resumed[62].contains("\"torn_line\":62"), "{}", resumed[62]);
        hashes.push(file_hash(&path));
        let replay = asksim(&["replay", &log]);
        assert_eq!(
            replay.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&replay.stdout)
        );
    }
    assert_eq!(hashes[0], hashes[1], "a resumed virtual run is deterministic");
}

#[test]
fn resume_refuses_a_log_whose_run_ended() {
    let scratch = Scratch::new("cli-ended");
    let path = scratch.path("log.jsonl");
    logged_run("pending-late-answer.json", &path);
    let last = lines(&path).len();
    assert_refused(
        "pending-late-answer.json",
        &[],
        &path,
        last,
        "the run this log holds ended (`end`: done): nothing to resume",
    );
}

/// A new run never writes over the log of a run that did not end: that log is
/// the only record of the run's open questions, which `--resume` continues
/// (SPEC §4.1). Before, `run --log PATH` truncated it and exited 0. A
/// finished run's log, a file that is no log and a missing one are written
/// as before.
#[test]
fn a_new_run_refuses_to_write_over_an_unfinished_runs_log() {
    let scratch = Scratch::new("cli-overwrite");
    let name = "durable-crash-timed.json";
    let file = scenario(name);
    let path = scratch.path("log.jsonl");
    let log = path.display().to_string();
    logged_run(name, &path);
    logged_run(name, &path); // a finished run's log: written over
    let all = lines(&path);
    let mut torn = all[..61].join("\n").into_bytes();
    torn.push(b'\n');
    torn.extend_from_slice(&all[61].as_bytes()[..all[61].len() / 2]);
    let mut cut = all[..61].join("\n").into_bytes();
    cut.push(b'\n');
    for unfinished in [torn, cut] {
        std::fs::write(&path, &unfinished).unwrap();
        let before = file_hash(&path);
        let out = asksim(&["run", &file, "--log", &log]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!(
                "--log {log}: it holds the log of a run that did not end"
            )),
            "{}",
            stderr(&out)
        );
        assert_eq!(file_hash(&path), before, "the log is left as it was");
        // Under another seed `--resume` would be refused too (the log is not
        // this run's): it says whose the log is and offers another --log.
        let other = asksim(&["run", &file, "--seed", "5", "--log", &log]);
        assert_eq!(other.status.code(), Some(2), "{}", stderr(&other));
        assert!(
            stderr(&other).trim_end().ends_with(
                r#"under seed 20, not "durable-crash-timed"'s under seed 5: give this run another --log, or remove the file"#
            ),
            "{}",
            stderr(&other)
        );
        assert_eq!(file_hash(&path), before, "the log is left as it was");
        let resumed = asksim(&["run", &file, "--log", &log, "--resume"]);
        assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    }
    std::fs::write(&path, "not a log\n").unwrap();
    logged_run(name, &path);
    assert!(
        lines(&path)[0].contains("asksim-log"),
        "a file that is no log is written over"
    );
}
