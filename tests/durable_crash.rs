//! SPEC §4.1 for real, through the command line: `asksim run … --clock real
//! --log …` is SIGKILLed at seeded instants and continued each time with
//! `--resume`, some runs killed again after a resume; at the end the last run
//! passes, `asksim replay` of the log passes every invariant, no timed question
//! is left open, no result or user message appears twice, and no legacy
//! question was continued after the loss that took it.
//!
//! Kill points are counted in lines of the log (seeded), read by polling the
//! file on tokio's real clock: no wall-clock sleep, no timing assertion. A run
//! that ends before its kill point ends the chain (and does not count as a
//! kill); the test asserts how many kills landed.

use crate::durable_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use asksim::event::EventKind;
use asksim::projection::QuestionState;
use asksim::tool::Schema;
use durable_support::{Scratch, count, scenario};
use rand::{Rng, SeedableRng};
use serde_json::Value;

/// The longest a run may take to reach its kill point or its end.
const RUN_WAIT: Duration = Duration::from_secs(20);
/// How often the log's length is looked at.
const POLL: Duration = Duration::from_millis(2);

fn asksim(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_asksim"));
    command.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

/// Lines in the file at `path` now (0 if it is not there yet).
fn lines_in(path: &Path) -> usize {
    std::fs::read(path).map_or(0, |bytes| bytes.iter().filter(|b| **b == b'\n').count())
}

/// Waits until the log at `path` holds `lines` lines (then SIGKILLs `child`:
/// true) or `child` ends first (false).
async fn kill_at(child: &mut Child, path: &Path, lines: usize) -> bool {
    let deadline = tokio::time::Instant::now() + RUN_WAIT;
    loop {
        if child.try_wait().expect("the run's status").is_some() {
            return false;
        }
        if lines_in(path) >= lines {
            child.kill().expect("SIGKILL");
            child.wait().expect("the killed run");
            return true;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no progress within {RUN_WAIT:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Runs `file` on the real clock with its log at `log` (resuming when asked),
/// SIGKILLing it once the log has grown by `grow` lines; whether the kill
/// landed before the run ended.
async fn run_until(file: &str, log: &Path, resume: bool, grow: usize) -> bool {
    let start = lines_in(log);
    let log_arg = log.display().to_string();
    let mut args = vec!["run", file, "--clock", "real", "--log", &log_arg];
    if resume {
        args.push("--resume");
    }
    let mut child = asksim(&args).stdout(Stdio::null()).spawn().expect("asksim runs");
    kill_at(&mut child, log, start + grow).await
}

/// One chain: a fresh run and its resumes, killed up to `kills` times after
/// seeded numbers of new log lines (at most `grow_max`), then resumed to the
/// end. The kills that landed.
async fn chain(file: &str, log: &Path, rng: &mut rand::rngs::StdRng, kills: usize, grow_max: usize) -> usize {
    let _ = std::fs::remove_file(log);
    let mut landed = 0;
    for round in 0..kills {
        if !run_until(file, log, round > 0, rng.gen_range(1..=grow_max)).await {
            break;
        }
        landed += 1;
    }
    let log_arg = log.display().to_string();
    let mut args = vec!["run", file, "--clock", "real", "--log", &log_arg, "--json"];
    if landed > 0 {
        args.push("--resume");
    }
    let last = asksim(&args).output().expect("the last run");
    let stdout = String::from_utf8_lossy(&last.stdout);
    assert_eq!(
        last.status.code(),
        Some(0),
        "{file}: the last run failed:\n{stdout}\n{}",
        stderr(&last)
    );
    landed
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// What the log at `path` must show after any number of real crashes.
fn check_log(path: &Path, kills: usize) {
    let replay = asksim(&["replay", &path.display().to_string(), "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&replay.stdout).expect("replay prints JSON");
    assert_eq!(
        replay.status.code(),
        Some(0),
        "replay: {report:#}\n{}",
        stderr(&replay)
    );
    assert_eq!(report["violations"], serde_json::json!([]));
    let (_, events) = asksim::log::read_file(path).expect("a whole log");
    let projection = asksim::projection::Projection::fold(&events);
    let recovered = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Restart { recovered: true, .. }))
        .count();
    // Every resume records its recovered restart, unless it was killed first;
    // the last one always is.
    assert!(
        (1..=kills.max(1)).contains(&recovered),
        "{recovered} recovered restarts for {kills} kills"
    );
    let mut legacy_lost = 0;
    for (call_id, question) in &projection.questions {
        assert!(count(&events, "result", call_id) <= 1, "{call_id}: two results");
        assert!(
            count(&events, "user_message", call_id) <= 1,
            "{call_id}: a user message twice"
        );
        match question.schema {
            Schema::Timed => assert!(
                matches!(
                    question.state,
                    QuestionState::Answered | QuestionState::LateAnswered
                ),
                "{call_id} ended {:?}",
                question.state
            ),
            Schema::Legacy => {
                assert!(!question.went_pending, "{call_id}: a legacy call went pending");
                if question.state == QuestionState::LostOnRestart {
                    legacy_lost += 1;
                    let after = events.iter().filter(|e| e.seq > question.seq);
                    assert!(
                        after.clone().all(|e| e.kind.call_id() != Some(call_id)),
                        "{call_id} was continued after the loss that took it"
                    );
                }
            }
        }
    }
    println!(
        "{}: {} events, {} questions, {kills} kills, {legacy_lost} legacy questions lost",
        path.display(),
        events.len(),
        projection.questions.len()
    );
}

#[tokio::test(flavor = "current_thread")]
async fn sigkill_at_seeded_instants_loses_nothing_and_delivers_nothing_twice() {
    let scratch = Scratch::new("crash");
    let mut rng = rand::rngs::StdRng::seed_from_u64(20);
    let mut landed: BTreeMap<&str, usize> = BTreeMap::new();
    // (scenario, chains, kills per chain, most new log lines before a kill)
    for (name, chains, kills, grow_max) in [
        ("durable-crash-timed.json", 3, 4, 120),
        ("durable-crash-legacy.json", 2, 4, 40),
    ] {
        let file = scenario(name);
        for n in 0..chains {
            let log = scratch.path(&format!("{name}-{n}.jsonl"));
            let kills = chain(&file, &log, &mut rng, kills, grow_max).await;
            check_log(&log, kills);
            *landed.entry(name).or_default() += kills;
        }
    }
    let total: usize = landed.values().sum();
    assert!(total >= 20, "only {total} kills landed: {landed:?}");
}
