//! Bad input to `asksim run` and `asksim validate` (SPEC §5, §6): exit code 2, one
//! message on stderr naming the file (with `line:column` where a position exists),
//! nothing on stdout, never a panic. The bad files live in a temp dir of the test's
//! own, never in `scenarios/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

/// Writes `bytes` to the file `name` in `dir`; its path.
fn write(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("written");
    path
}

fn asksim(args: &[&str], file: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(args)
        .arg(file)
        .output()
        .expect("asksim runs")
}

/// `asksim args…`, run from the test's own directory.
fn asksim_args(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(args)
        .output()
        .expect("asksim runs")
}

/// The repository's quickstart scenario, as a path argument.
fn quickstart() -> String {
    (Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.json"))
        .display()
        .to_string()
}

/// Runs `run` and `validate` on `file`; both must refuse it as bad input with a
/// message that starts with the file's name and, when `position` is given, goes on
/// with that `line:column`, and contains every `needles` string.
fn assert_bad_input(file: &Path, position: Option<(u64, u64)>, needles: &[&str]) {
    let shown = file.display().to_string();
    for args in [&["run"][..], &["validate"][..], &["run", "--json"][..]] {
        let out = asksim(args, file);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let what = format!(
            "asksim {} {shown}: stdout {stdout:?}, stderr {stderr:?}",
            args.join(" ")
        );
        assert_eq!(out.status.code(), Some(2), "{what}");
        assert!(out.stdout.is_empty(), "{what}");
        assert!(!stderr.contains("panicked"), "{what}");
        assert!(stderr.starts_with(&format!("{shown}:")), "{what}");
        if let Some((line, column)) = position {
            assert!(
                stderr.starts_with(&format!("{shown}:{line}:{column}: ")),
                "{what}"
            );
        }
        for needle in needles {
            assert!(stderr.contains(needle), "no {needle:?}: {what}");
        }
        assert_eq!(stderr.trim_end().lines().count(), 1, "one message: {what}");
    }
}

#[test]
fn a_missing_file() {
    let dir = tempfile::tempdir().expect("a temp dir");
    assert_bad_input(&dir.path().join("no-such-scenario.json"), None, &["cannot read"]);
}

#[test]
fn a_directory() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let sub = dir.path().join("a-directory.json");
    std::fs::create_dir_all(&sub).expect("a dir");
    assert_bad_input(&sub, None, &["directory"]);
    // A log or a shard file that is a directory is said the same way, not in
    // the system's words ("Is a directory (os error 21)").
    let shown = sub.display().to_string();
    for (args, said) in [
        (
            vec!["replay", &shown],
            format!("{shown}: cannot read: is a directory"),
        ),
        (
            vec!["merge", &shown],
            format!("asksim merge: {shown}: cannot read it: is a directory"),
        ),
    ] {
        let out = asksim_args(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end(), said, "{args:?}");
    }
}

#[test]
fn not_json() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = write(&dir, "not-json.json", b"not json at all\n");
    assert_bad_input(&file, Some((1, 2)), &["JSON"]);
}

#[test]
fn not_utf8() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = write(&dir, "binary.json", b"{\"name\": \"\xff\xfe\"}\n");
    assert_bad_input(&file, None, &[]);
}

#[test]
fn an_empty_file() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = write(&dir, "empty.json", b"");
    assert_bad_input(&file, None, &[]);
}

#[test]
fn a_truncated_file() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = write(&dir, "truncated.json", b"{\"name\": \"x\",\n \"agents\": [");
    assert_bad_input(&file, Some((2, 12)), &["EOF"]);
}

#[test]
fn an_unknown_key() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = write(
        &dir,
        "unknown-key.json",
        b"{\n  \"name\": \"x\",\n  \"bogus\": 1\n}\n",
    );
    assert_bad_input(&file, Some((3, 9)), &["bogus"]);
    let nested = write(
        &dir,
        "unknown-nested.json",
        b"{\n  \"name\": \"x\",\n  \"broker\": { \"offer_timeout\": 1.0, \"offer_timout\": 2.0 }\n}\n",
    );
    assert_bad_input(&nested, None, &["offer_timout"]);
}

#[test]
fn a_wrong_type() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = write(
        &dir,
        "wrong-type.json",
        b"{\n  \"name\": \"x\",\n  \"seed\": \"one\"\n}\n",
    );
    assert_bad_input(&file, Some((3, 15)), &["seed"]);
    let step = write(
        &dir,
        "wrong-step.json",
        b"{\n  \"name\": \"x\",\n  \"agents\": [ { \"name\": \"root\", \"script\": [ { \"work\": \"long\" } ] } ]\n}\n",
    );
    assert_bad_input(&step, None, &["work"]);
}

#[test]
fn a_dangling_reference() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = write(
        &dir,
        "dangling.json",
        b"{\n  \"name\": \"x\",\n  \"agents\": [ { \"name\": \"root\", \"script\": [ { \"join\": \"ghost\" } ] } ]\n}\n",
    );
    assert_bad_input(&file, Some((3, 55)), &["join", "ghost"]);
}

#[test]
fn a_huge_count() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = write(
        &dir,
        "huge-count.json",
        b"{\n  \"name\": \"x\",\n  \"agents\": [ { \"name\": \"r{i}\", \"count\": 1000000000000, \"script\": [] } ]\n}\n",
    );
    assert_bad_input(&file, Some((3, 42)), &["count", "1000000000000"]);
}

#[test]
fn a_negative_latency() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = write(
        &dir,
        "negative-latency.json",
        b"{\n  \"name\": \"x\",\n  \"answerers\": [ { \"name\": \"w\", \"accepts\": \"all\", \"latency\": { \"fixed\": -1.0 }, \"answer\": \"skip\" } ]\n}\n",
    );
    assert_bad_input(&file, Some((3, 73)), &["latency", "-1"]);
}

#[test]
fn validate_reports_the_bad_file_among_good_ones() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let good = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.json");
    let bad = write(&dir, "bad.json", b"{\n  \"name\": \"x\",\n  \"bogus\": 1\n}\n");
    let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .arg("validate")
        .arg(&good)
        .arg(&bad)
        .output()
        .expect("asksim runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.starts_with(&format!("{}:3:9: ", bad.display())),
        "{stderr}"
    );
    assert!(!stderr.contains("quickstart"), "{stderr}");
    let ok = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .arg("validate")
        .arg(&good)
        .output()
        .expect("asksim runs");
    assert_eq!(ok.status.code(), Some(0));
    assert!(ok.stdout.is_empty() && ok.stderr.is_empty());
}

/// Regression (issue #22): serde's Rust type names reached the user
/// (`expected unit`, `expected u64`, `expected f64`, `expected usize`, `unit
/// variant, expected newtype variant`). Each message says what the field takes.
#[test]
fn messages_say_what_a_field_takes_not_rust_type_names() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let answerer = |fields: &str| {
        format!(
            "{{\"name\": \"x\", \"answerers\": [ {{ \"name\": \"w\", {fields} }} ],\n \"agents\": [ {{ \"name\": \"root\", \"script\": [] }} ] }}"
        )
    };
    let forms = r#""answer" is "recommended", "skip", {"option": i}, {"options": [i, j]}, {"custom": "text"} or {"batch": [items]}"#;
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            answerer(r#""accepts": "all", "latency": 1, "answer": {"recommended": 1}"#),
            vec![
                r#""recommended" takes no value: write "answer": "recommended""#,
                forms,
            ],
        ),
        (
            answerer(r#""accepts": "all", "latency": 1, "answer": "option""#),
            vec!["answer: this form takes a value", forms],
        ),
        (
            answerer(r#""accepts": "all", "latency": 1, "answer": 3"#),
            vec!["answerers[0].answer: not one of its forms", forms],
        ),
        (
            answerer(r#""accepts": "all", "latency": 1, "answer": {"option": -1}"#),
            vec!["expected an option index, a whole number from 0"],
        ),
        (
            answerer(r#""accepts": "all", "latency": {"fixed": "x"}, "answer": "skip""#),
            vec!["latency.fixed: invalid type: string \"x\", expected a number of seconds"],
        ),
        (
            answerer(r#""accepts": "all", "latency": 1, "answer": "skip", "count": 1.5"#),
            vec!["count: invalid type: floating point `1.5`, expected a whole number, 1 or more"],
        ),
        (
            answerer(r#""accepts": {"agents": "r*"}, "latency": 1, "answer": "skip""#),
            vec![
                "expected a list",
                r#""accepts" is "all", "keyed", "legacy", "none" or {"agents": ["glob*"]}"#,
            ],
        ),
        (
            r#"{"name": "x", "agents": [ { "name": "root", "script": [ "work" ] } ] }"#.to_owned(),
            vec!["agents[0].script[0]: this form takes a value", r#"{"work": s}"#],
        ),
    ];
    for (k, (text, needles)) in cases.iter().enumerate() {
        let file = write(&dir, &format!("plain-{k}.json"), text.as_bytes());
        assert_bad_input(&file, None, needles);
        let stderr = String::from_utf8_lossy(&asksim(&["validate"], &file).stderr).into_owned();
        for jargon in [
            "expected unit",
            "expected u64",
            "expected f64",
            "expected usize",
            "newtype",
            "sequence",
        ] {
            assert!(!stderr.contains(jargon), "{jargon:?} in {stderr}");
        }
    }
}

/// Regression (issue #22): `asksim run log.jsonl` and `asksim replay
/// scenario.json` said `unknown field `format`` and `bad header: EOF while
/// parsing`. Each names the mix-up and the command that reads the file.
#[test]
fn a_log_given_to_run_and_a_scenario_given_to_replay_are_named() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.json");
    let log = dir.path().join("quickstart.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args([
            "run",
            &scenario.display().to_string(),
            "--log",
            &log.display().to_string(),
        ])
        .output()
        .expect("asksim runs");
    assert_eq!(out.status.code(), Some(0));
    assert_bad_input(
        &log,
        None,
        &[
            "this is an asksim log (JSON Lines), not a scenario file",
            "asksim replay FILE",
        ],
    );
    let replayed = asksim(&["replay"], &scenario);
    let stderr = String::from_utf8_lossy(&replayed.stderr);
    assert_eq!(replayed.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("quickstart.json:1: this is a scenario file, not a log: `asksim run FILE` runs it"),
        "{stderr}"
    );
}

/// Regression (issue #22): `cancel_call` of `root/7` when root makes one call
/// validated and passed silently. Where the scenario shows the call can never
/// exist it is a bad reference; where it could, the run goes on and its timeline
/// says the cancel matched nothing.
#[test]
fn a_cancel_call_of_a_call_that_cannot_exist_is_a_bad_reference() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let scenario = |call: &str, loss: bool| {
        let loss = if loss {
            r#", { "at": 3.0, "process_loss": { "restart_after": 1 } }"#
        } else {
            ""
        };
        format!(
            r#"{{ "name": "x", "tool": {{ "mode": "timed", "timeout": 30 }},
  "answerers": [ {{ "name": "web", "accepts": "all", "latency": 2.0, "answer": "recommended" }} ],
  "agents": [ {{ "name": "root", "script": [ {{ "ask": {{ "questions": [ {{ "id": "go", "question": "Go?", "header": "Go",
      "options": [ {{ "label": "Yes" }}, {{ "label": "No" }} ] }} ] }} }} ],
    "on_resume": [ {{ "ask_unresolved": {{}} }} ] }} ],
  "events": [ {{ "at": 1.0, "cancel_call": "{call}" }}{loss} ] }}"#
        )
    };
    let never = write(&dir, "never.json", scenario("root/7", false).as_bytes());
    assert_bad_input(
        &never,
        None,
        &[r#"events[0].cancel_call: "root/7" can never exist: root makes at most 1 tool calls in this run"#],
    );
    let twice = write(&dir, "twice.json", scenario("root/2", false).as_bytes());
    assert_bad_input(&twice, None, &["no process_loss reruns its on_resume"]);
    // With a process loss, on_resume may make a second call: root/2 can exist.
    let maybe = write(&dir, "maybe.json", scenario("root/2", true).as_bytes());
    let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(["run", &maybe.display().to_string(), "--timeline"])
        .output()
        .expect("asksim runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("cancel_call root/2: matched nothing (no open call has that callId)"),
        "{stdout}"
    );
}

/// A command whose output is one of its inputs, or whose two outputs are one
/// file, is bad input (exit 2) and writes nothing: before, `run x.json --log
/// x.json` overwrote the scenario it had read, `replay q.jsonl --snapshot
/// q.jsonl` the log, `sweep … --out` and `shrink -o` the scenario, and `--log`
/// and `--chrome-trace` on one path left only the trace.
#[test]
fn an_output_that_is_an_input_or_another_output_is_refused() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let quickstart =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.json")).unwrap();
    let scenario = write(&dir, "x.json", &quickstart);
    let log = dir.path().join("x.jsonl");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_asksim"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    assert_eq!(run(&["run", "x.json", "--log", "x.jsonl"]).status.code(), Some(0));
    let log_bytes = std::fs::read(&log).unwrap();
    for (args, says) in [
        (
            vec!["run", "x.json", "--log", "./x.json"],
            "--log ./x.json is the same file as FILE",
        ),
        (
            vec!["run", "x.json", "--log", "t", "--chrome-trace", "t"],
            "--chrome-trace t is the same file as --log",
        ),
        (
            vec!["replay", "x.jsonl", "--snapshot", "x.jsonl"],
            "--snapshot x.jsonl is the same file as LOG",
        ),
        (
            vec![
                "sweep", "x.json", "--seeds", "0..2", "--shard", "0/1", "--out", "x.json",
            ],
            "--out x.json is the same file as FILE",
        ),
        (
            vec!["shrink", "x.json", "-o", "x.json"],
            "-o x.json is the same file as FILE",
        ),
    ] {
        let out = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!dir.path().join("t").exists(), "{args:?} wrote nothing");
    }
    assert_eq!(
        std::fs::read(&scenario).unwrap(),
        quickstart,
        "the scenario is intact"
    );
    assert_eq!(std::fs::read(&log).unwrap(), log_bytes, "the log is intact");
}

/// A log that is a device (`/dev/zero` never ends) is refused, not read until
/// the memory runs out (before: 5 GB resident in 4 s, then killed), and not
/// written either.
#[cfg(target_os = "linux")]
#[test]
fn a_log_that_is_a_device_is_refused_not_read_nor_written() {
    let quickstart = quickstart();
    for args in [
        vec!["replay", "/dev/zero"],
        vec!["run", &quickstart, "--log", "/dev/zero", "--resume"],
    ] {
        let out = asksim_args(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("/dev/zero: cannot read: a device, not a file"),
            "{args:?}: {stderr}"
        );
    }
    // Nor is one written: /dev/null would keep nothing to --resume from (and
    // syncing its directory failed with "Invalid argument").
    let out = asksim_args(&["run", &quickstart, "--log", "/dev/null"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "asksim: cannot write the log to /dev/null: a device, not a file"
    );
}

/// `--sync` says how durable `--log`'s lines are: without `--log` it is bad
/// input (exit 2), not silently ignored.
#[test]
fn sync_without_a_log_is_refused() {
    let out = asksim_args(&["run", &quickstart(), "--sync", "every"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--log <PATH>"), "{stderr}");
}

/// `sweep --jobs` takes 1 to `JOBS_MAX` worker threads: 0 or more was clamped
/// without a word (0 ran one thread, where a user may have meant "all cores").
#[test]
fn sweep_jobs_out_of_range_is_refused() {
    let max = asksim::sim::hunt::sweep::JOBS_MAX.to_string();
    let over = (asksim::sim::hunt::sweep::JOBS_MAX + 1).to_string();
    for jobs in ["0", over.as_str()] {
        let out = asksim_args(&["sweep", &quickstart(), "--seeds", "0..2", "--jobs", jobs]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--jobs {jobs}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "invalid value '{jobs}' for '--jobs <JOBS>': {jobs} is not in 1..={max}"
            )),
            "{stderr}"
        );
    }
    let out = asksim_args(&["sweep", &quickstart(), "--seeds", "0..2", "--jobs", &max]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What only a virtual-clock run has is refused on the real clock, whether the
/// clock is real by `--clock real` or by the file's `"clock": "real"`: one line
/// saying how to leave the real clock, exit 2, before anything runs (no log, no
/// shard file). Before, a real-clock `--check-determinism` ran twice and always
/// failed on the times (`NOT DETERMINISTIC first difference at seq 1`), and
/// `--explore` was silently swapped for `fifo` (a sweep's header named the
/// strategy asked for, its reproduce commands `--explore fifo`).
#[test]
fn virtual_clock_flags_on_the_real_clock_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().expect("a temp dir");
    // Nothing to do: were either run, it would end at once.
    write(&dir, "idle.json", br#"{"name":"idle"}"#);
    write(&dir, "real.json", br#"{"name":"real","clock":"real"}"#);
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_asksim"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let determinism = "asksim run: --check-determinism checks a virtual-clock run (a real-clock run's times and order differ from run to run); ";
    let explore =
        "--explore picks the delivery order of a virtual-clock run (on the real clock tokio picks it); ";
    let (flag, file) = (
        "drop --clock real",
        r#"add --clock virtual (the scenario's "clock" is "real")"#,
    );
    // Each writes out.jsonl (a log, a shard's file) if it runs.
    let cases = [
        (
            "run idle.json --clock real --check-determinism --log out.jsonl",
            format!("{determinism}{flag}"),
        ),
        (
            "run real.json --check-determinism --log out.jsonl",
            format!("{determinism}{file}"),
        ),
        (
            "run idle.json --clock real --explore pct:3 --log out.jsonl",
            format!("asksim run: {explore}{flag}"),
        ),
        (
            "run real.json --explore fifo --log out.jsonl",
            format!("asksim run: {explore}{file}"),
        ),
        (
            "sweep idle.json --seeds 0..2 --clock real --explore pct:5 --shard 0/1 --out out.jsonl",
            format!("asksim sweep: {explore}{flag}"),
        ),
        (
            "sweep real.json --seeds 0..2 --explore random --shard 0/1 --out out.jsonl",
            format!("asksim sweep: {explore}{file}"),
        ),
        (
            "run real.json --schedule 0 --log out.jsonl",
            format!("asksim run: --schedule replays a virtual-clock run; {file}"),
        ),
    ];
    for (args, says) in cases {
        let args: Vec<&str> = args.split(' ').collect();
        let out = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end(), says, "{args:?}: one line");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!dir.path().join("out.jsonl").exists(), "{args:?} ran nothing");
    }
    // The same flags on the virtual clock run: `--clock virtual` overrides the
    // file's clock.
    let args = "run real.json --clock virtual --explore pct:3 --check-determinism";
    let out = run(&args.split(' ').collect::<Vec<_>>());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `asksim actor answerer --policy` checks its row as a scenario's answerer row
/// is checked, and names the row's own keys: never `answerers[0]`, a place in
/// a file the user never wrote.
#[test]
fn a_bad_answerer_policy_names_the_rows_own_keys() {
    for (policy, said) in [
        ("[1]", "expected an object (an answerer row without its name)"),
        (
            r#"{"accepts":"all","answer":"skip"}"#,
            "the row: missing field `latency`",
        ),
        (
            r#"{"accepts":"all","latency":-1,"answer":"skip"}"#,
            "latency: expected a non-negative number of seconds, got -1",
        ),
    ] {
        // `output()` gives the process no stdin: a policy it took would end at once.
        let out = asksim_args(&["actor", "answerer", "--policy", policy]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{policy}: {stderr}");
        assert!(
            stderr.starts_with(&format!("asksim actor answerer: --policy: {said}")),
            "{policy}: {stderr}"
        );
        assert!(!stderr.contains("answerers[0]"), "{policy}: {stderr}");
    }
}
