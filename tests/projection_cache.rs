//! The projection's snapshot cache (SPEC §4): a snapshot carries `stateVersion`;
//! one from another `stateVersion`, or for another log, is discarded and the state
//! refolded; a corrupt one counts as absent.

use std::path::{Path, PathBuf};

use asksim::event::Event;
use asksim::log::{LogHeader, STATE_VERSION, read_file};
use asksim::projection::{CacheUse, Projection, Snapshot, events_digest, fold_with_cache};
use serde_json::Value;
use tempfile::TempDir;

/// A cache path in a directory of its own, removed (with the directory) on drop.
fn temp_cache() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("cache.json");
    (dir, path)
}

fn load(name: &str) -> (LogHeader, Vec<Event>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    read_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn fold(cache: &Path, header: &LogHeader, events: &[Event]) -> (Projection, CacheUse) {
    fold_with_cache(cache, (&header.scenario, header.seed), events).expect("the cache is writable")
}

fn read_snapshot(cache: &Path) -> Snapshot {
    serde_json::from_str(&std::fs::read_to_string(cache).expect("a snapshot was written"))
        .expect("the snapshot parses")
}

#[test]
fn a_fresh_cache_folds_and_writes_a_snapshot() {
    let (header, events) = load("mixed-schemas.jsonl");
    let (_dir, cache) = temp_cache();
    let (projection, usage) = fold(&cache, &header, &events);
    assert_eq!(usage, CacheUse::Folded);
    assert_eq!(projection, Projection::fold(&events));
    let snapshot = read_snapshot(&cache);
    assert_eq!(snapshot.state_version, STATE_VERSION);
    assert_eq!(snapshot.log, (header.scenario.clone(), header.seed));
    assert_eq!(snapshot.projection, projection);
    let raw: Value = serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    assert_eq!(raw["stateVersion"], Value::from(STATE_VERSION));
}

#[test]
fn a_second_call_reuses_the_snapshot_and_gives_the_same_projection() {
    let (header, events) = load("mixed-schemas.jsonl");
    let (_dir, cache) = temp_cache();
    let (first, usage) = fold(&cache, &header, &events);
    assert_eq!(usage, CacheUse::Folded);
    let (second, usage) = fold(&cache, &header, &events);
    assert_eq!(usage, CacheUse::Reused);
    assert_eq!(second, first);
    assert_eq!(second, Projection::fold(&events));
}

#[test]
fn a_snapshot_of_a_prefix_is_reused_and_only_the_rest_folded() {
    let (header, events) = load("timed-loss.jsonl");
    let (_dir, cache) = temp_cache();
    let (partial, usage) = fold(&cache, &header, &events[..13]);
    assert_eq!(usage, CacheUse::Folded);
    assert_eq!(partial.seq, 13);
    let (full, usage) = fold(&cache, &header, &events);
    assert_eq!(usage, CacheUse::Reused);
    assert_eq!(full, Projection::fold(&events));
    assert_eq!(read_snapshot(&cache).projection.seq, 30);
}

#[test]
fn a_snapshot_from_another_state_version_is_discarded_and_refolded() {
    let (header, events) = load("mixed-schemas.jsonl");
    let fresh = Projection::fold(&events);
    for other in [STATE_VERSION + 1, STATE_VERSION.wrapping_sub(1), 0, u32::MAX] {
        if other == STATE_VERSION {
            continue;
        }
        let (_dir, cache) = temp_cache();
        // A snapshot of the same log but from another stateVersion, whose state is
        // deliberately wrong: it must not be used.
        let mut stale = fresh.clone();
        stale.questions.clear();
        stale.agents.clear();
        let snapshot = Snapshot {
            state_version: other,
            log: (header.scenario.clone(), header.seed),
            events_digest: events_digest(&events),
            projection: stale,
        };
        std::fs::write(&cache, serde_json::to_string(&snapshot).unwrap()).unwrap();
        let (projection, usage) = fold(&cache, &header, &events);
        assert_eq!(usage, CacheUse::Refolded, "stateVersion {other}");
        assert_eq!(projection, fresh, "stateVersion {other}");
        // The snapshot written back is the code's.
        let written = read_snapshot(&cache);
        assert_eq!(written.state_version, STATE_VERSION);
        assert_eq!(written.projection, fresh);
        let (_, usage) = fold(&cache, &header, &events);
        assert_eq!(usage, CacheUse::Reused);
    }
}

#[test]
fn a_snapshot_of_another_log_is_refolded() {
    let (header, events) = load("mixed-schemas.jsonl");
    let (other_header, other_events) = load("timed-loss.jsonl");
    let fresh = Projection::fold(&events);
    // Another scenario, and the same scenario under another seed.
    let others = [
        (other_header.scenario.clone(), other_header.seed),
        (header.scenario.clone(), header.seed + 1),
    ];
    for (scenario, seed) in others {
        let (_dir, cache) = temp_cache();
        let (_, usage) = fold_with_cache(&cache, (&scenario, seed), &other_events).unwrap();
        assert_eq!(usage, CacheUse::Folded);
        let (projection, usage) = fold(&cache, &header, &events);
        assert_eq!(usage, CacheUse::Refolded, "{scenario} seed {seed}");
        assert_eq!(projection, fresh, "{scenario} seed {seed}");
        assert_eq!(read_snapshot(&cache).log, (header.scenario.clone(), header.seed));
    }
}

#[test]
fn a_snapshot_longer_than_the_log_is_refolded() {
    let (header, events) = load("timed-loss.jsonl");
    let (_dir, cache) = temp_cache();
    fold(&cache, &header, &events);
    let (projection, usage) = fold(&cache, &header, &events[..10]);
    assert_eq!(usage, CacheUse::Refolded);
    assert_eq!(projection, Projection::fold(&events[..10]));
}

#[test]
fn a_corrupt_cache_counts_as_absent() {
    let (header, events) = load("mixed-schemas.jsonl");
    let fresh = Projection::fold(&events);
    let valid = {
        let (_dir, cache) = temp_cache();
        fold(&cache, &header, &events);
        std::fs::read(&cache).unwrap()
    };
    let corrupt: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"not json".to_vec(),
        b"{}".to_vec(),
        b"null".to_vec(),
        b"[1,2,3]".to_vec(),
        valid[..valid.len() / 2].to_vec(),
        vec![0xff, 0xfe, 0x00, 0x7b],
        br#"{"stateVersion":"one","log":["x",1],"projection":{}}"#.to_vec(),
    ];
    for (i, bytes) in corrupt.iter().enumerate() {
        let (_dir, cache) = temp_cache();
        std::fs::write(&cache, bytes).unwrap();
        let (projection, usage) = fold(&cache, &header, &events);
        assert_eq!(usage, CacheUse::Folded, "corrupt cache #{i}");
        assert_eq!(projection, fresh, "corrupt cache #{i}");
        // …and it is replaced by a good snapshot.
        assert_eq!(read_snapshot(&cache).projection, fresh, "corrupt cache #{i}");
    }
}

#[test]
fn replay_with_a_snapshot_prints_the_same_as_without() {
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mixed-schemas.jsonl");
    let (_dir, cache) = temp_cache();
    let run = |snapshot: Option<&Path>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_asksim"));
        command.arg("replay").arg(&log).arg("--json");
        if let Some(snapshot) = snapshot {
            command.arg("--snapshot").arg(snapshot);
        }
        let out = command.output().expect("asksim runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = run(None);
    let folded = run(Some(&cache));
    assert_eq!(read_snapshot(&cache).state_version, STATE_VERSION);
    let reused = run(Some(&cache));
    assert_eq!(folded, plain);
    assert_eq!(reused, plain);
}

#[test]
fn a_snapshot_of_a_different_log_under_the_same_header_is_not_reused() {
    // Two logs with one header (the same scenario name and seed) but different
    // events: a real-clock rerun, or a rerun after the scenario file was edited.
    // A snapshot of one must never stand in for the fold of the other.
    let (header, events) = load("legacy-loss.jsonl");
    // In the edited log root/1 was answered "No": same length, same header.
    let mut edited = events.clone();
    let answered: Event = serde_json::from_str(
        r#"{"seq":6,"t":2.0,"event":"result","callId":"root/1","agent":"root","result":"{\"answers\":{\"Deploy now?\":\"No\"}}","is_error":false}"#,
    )
    .unwrap();
    edited[5] = answered;
    assert_ne!(Projection::fold(&edited), Projection::fold(&events));
    let (_dir, cache) = temp_cache();
    fold(&cache, &header, &events);
    let (projection, usage) = fold(&cache, &header, &edited);
    assert_eq!(projection, Projection::fold(&edited));
    assert_eq!(usage, CacheUse::Refolded);
}
