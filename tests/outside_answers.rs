//! SPEC §10 "judged by what it does", for the answers themselves: what the model
//! receives from an outside broker, as a tool result or as a late answer's user
//! message, must carry exactly the batch its answerer submitted (SPEC §3.6 "one
//! batch settles a call", §3.7 "the loser is never silently dropped", §6 "no
//! answer lost"). A broker that settles every call in the right shape with other
//! answers than the user chose passed every invariant, and `sweep
//! --invariants-only` with it. Each fixture broker below is
//! `examples/external/broker.py` with one method replaced; the run fails (exit 1)
//! naming `no_answer_lost`, the call and both contents, and the unmodified broker
//! passes the same scenario.
//!
//! The user messages themselves (SPEC §2.4): a late answer's and a withdrawal's
//! are each one exact text, compact JSON with the keys in SPEC's order. A broker
//! that tells the agent a late answer's text (a guess) where the waterfall ran
//! out, or writes the right late answer with spaces, fails the run naming
//! `late_answer_reaches_caller`, the text SPEC gives and the text it sent.

use std::process::{Command, Output};

fn asksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("the asksim binary runs")
}

/// `asksim run scenarios/FILE --broker-cmd BROKER`: its exit code and stdout.
fn run(file: &str, broker: &str) -> (i32, String) {
    let scenario = format!("scenarios/{file}");
    let out = asksim(&["run", &scenario, "--broker-cmd", broker]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (out.status.code().expect("asksim exits, it is not killed"), stdout)
}

const PYTHON_BROKER: &str = "python3 examples/external/broker.py";
const SWAPS_ANSWERS: &str = "python3 tests/fixtures/external/swaps_answers.py";
const SWAPS_LATE_ANSWER: &str = "python3 tests/fixtures/external/swaps_late_answer.py";
const WITHDRAWS_WITH_ANSWERS: &str = "python3 tests/fixtures/external/withdraws_with_answers.py";
const SPACED_LATE_ANSWER: &str = "python3 tests/fixtures/external/spaced_late_answer.py";

/// The violations a run printed, a line each.
fn violations(stdout: &str) -> Vec<&str> {
    stdout.lines().filter(|l| l.contains("VIOLATION")).collect()
}

#[test]
fn a_tool_result_with_other_answers_than_the_batch_fails_the_run() {
    let (code, stdout) = run("quickstart.json", SWAPS_ANSWERS);
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(
        violations(&stdout),
        [
            r#"  VIOLATION no_answer_lost (callId root/1, seq 6): the tool result does not carry the batch web submitted (seq 5): received [{"id":"cleanup","selected":["No, keep them"]}], submitted [{"id":"cleanup","selected":["Yes, delete them (Recommended)"]}]"#
        ],
        "{stdout}"
    );
    assert!(stdout.contains("result          FAIL"), "{stdout}");
}

/// The legacy result maps answers to texts (SPEC §2.2): the texts are compared.
#[test]
fn a_legacy_result_with_other_answer_texts_fails_the_run() {
    let (code, stdout) = run("legacy-blocking.json", SWAPS_ANSWERS);
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(
        violations(&stdout),
        [
            r#"  VIOLATION no_answer_lost (callId root/1, seq 8): the tool result does not carry the batch terminal submitted (seq 7): received {"Which checks should run?":"Tests, Bench"}, submitted {"Which checks should run?":"Lint, Tests"}"#
        ],
        "{stdout}"
    );
}

/// Custom text (replacing a single-select's labels, supplementing a
/// multi-select's) is content too.
#[test]
fn edited_custom_text_and_other_labels_are_each_named_per_call() {
    let (code, stdout) = run("multi-select-custom.json", SWAPS_ANSWERS);
    assert_eq!(code, 1, "{stdout}");
    let found = violations(&stdout);
    assert!(
        found.iter().any(|v| v.contains(
            r#"(callId custom/1, seq 30): the tool result does not carry the batch custom-bot submitted (seq 29): received [{"id":"db","selected":[],"custom":"MySQL, actually (edited)"}]"#
        )),
        "{stdout}"
    );
    assert!(
        found.iter().all(|v| v.contains("VIOLATION no_answer_lost")),
        "{stdout}"
    );
}

#[test]
fn a_late_answer_with_other_answers_than_the_batch_fails_the_run() {
    let (code, stdout) = run("pending-late-answer.json", SWAPS_LATE_ANSWER);
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(
        violations(&stdout),
        [
            r#"  VIOLATION no_answer_lost (callId root/1, seq 7): the late answer does not carry the batch terminal submitted (seq 6): in its user message, received [{"id":"db","selected":["SQLite"]}], submitted [{"id":"db","selected":["Postgres (Recommended)"]}]"#
        ],
        "{stdout}"
    );
}

/// Both pending calls of the scenario run out of answerers: each withdrawal's
/// user message is a late answer's text choosing the first option, where SPEC
/// §2.4 gives the withdrawal. The outside broker's adapter names it at the line
/// (PROTOCOL.md 4.7: user messages are built exactly so); the judge's own check
/// of the text, for logs from anywhere, is `late_answer_reaches_caller`
/// (`tests/violation_fixtures.rs`, `tests/checker_branches.rs`). A sweep without
/// expectations fails every seed.
#[test]
fn a_withdrawal_whose_message_carries_answers_fails_the_run() {
    let (code, stdout) = run("withdrawn-no-answerer.json", WITHDRAWS_WITH_ANSWERS);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains(
            "PROCESS FAILED the outside broker failed: a line that is not the protocol: the withdrawal \
             message for root/1 is not the compact text PROTOCOL.md 4.7 builds: from byte 9 it reads \
             \"answer_to_pending_question"
        ),
        "{stdout}"
    );
    let out = asksim(&[
        "sweep",
        "scenarios/withdrawn-no-answerer.json",
        "--seeds",
        "0..2",
        "--invariants-only",
        "--broker-cmd",
        WITHDRAWS_WITH_ANSWERS,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("0 passed, 2 failed"), "{stdout}");
}

/// The late answer's message with a space after every `,` and `:` (Python's
/// default `json.dumps`): the right JSON, not the text SPEC §2.4 gives, and
/// named so at the line (an earlier check called it "callId or questions
/// differ"), though a scenario's expectation, which compares the messages as
/// JSON, would pass.
#[test]
fn a_late_answer_message_not_written_compactly_fails_the_run() {
    let (code, stdout) = run("pending-late-answer.json", SPACED_LATE_ANSWER);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains(
            "PROCESS FAILED the outside broker failed: a line that is not the protocol: the late \
             answer's message for root/1 is not the compact text PROTOCOL.md 4.7 builds: from byte 8 \
             it reads \" \\\"answer_to_pending_question\\\", \\\"tool\\\": "
        ),
        "{stdout}"
    );
}

/// Expectations left out, as a sweep of a planted bug runs: the invariant alone
/// fails every seed.
#[test]
fn a_sweep_of_invariants_only_fails_every_seed() {
    let out = asksim(&[
        "sweep",
        "scenarios/quickstart.json",
        "--seeds",
        "0..3",
        "--invariants-only",
        "--broker-cmd",
        SWAPS_ANSWERS,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("0 passed, 3 failed"), "{stdout}");
    assert_eq!(
        stdout
            .matches("VIOLATION no_answer_lost (callId root/1, seq 6)")
            .count(),
        3,
        "{stdout}"
    );
}

/// Without the swap the same scenarios pass: the catch is the swap's. Each
/// fixture leaves the other path alone, so it passes where only that one runs.
#[test]
fn the_unmodified_broker_passes_the_same_scenarios() {
    for file in [
        "quickstart.json",
        "legacy-blocking.json",
        "multi-select-custom.json",
        "pending-late-answer.json",
        "withdrawn-no-answerer.json",
    ] {
        let (code, stdout) = run(file, PYTHON_BROKER);
        assert_eq!(code, 0, "{file}: {stdout}");
        assert!(violations(&stdout).is_empty(), "{file}: {stdout}");
    }
    let (code, stdout) = run("pending-late-answer.json", SWAPS_ANSWERS);
    assert_eq!(code, 0, "the late answer is not a tool result: {stdout}");
    let (code, stdout) = run("quickstart.json", SWAPS_LATE_ANSWER);
    assert_eq!(code, 0, "nothing goes pending: {stdout}");
    let (code, stdout) = run("pending-late-answer.json", WITHDRAWS_WITH_ANSWERS);
    assert_eq!(code, 0, "nothing is withdrawn: {stdout}");
    let (code, stdout) = run("withdrawn-no-answerer.json", SPACED_LATE_ANSWER);
    assert_eq!(code, 0, "no late answer: {stdout}");
}

const RESHAPES_RESULTS: &str = "python3 tests/fixtures/external/reshapes_results.py";

/// SPEC §2.4: the model reads a tool result's text, which is one exact text
/// for what the result carries. A broker that settles with the right answers
/// (or the right error) written otherwise, with a field more, a `"custom":""`,
/// keys in another order, passed every invariant; each now fails the run naming
/// `result_text_exact`, the call, the text sent and the text SPEC gives.
#[test]
fn a_result_written_otherwise_than_spec_fails_the_run() {
    for (how, file, seq) in [
        ("extra_field", "quickstart.json", 6),
        ("empty_custom", "quickstart.json", 6),
        ("reordered_item", "quickstart.json", 6),
        ("extra_key", "quickstart.json", 6),
        ("legacy_extra", "legacy-blocking.json", 8),
        ("error_reordered", "no-answerer.json", 9),
        ("error_extra", "no-answerer.json", 9),
    ] {
        let (code, stdout) = run(file, &format!("{RESHAPES_RESULTS} {how}"));
        assert_eq!(code, 1, "{how}: {stdout}");
        let found = violations(&stdout);
        let prefix = format!("  VIOLATION result_text_exact (callId root/1, seq {seq}): ");
        assert!(
            found.len() == 1 && found[0].starts_with(&prefix) && found[0].contains("where SPEC writes {"),
            "{how}: {stdout}"
        );
        let (code, stdout) = run(file, PYTHON_BROKER);
        assert_eq!(code, 0, "{file} with the unmodified broker: {stdout}");
    }
}

const WITHDRAWS_WITH_MESSAGE: &str = "python3 tests/fixtures/external/withdraws_with_message.py";

/// PROTOCOL.md 3.3: only a `NO_ANSWERER` withdrawal tells its agent, with the
/// withdrawal message; a `cancel_call` or `agent_stopped` one tells nobody. A
/// broker that writes a message where none belongs, or leaves out the one the
/// agent is owed, fails the run naming the line.
#[test]
fn a_withdrawal_with_the_wrong_message_fails_the_run() {
    for (how, file, reason) in [
        (
            "cancel_told",
            "cancel-call.json",
            "root/1 withdrawn for `cancel_call` with a message",
        ),
        (
            "stopped_told",
            "stop-agent.json",
            "root/1 withdrawn for `agent_stopped` with a message",
        ),
        (
            "untold",
            "withdrawn-no-answerer.json",
            "root/1 withdrawn for `NO_ANSWERER` without the withdrawal message",
        ),
    ] {
        let (code, stdout) = run(file, &format!("{WITHDRAWS_WITH_MESSAGE} {how}"));
        assert_eq!(code, 1, "{how}: {stdout}");
        let failed =
            format!("PROCESS FAILED the outside broker failed: a line that is not the protocol: {reason}");
        assert!(stdout.contains(&failed), "{how}: {stdout}");
        let (code, stdout) = run(file, PYTHON_BROKER);
        assert_eq!(code, 0, "{file} with the unmodified broker: {stdout}");
    }
}
