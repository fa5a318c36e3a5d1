//! SPEC §4.1 on damage: "A torn last line (the crash cut a write) is dropped and
//! reported; a damaged line anywhere else, or a log of another scenario or seed,
//! is an error naming the line (exit 2) and the file is left exactly as it was."
//! Each case with the SHA-256 of the file before and after recovery.

use crate::broker_support;
use crate::durable_support;

use std::path::Path;

use asksim::durable::{Expected, RecoverError, RecoverOptions, SyncPolicy, recover};
use asksim::event::EventKind;
use broker_support::{pending_result, timed_args, within};
use durable_support::*;

fn options() -> RecoverOptions {
    RecoverOptions {
        policy: SyncPolicy::None,
        events_max: 1_000_000,
        keep: true,
        open_calls_max: asksim::limits::OPEN_CALLS_MAX,
    }
}

fn library() -> Expected {
    Expected {
        scenario: "library".into(),
        seed: 0,
    }
}

/// A good log: one late-answered question, one pending at the end.
async fn good_log(path: &Path) {
    let runtime = start_logged(timed_config(vec![answerer("web", 2.0)]), path, SyncPolicy::None).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    assert_eq!(
        root.ask(&timed_args(Some("1"))).await.result.text,
        pending_result("root/1")
    );
    within(10.0, root.closed("root/1")).await;
    assert_eq!(
        root.ask(&timed_args(Some("1"))).await.result.text,
        pending_result("root/2")
    );
    runtime.shutdown().await;
}

/// Recovery of the log at `path` fails naming `line`, with `message` in its
/// text, and leaves the file as it was.
fn assert_refused(path: &Path, expected: &Expected, line: usize, message: &str) {
    let before = file_hash(path);
    let error = match recover(path, Some(expected), options()) {
        Err(RecoverError::Damaged(error)) => error,
        Err(other) => panic!("not damage: {other}"),
        Ok(_) => panic!("a damaged log was recovered"),
    };
    assert_eq!(error.line, Some(line), "{error}");
    assert!(error.to_string().contains(message), "{error}");
    assert!(
        error
            .to_string()
            .starts_with(&format!("{}:{line}: ", path.display())),
        "{error}"
    );
    assert_eq!(file_hash(path), before, "the file is left exactly as it was");
}

#[tokio::test(start_paused = true)]
async fn a_torn_last_line_is_dropped_and_reported() {
    let scratch = Scratch::new("torn");
    let path = scratch.path("log.jsonl");
    good_log(&path).await;
    let whole = std::fs::read(&path).unwrap();
    let whole_hash = file_hash(&path);
    let n = lines(&path).len();
    // The crash cut a write: the first half of one more line, no newline, and a
    // multibyte character cut in two.
    let mut torn = whole.clone();
    torn.extend_from_slice("{\"seq\":99,\"t\":4.0,\"event\":\"offer\",\"callId\":\"é".as_bytes());
    torn.pop();
    std::fs::write(&path, &torn).unwrap();
    let torn_hash = file_hash(&path);
    assert_ne!(torn_hash, whole_hash);

    let recovery = recover(&path, Some(&library()), options()).expect("a torn line is no damage");
    let report = recovery.torn.expect("reported");
    assert_eq!((report.line, report.bytes), (n + 1, torn.len() - whole.len()));
    drop(recovery);
    let after = std::fs::read(&path).unwrap();
    assert_eq!(
        &after[..whole.len()],
        &whole[..],
        "the whole lines are kept byte for byte"
    );
    let rest = String::from_utf8(after[whole.len()..].to_vec()).expect("the torn bytes are gone");
    let appended: Vec<&str> = rest.lines().collect();
    assert_eq!(
        appended.len(),
        1,
        "only the crash's process loss was appended: {rest}"
    );
    assert!(appended[0].contains("\"event\":\"process_loss\""), "{rest}");
}

#[tokio::test(start_paused = true)]
async fn a_damaged_line_in_the_middle_is_an_error_naming_it() {
    let scratch = Scratch::new("middle");
    let path = scratch.path("log.jsonl");
    good_log(&path).await;
    let mut all = lines(&path);
    all[4] = all[4].replacen("\"callId\"", "\"callI\u{0}d\"", 1);
    let cut = all[4].len() - 5;
    all[4].truncate(cut);
    write_lines(&path, &all);
    assert_refused(&path, &library(), 5, "bad event");
}

#[tokio::test(start_paused = true)]
async fn a_damaged_last_line_with_its_newline_is_damage_not_a_tear() {
    let scratch = Scratch::new("last-whole");
    let path = scratch.path("log.jsonl");
    good_log(&path).await;
    let mut all = lines(&path);
    let last = all.len() - 1;
    let half = all[last].len() / 2;
    all[last].truncate(half);
    write_lines(&path, &all);
    assert_refused(&path, &library(), last + 1, "bad event");
}

#[tokio::test(start_paused = true)]
async fn a_missing_line_is_a_seq_gap_naming_the_next() {
    let scratch = Scratch::new("gap");
    let path = scratch.path("log.jsonl");
    good_log(&path).await;
    let mut all = lines(&path);
    all.remove(3);
    write_lines(&path, &all);
    assert_refused(&path, &library(), 4, "seq 4 where 3 was expected");
}

#[tokio::test(start_paused = true)]
async fn an_empty_line_is_damage() {
    let scratch = Scratch::new("empty-line");
    let path = scratch.path("log.jsonl");
    good_log(&path).await;
    let mut all = lines(&path);
    all.insert(2, String::new());
    write_lines(&path, &all);
    assert_refused(&path, &library(), 3, "an empty line");
}

#[tokio::test(start_paused = true)]
async fn a_log_of_another_scenario_or_seed_is_refused_at_line_1() {
    let scratch = Scratch::new("another");
    let path = scratch.path("log.jsonl");
    good_log(&path).await;
    let other_name = Expected {
        scenario: "billing".into(),
        seed: 0,
    };
    assert_refused(
        &path,
        &other_name,
        1,
        "a log of scenario \"library\", not of \"billing\"",
    );
    let other_seed = Expected {
        scenario: "library".into(),
        seed: 7,
    };
    assert_refused(&path, &other_seed, 1, "a log of seed 0, not of seed 7");
}

#[tokio::test(start_paused = true)]
async fn a_newer_version_is_refused_at_line_1() {
    let scratch = Scratch::new("newer");
    let path = scratch.path("log.jsonl");
    good_log(&path).await;
    let mut all = lines(&path);
    all[0] = all[0].replacen("\"version\":1", "\"version\":2", 1);
    write_lines(&path, &all);
    assert_refused(
        &path,
        &library(),
        1,
        "log version 2 was written by a newer asksim",
    );
}

#[tokio::test(start_paused = true)]
async fn a_torn_header_or_an_empty_file_is_refused() {
    let scratch = Scratch::new("no-header");
    let path = scratch.path("log.jsonl");
    good_log(&path).await;
    let header = lines(&path).remove(0);
    std::fs::write(&path, &header[..header.len() / 2]).unwrap();
    assert_refused(&path, &library(), 1, "torn header");
    std::fs::write(&path, "").unwrap();
    assert_refused(&path, &library(), 1, "torn header");
}

#[tokio::test(start_paused = true)]
async fn a_snapshot_of_another_state_version_is_refused_at_line_2() {
    let scratch = Scratch::new("state-version");
    let path = scratch.path("log.jsonl");
    good_log(&path).await;
    asksim::durable::compact_file(&path).unwrap();
    let mut all = lines(&path);
    assert!(all[1].starts_with("{\"snapshot\":"), "{}", all[1]);
    let code = format!("\"stateVersion\":{}", asksim::log::STATE_VERSION);
    all[1] = all[1].replacen(&code, "\"stateVersion\":999", 1);
    write_lines(&path, &all);
    assert_refused(&path, &library(), 2, "stateVersion 999");
}

/// A log compacted by a build of stateVersion 4 or 5 still recovers: each later
/// state only adds to it (`SNAPSHOTS_READ`), and the recovery goes on from its
/// snapshot.
#[tokio::test(start_paused = true)]
async fn a_snapshot_of_state_version_4_or_5_recovers() {
    // What each wrote: none of the fields the later versions added.
    let added_since: [(u32, &[&str], &[&str]); 2] = [
        (
            4,
            &["answerers", "unjudged", "dead", "fired_before"],
            &["owner", "turn"],
        ),
        (5, &["fired_before"], &[]),
    ];
    for (version, projection_fields, question_fields) in added_since {
        let scratch = Scratch::new(&format!("state-version-{version}"));
        let path = scratch.path("log.jsonl");
        good_log(&path).await;
        asksim::durable::compact_file(&path).unwrap();
        let mut all = lines(&path);
        let code = format!("\"stateVersion\":{}", asksim::log::STATE_VERSION);
        all[1] = all[1].replacen(&code, &format!("\"stateVersion\":{version}"), 1);
        let mut line: serde_json::Value = serde_json::from_str(&all[1]).unwrap();
        let projection = &mut line["snapshot"]["projection"];
        for added in projection_fields {
            projection.as_object_mut().unwrap().remove(*added);
        }
        for question in projection["questions"].as_object_mut().unwrap().values_mut() {
            for added in question_fields {
                question.as_object_mut().unwrap().remove(*added);
            }
        }
        all[1] = line.to_string();
        write_lines(&path, &all);
        let recovery = recover(&path, Some(&library()), options())
            .unwrap_or_else(|e| panic!("a snapshot of {version} recovers: {e}"));
        assert!(recovery.compacted.is_some());
        assert!(recovery.crashed);
    }
    assert_eq!(asksim::durable::snapshot::SNAPSHOTS_READ, [4, 5, 6]);
}

/// The checks above bite only on damage: the same log, undamaged, recovers, and
/// its recovery appends the crash's process loss after the last whole line.
#[tokio::test(start_paused = true)]
async fn the_undamaged_log_recovers() {
    let scratch = Scratch::new("undamaged");
    let path = scratch.path("log.jsonl");
    good_log(&path).await;
    let before = std::fs::read(&path).unwrap();
    let recovery = recover(&path, Some(&library()), options()).expect("recovers");
    assert!(recovery.torn.is_none());
    assert!(recovery.crashed);
    drop(recovery);
    let events = events_in(&path);
    assert!(matches!(
        events.last().unwrap().kind,
        EventKind::ProcessLoss { .. }
    ));
    assert!(std::fs::read(&path).unwrap().starts_with(&before));
}
