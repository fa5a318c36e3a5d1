//! `asksim replay LOG [--json]` against the built binary: a damaged log exits 2
//! with `file:N: …` on stderr and nothing on stdout; a good log lists every callId
//! with its state.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tempfile::NamedTempFile;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn replay(args: &[&str], log: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_asksim"))
        .arg("replay")
        .arg(log)
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("asksim runs")
}

/// A temporary log file holding `text`; removed on drop.
fn temp_log(text: &[u8]) -> NamedTempFile {
    let file = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .expect("temp dir writable");
    std::fs::write(file.path(), text).expect("temp dir writable");
    file
}

fn good_lines() -> Vec<String> {
    std::fs::read_to_string(fixture("timed-loss.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn joined(lines: &[String]) -> Vec<u8> {
    let mut text = lines.join("\n");
    text.push('\n');
    text.into_bytes()
}

/// Exit 2, stdout empty, no panic, and stderr names `file:line:`, and says `why`.
fn assert_bad(path: &Path, line: Option<usize>, why: &str) {
    for args in [&[][..], &["--json"][..]] {
        let out = replay(args, path);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let what = format!("replay {} {args:?}", path.display());
        assert_eq!(out.status.code(), Some(2), "{what}: stderr {stderr}");
        assert!(
            out.stdout.is_empty(),
            "{what}: stdout {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        let prefix = match line {
            Some(n) => format!("{}:{n}: ", path.display()),
            None => format!("{}: ", path.display()),
        };
        assert!(
            stderr.starts_with(&prefix),
            "{what}: expected {prefix:?}…, got {stderr}"
        );
        assert!(
            stderr.to_lowercase().contains(why),
            "{what}: expected {why:?} in {stderr}"
        );
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "{what}: one line, got {stderr}"
        );
    }
}

#[test]
fn a_truncated_line_names_its_line() {
    let mut lines = good_lines();
    let line = &mut lines[6];
    line.truncate(line.len() / 2);
    let log = temp_log(&joined(&lines));
    assert_bad(log.path(), Some(7), "bad event");
}

#[test]
fn a_log_cut_mid_line_at_the_end_names_the_last_line() {
    let lines = good_lines();
    let mut text = joined(&lines[..10]);
    text.extend_from_slice(&lines[10].as_bytes()[..20]);
    let log = temp_log(&text);
    assert_bad(log.path(), Some(11), "cut short (no newline)");
    assert_bad(log.path(), Some(11), "--resume");
    // Whole but for its newline, the last line is cut short all the same, as
    // recovery reads it (it drops the line).
    let mut text = joined(&lines[..10]);
    text.extend_from_slice(lines[10].as_bytes());
    let log = temp_log(&text);
    assert_bad(log.path(), Some(11), "cut short (no newline)");
}

/// An empty line is damage (asksim writes none), as `run --resume` says too; the
/// newline that ends the last line is not one.
#[test]
fn an_empty_line_in_the_middle_names_its_line() {
    let mut lines = good_lines();
    lines.insert(4, String::new());
    let log = temp_log(&joined(&lines));
    assert_bad(log.path(), Some(5), "an empty line");
    let mut text = joined(&good_lines());
    text.push(b'\n');
    let log = temp_log(&text);
    assert_bad(log.path(), Some(good_lines().len() + 1), "an empty line");
}

#[test]
fn bad_json_names_its_line() {
    let mut lines = good_lines();
    lines[3] = "{\"seq\":3,,}".to_owned();
    let log = temp_log(&joined(&lines));
    assert_bad(log.path(), Some(4), "bad event");
    let mut lines = good_lines();
    lines[4] = "not json at all".to_owned();
    let log = temp_log(&joined(&lines));
    assert_bad(log.path(), Some(5), "bad event");
}

#[test]
fn a_seq_gap_names_its_line() {
    let mut lines = good_lines();
    lines.remove(5); // seq 5 goes; the line of seq 6 is now line 6
    let log = temp_log(&joined(&lines));
    assert_bad(log.path(), Some(6), "seq 6 where 5 was expected");
    let mut lines = good_lines();
    let repeated = lines[5].clone();
    lines.insert(6, repeated);
    let log = temp_log(&joined(&lines));
    assert_bad(log.path(), Some(7), "seq 5 where 6 was expected");
}

#[test]
fn an_unknown_event_names_its_line() {
    let mut lines = good_lines();
    lines[2] = r#"{"seq":2,"t":0.0,"event":"teleport","agent":"ops"}"#.to_owned();
    let log = temp_log(&joined(&lines));
    assert_bad(log.path(), Some(3), "teleport");
}

#[test]
fn a_missing_header_names_line_one() {
    let lines = good_lines();
    let log = temp_log(&joined(&lines[1..]));
    assert_bad(log.path(), Some(1), "header");
    let mut lines = good_lines();
    lines[0] = r#"{"format":"other-log","version":1,"stateVersion":1,"scenario":"x","seed":1}"#.to_owned();
    let log = temp_log(&joined(&lines));
    assert_bad(log.path(), Some(1), "asksim-log");
}

#[test]
fn an_empty_file_names_line_one() {
    let log = temp_log(b"");
    assert_bad(log.path(), Some(1), "missing header");
    let log = temp_log(b"\n\n");
    assert_bad(log.path(), Some(1), "missing header");
}

#[test]
fn a_missing_file_names_the_file() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("does-not-exist.jsonl");
    assert_bad(&path, None, "cannot read");
}

#[test]
fn a_file_that_is_not_utf8_names_the_file() {
    let mut text = joined(&good_lines());
    text.extend_from_slice(&[0xff, 0xfe, b'\n']);
    let log = temp_log(&text);
    let out = replay(&[], log.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).starts_with(&log.path().display().to_string()));
}

/// callId → state as the human table lists it.
fn table_states(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .skip(2)
        .filter(|l| l.starts_with("  ") && !l.trim_start().starts_with("invariants:"))
        // A hand-made log has no `end` event: the note says so, under the table.
        .filter(|l| !l.trim_start().starts_with("NOT ENDED"))
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols[0].to_owned(), cols[3].to_owned())
        })
        .collect()
}

const MIXED_STATES: [(&str, &str, &str, &str); 12] = [
    ("lab/1", "lab", "timed", "late_answered"),
    ("ops/1", "ops", "legacy", "lost_on_restart"),
    ("ops/2", "ops", "legacy", "answered"),
    ("qa/1", "qa", "legacy", "aborted"),
    ("qa/2", "qa", "timed", "withdrawn"),
    ("qa/3", "qa", "timed", "pending"),
    ("root/1", "root", "legacy", "answered"),
    ("root/2", "root", "timed", "late_answered"),
    ("root/3", "root", "timed", "withdrawn"),
    ("root/4", "root", "timed", "open"),
    ("worker/1", "worker", "timed", "errored"),
    ("worker/2", "worker", "timed", "answered"),
];

#[test]
fn a_good_log_lists_every_call_with_its_state() {
    let out = replay(&[], &fixture("mixed-schemas.jsonl"));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("asksim replay: fixture-mixed-schemas (seed 11, 76 events)\n"));
    let expected: Vec<(String, String)> = MIXED_STATES
        .iter()
        .map(|(id, _, _, state)| ((*id).to_owned(), (*state).to_owned()))
        .collect();
    assert_eq!(table_states(&stdout), expected);
    assert!(stdout.contains("0 violated"), "{stdout}");
}

#[test]
fn json_output_parses_and_lists_the_questions() {
    let out = replay(&["--json"], &fixture("mixed-schemas.jsonl"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    assert_eq!(report["scenario"], "fixture-mixed-schemas");
    assert_eq!(report["seed"], 11);
    assert_eq!(report["events"], 76);
    assert_eq!(report["violations"], serde_json::json!([]));
    let rows: Vec<(String, String, String, String)> = report["questions"]
        .as_array()
        .expect("questions is a list")
        .iter()
        .map(|q| {
            let s = |k: &str| q[k].as_str().unwrap_or_else(|| panic!("{k} in {q}")).to_owned();
            (s("callId"), s("agent"), s("schema"), s("state"))
        })
        .collect();
    let expected: Vec<(String, String, String, String)> = MIXED_STATES
        .iter()
        .map(|(a, b, c, d)| ((*a).into(), (*b).into(), (*c).into(), (*d).into()))
        .collect();
    assert_eq!(rows, expected);
}

#[test]
fn every_good_fixture_replays_cleanly() {
    for (name, calls) in [
        ("timed-loss.jsonl", 3),
        ("legacy-loss.jsonl", 3),
        ("legacy-beyond-limits.jsonl", 2),
    ] {
        let out = replay(&["--json"], &fixture(name));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            report["questions"].as_array().map(Vec::len),
            Some(calls),
            "{name}"
        );
    }
}

#[test]
fn a_log_that_breaks_an_invariant_exits_1_and_still_lists_its_questions() {
    // schema-only.jsonl has timed questions never taken up after its restart,
    // and no request of it was ever offered to an answerer.
    let out = replay(&["--json"], &fixture("schema-only.jsonl"));
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["questions"].as_array().map(Vec::len), Some(4));
    let named: Vec<(&str, &str)> = report["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["invariant"].as_str().unwrap(), v["callId"].as_str().unwrap()))
        .collect();
    let lost: Vec<&str> = named
        .iter()
        .filter(|(i, _)| *i == "timed_survive_loss_legacy_do_not")
        .map(|(_, c)| *c)
        .collect();
    assert_eq!(lost, ["root/1", "root/3"], "{named:?}");
    let orphans = named.iter().filter(|(i, _)| *i == "no_orphaned_wait").count();
    assert_eq!(orphans + lost.len(), named.len(), "{named:?}");
    assert_eq!(orphans, 4, "four requests never offered: {named:?}");
}

/// `line` (one JSON object) with `field` added: first when `first`, else last.
fn with_field(line: &str, field: &str, first: bool) -> String {
    assert!(line.starts_with('{') && line.ends_with('}'), "{line}");
    if first {
        format!("{{{field},{}", &line[1..])
    } else {
        format!("{},{field}}}", &line[..line.len() - 1])
    }
}

/// stdout and exit code of `replay` in both renderings.
fn reports(log: &Path) -> Vec<(Option<i32>, Vec<u8>)> {
    [&[][..], &["--json"][..]]
        .iter()
        .map(|args| {
            let out = replay(args, log);
            assert!(
                out.stderr.is_empty(),
                "{}: {}",
                log.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            (out.status.code(), out.stdout)
        })
        .collect()
}

/// SPEC §4: "Readers ignore fields they do not know, in the header and in events
/// (a log written by a newer build still replays)".
#[test]
fn a_header_with_fields_this_build_does_not_know_replays() {
    let mut lines = std::fs::read_to_string(fixture("mixed-schemas.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect::<Vec<_>>();
    let original = temp_log(&joined(&lines));
    lines[0] = with_field(&lines[0], r#""writer":"asksim 9.0""#, true);
    lines[0] = with_field(&lines[0], r#""clock":{"kind":"real","tolerance_s":0.1}"#, false);
    let newer = temp_log(&joined(&lines));
    let got = reports(newer.path());
    assert_eq!(got[0].0, Some(0));
    assert_eq!(got, reports(original.path()));
}

#[test]
fn events_with_fields_this_build_does_not_know_replay_with_the_same_report() {
    // One log that replays cleanly and one that breaks an invariant on purpose.
    for (name, code) in [("mixed-schemas.jsonl", 0), ("schema-only.jsonl", 1)] {
        let lines: Vec<String> = std::fs::read_to_string(fixture(name))
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        let mut newer = lines.clone();
        for (i, line) in newer.iter_mut().enumerate().skip(1) {
            let field = format!(r#""x_trace":{{"span":{i},"tags":["a",null]}}"#);
            *line = with_field(line, &field, i % 2 == 0);
        }
        let original = temp_log(&joined(&lines));
        let newer = temp_log(&joined(&newer));
        let got = reports(newer.path());
        assert_eq!(got[0].0, Some(code), "{name}");
        assert_eq!(got, reports(original.path()), "{name}");
    }
}

/// SPEC §4: "a missing required field is an error naming the line".
#[test]
fn an_event_without_its_seq_names_its_line() {
    let mut lines = good_lines();
    lines[4] = lines[4].replacen(r#""seq":4,"#, "", 1);
    assert!(!lines[4].contains("\"seq\""), "{}", lines[4]);
    let log = temp_log(&joined(&lines));
    assert_bad(log.path(), Some(5), "missing field `seq`");
}

#[test]
fn a_request_without_its_call_id_names_its_line() {
    let mut lines = good_lines();
    assert!(lines[3].contains(r#""event":"request""#), "{}", lines[3]);
    lines[3] = lines[3].replacen(r#""callId":"root/1","#, "", 1);
    assert!(!lines[3].contains("callId"), "{}", lines[3]);
    let log = temp_log(&joined(&lines));
    assert_bad(log.path(), Some(4), "missing field `callid`");
}

#[test]
fn a_header_without_a_required_field_names_line_one() {
    for field in [
        r#","seed":3"#,
        r#","scenario":"fixture-timed-loss""#,
        r#","stateVersion":1"#,
    ] {
        let mut lines = good_lines();
        assert!(lines[0].contains(field), "{}", lines[0]);
        lines[0] = lines[0].replacen(field, "", 1);
        let log = temp_log(&joined(&lines));
        let name = field.split('"').nth(1).unwrap().to_lowercase();
        assert_bad(log.path(), Some(1), &format!("missing field `{name}`"));
    }
}

/// Regression (issue #22): a log cut at a line boundary replayed with exit 0,
/// calls shown `open`, and no word that the log ends mid-run. A run's log ends
/// with an `end` event; a log without one is reported as a run that did not
/// end, with the way to continue it; a whole log says nothing of the kind.
#[test]
fn a_log_cut_at_a_line_boundary_says_its_run_did_not_end() {
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.json");
    let whole = temp_log(b"");
    let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args([
            "run",
            &scenario.display().to_string(),
            "--log",
            &whole.path().display().to_string(),
        ])
        .output()
        .expect("asksim runs");
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(whole.path()).expect("the log");
    let last = text.lines().last().unwrap_or_default();
    assert!(last.ends_with(r#","event":"end","reason":"done"}"#), "{last}");
    let done = replay(&[], whole.path());
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert_eq!(done.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains("NOT ENDED"), "{stdout}");
    let json: Value = serde_json::from_slice(&replay(&["--json"], whole.path()).stdout).unwrap();
    assert_eq!(json["end"], "done");

    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let cut = temp_log(&joined(&lines[..4]));
    let out = replay(&[], cut.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "the invariants hold so far: {stdout}");
    assert!(
        stdout.contains("root/1                   root             timed   open"),
        "{stdout}"
    );
    assert!(
        stdout.contains("NOT ENDED: the log stops before its run ended"),
        "{stdout}"
    );
    assert!(
        stdout.contains("`asksim run FILE --log PATH --resume` continues it"),
        "{stdout}"
    );
    let json: Value = serde_json::from_slice(&replay(&["--json"], cut.path()).stdout).unwrap();
    assert_eq!(json["end"], Value::Null);
}
