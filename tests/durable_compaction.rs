//! SPEC §4.1 on compaction: "A long-lived host's log is compacted (a snapshot of
//! the projection with its `stateVersion`, then the tail); recovery from
//! snapshot + tail equals recovery from the whole log." And a crash during
//! compaction loses nothing: the compacted log is written beside, synced, and
//! renamed into place.

use crate::broker_support;
use crate::durable_support;

use std::path::Path;

use asksim::durable::compaction::{compacting_path, install_compacted, write_compacted};
use asksim::durable::read::read_back;
use asksim::durable::recovery::restored;
use asksim::durable::{RecoverOptions, Snapshot, SyncPolicy};
use asksim::projection::Projection;
use asksim::restart::{Resumed, plan};
use broker_support::{LEGACY_ARGS, spawn_ask, timed_args, within};
use durable_support::*;

fn options() -> RecoverOptions {
    RecoverOptions {
        policy: SyncPolicy::None,
        events_max: 1_000_000,
        keep: false,
        open_calls_max: asksim::limits::OPEN_CALLS_MAX,
    }
}

/// What recovery from the log at `path` rebuilds, read without writing: the
/// projection, the agents that come back, the questions re-offered, the last
/// `seq` and time.
fn recovered_state(path: &Path) -> (Projection, Vec<Resumed>, Vec<String>, u64, f64) {
    let read = read_back(path, None).expect("a readable log");
    let recorder = restored(read, options());
    let plan = plan(recorder.projection());
    let reopened = plan.reopened.iter().map(|r| r.call_id.to_string()).collect();
    (
        recorder.projection().clone(),
        plan.agents,
        reopened,
        recorder.len(),
        recorder.last_t(),
    )
}

/// A host that runs a while, compacts its live log in the middle, and runs on:
/// answered, late-answered, pending, legacy and delivered questions on both
/// sides of the snapshot. Its whole log (from memory) goes to `whole`.
async fn host_with_compaction(path: &Path, whole: &Path) {
    let config = timed_config(vec![answerer("web", 2.0)]);
    let runtime = start_logged(config, path, SyncPolicy::None).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let helper = root.spawn_child("helper").await.unwrap();
    root.ask(&timed_args(Some("5"))).await;
    root.ask(&timed_args(Some("1"))).await;
    within(10.0, root.closed("root/2")).await;
    let _open = spawn_ask(&root, &timed_args(Some("-1")));
    helper.ask(LEGACY_ARGS).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let compacted = runtime.compact_log().unwrap().expect("a log to compact");
    assert!(compacted.bytes_after < compacted.bytes_before, "{compacted:?}");
    assert_eq!(lines(path).len(), 2, "the header and the snapshot");
    root.ask(&timed_args(Some("1"))).await;
    let late = spawn_ask(&root, &timed_args(Some("1")));
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    runtime.shutdown().await;
    let _ = late.await;
    let header = asksim::log::LogHeader::real("library", 0);
    asksim::log::write_file(whole, &header, &runtime.events().snapshot()).unwrap();
}

#[tokio::test(start_paused = true)]
async fn recovery_from_snapshot_and_tail_equals_recovery_from_the_whole_log() {
    let scratch = Scratch::new("equal");
    let (path, whole) = (scratch.path("log.jsonl"), scratch.path("whole.jsonl"));
    host_with_compaction(&path, &whole).await;
    let from_compacted = recovered_state(&path);
    assert!(!from_compacted.2.is_empty(), "questions are open at the end");
    assert_eq!(from_compacted, recovered_state(&whole));
    assert!(
        std::fs::metadata(&path).unwrap().len() < std::fs::metadata(&whole).unwrap().len(),
        "compaction made the log smaller"
    );

    // And through the library: the same agents back, the same questions re-offered.
    let mut results = Vec::new();
    for log in [&path, &whole] {
        let config = timed_config(vec![answerer("web", 2.0)]);
        let recovered = asksim::Runtime::recover(config, log).await.unwrap();
        let agents: Vec<_> = recovered
            .agents
            .iter()
            .map(|a| {
                (
                    a.handle.name().to_owned(),
                    a.lineage.clone(),
                    a.calls_made,
                    a.pending.clone(),
                )
            })
            .collect();
        results.push((agents, recovered.reopened.clone(), recovered.lost.clone()));
        recovered.runtime.shutdown().await;
    }
    assert_eq!(results[0], results[1]);
}

#[tokio::test(start_paused = true)]
async fn offline_compaction_recovers_to_the_same_state() {
    let scratch = Scratch::new("offline");
    let (path, whole) = (scratch.path("log.jsonl"), scratch.path("whole.jsonl"));
    host_with_compaction(&path, &whole).await;
    let copy = scratch.path("copy.jsonl");
    std::fs::copy(&whole, &copy).unwrap();
    let compacted = asksim::durable::compact_file(&copy).unwrap();
    assert_eq!(lines(&copy).len(), 2);
    assert_eq!(compacted.seq, recovered_state(&whole).3);
    assert_eq!(recovered_state(&copy), recovered_state(&whole));
}

/// A crash before the rename leaves the old log whole and in its place (a
/// leftover compacted file, whole or torn, is never read); after the rename the
/// compacted log is in place. Either way recovery equals recovery from the whole
/// log.
#[tokio::test(start_paused = true)]
async fn a_crash_during_compaction_loses_nothing() {
    let scratch = Scratch::new("crash-compacting");
    let (path, whole) = (scratch.path("log.jsonl"), scratch.path("whole.jsonl"));
    host_with_compaction(&path, &whole).await;
    let expected = recovered_state(&whole);
    std::fs::copy(&whole, &path).unwrap();
    let read = read_back(&path, None).unwrap();
    let header_line = read.header_line.clone();
    let recorder = restored(read, options());
    let snapshot = Snapshot::of(recorder.projection(), recorder.last_t());
    let before = file_hash(&path);

    // Killed after writing the compacted file, before the rename.
    let temp = write_compacted(&path, &header_line, &snapshot).unwrap();
    assert_eq!(temp, compacting_path(&path));
    assert_eq!(file_hash(&path), before, "the log is untouched until the rename");
    assert_eq!(recovered_state(&path), expected);
    // Killed while writing it: a torn compacted file.
    let written = std::fs::read(&temp).unwrap();
    std::fs::write(&temp, &written[..written.len() / 2]).unwrap();
    assert_eq!(recovered_state(&path), expected);
    // The next compaction writes it again, whole, and renames it into place.
    let temp = write_compacted(&path, &header_line, &snapshot).unwrap();
    drop(install_compacted(&temp, &path).unwrap());
    assert!(!temp.exists());
    assert_eq!(lines(&path).len(), 2);
    assert_eq!(recovered_state(&path), expected);
}
