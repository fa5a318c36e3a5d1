//! Blind spots of the judge for outside brokers (SPEC §10 "Judged by what it
//! does", PROTOCOL.md 3.3 and 6): each case is `examples/external/broker.py`
//! with one method overridden (`tests/fixtures/external/`), a broker that
//! passed a run while it did something nobody asked for or left out what it
//! owed. Each now fails the run (exit 1), never a panic or a hang, with a
//! report that names the agent, call or turn and shows the offending line.

use crate::common;

use common::asksim;

use std::io::Write;
use std::process::{Command, Stdio};

/// `asksim run scenarios/SCENARIO` with the fixture broker `fixture` (and its
/// arguments): exit 1, and the report.
fn fails(scenario: &str, fixture: &str) -> String {
    let file = format!("scenarios/{scenario}");
    let broker = format!("python3 tests/fixtures/external/{fixture}");
    let out = asksim(&["run", &file, "--broker-cmd", &broker], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("result          FAIL"), "{stdout}");
    stdout
}

/// The report of a broker that broke the protocol: the reason, and the line.
fn protocol_error(stdout: &str, reason: &str, line: &str) {
    let failed =
        format!("PROCESS FAILED the outside broker failed: a line that is not the protocol: {reason}");
    assert!(stdout.contains(&failed), "{failed}\n{stdout}");
    assert!(
        stdout.contains(&format!("it replied:   {line}")),
        "{line}\n{stdout}"
    );
}

// 3. turn_fired only for a turn asksim fired.

/// A `turn_fired` asksim never asked for ended the agent's script and the run
/// passed.
#[test]
fn a_turn_fired_that_no_cancel_turn_fired_is_a_protocol_error() {
    let stdout = fails("quickstart.json", "turn_fired_wrong.py unasked");
    protocol_error(
        &stdout,
        "`turn_fired` of \"1.1\" to agent 1: no `cancel_turn` fired that turn in this life",
        "{\"do\":[",
    );
    assert!(
        stdout.contains("{\"turn_fired\":{\"agent\":1,\"turn\":\"1.1\"}}"),
        "{stdout}"
    );
    assert!(
        stdout.contains("asksim wrote: {\"t\":0.0,\"t_ns\":0,\"msg\":\"request\""),
        "{stdout}"
    );
}

/// A made-up turn id, even in the reply to a real `cancel_turn`.
#[test]
fn a_turn_fired_of_a_made_up_turn_id_is_a_protocol_error() {
    let stdout = fails("cancel-tree.json", "turn_fired_wrong.py made-up");
    protocol_error(
        &stdout,
        "`turn_fired` of \"99.1\" to agent 1: no `cancel_turn` fired that turn in this life",
        "{\"do\":[",
    );
    assert!(stdout.contains("\"msg\":\"cancel_turn\""), "{stdout}");
}

/// A `cancel_turn` owes `turn_fired` to every live agent its fired id
/// reaches: one left out ran on with its script.
#[test]
fn a_turn_fired_left_out_is_a_protocol_error() {
    let stdout = fails("cancel-tree.json", "turn_fired_wrong.py missing");
    protocol_error(
        &stdout,
        "the reply to the cancel_turn that fired \"1.1\" tells 1 of the 3 live agents whose current turn holds it \
         (`turn_fired`): each must hear it, its script ends",
        "{\"do\":[{\"turn_fired\":{\"agent\":1,\"turn\":\"1.1\"}}",
    );
}

// 4. Offers and verdicts against the call's state.

#[test]
fn an_offer_of_a_call_that_settled_is_a_protocol_violation() {
    let stdout = fails("quickstart.json", "offers_out_of_turn.py after-settle");
    assert!(
        stdout.contains("protocol_conformance") && stdout.contains("root/1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("an offer to web after the call settled"),
        "{stdout}"
    );
}

#[test]
fn an_offer_of_a_call_another_answerer_owns_is_a_protocol_violation() {
    let stdout = fails("quickstart.json", "offers_out_of_turn.py while-owned");
    assert!(
        stdout.contains("an offer to terminal while web owns the call"),
        "{stdout}"
    );
}

/// `accepted` for an offeree that never sent an accept made it the owner.
#[test]
fn an_accepted_nobody_sent_is_a_protocol_error() {
    let stdout = fails("quickstart.json", "offers_out_of_turn.py phantom-accept");
    protocol_error(
        &stdout,
        "`accepted` of ticket 1 for \"web\" outside the reply to that answerer's `accept` of that ticket \
         (nobody sent what it decides)",
        "{\"do\":[",
    );
    assert!(
        stdout.contains("asksim wrote: {\"t\":0.0,\"t_ns\":0,\"msg\":\"request\""),
        "{stdout}"
    );
}

// 5. What the owner of a registering child is owed.

/// No `spawned`: the owner's `spawn` step waited for good, and an
/// invariants-only sweep passed.
#[test]
fn a_missing_spawned_is_a_protocol_error_naming_the_owner() {
    let reason = "the reply to register of agent 2 (\"worker\", a child of agent 1) gives its owner no `spawned` \
                  (agent 1 waits for it)";
    let stdout = fails("delegated-child.json", "spawned_wrong.py missing");
    protocol_error(
        &stdout,
        reason,
        "{\"do\":[{\"registered\":{\"agent\":2,\"error\":null}}]}",
    );
    let out = asksim(
        &[
            "sweep",
            "scenarios/delegated-child.json",
            "--seeds",
            "0..2",
            "--invariants-only",
            "--broker-cmd",
            "python3 tests/fixtures/external/spawned_wrong.py missing",
        ],
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("0 passed, 2 failed") && stdout.contains(reason),
        "{stdout}"
    );
}

#[test]
fn a_spawned_about_another_child_or_with_another_verdict_is_a_protocol_error() {
    let stdout = fails("delegated-child.json", "spawned_wrong.py wrong-child");
    protocol_error(
        &stdout,
        "`spawned` to agent 1 about \"worker-2\" in the reply to the register of agent 2 (\"worker\"), a child of \
         agent 1: it goes to that owner, about that child",
        "{\"do\":[{\"spawned\"",
    );
    let stdout = fails("delegated-child.json", "spawned_wrong.py wrong-error");
    protocol_error(
        &stdout,
        "`spawned` tells agent 1 error \"duplicate_name\" about \"worker\", `registered` tells the child error \
         null: they carry the same verdict",
        "{\"do\":[{\"spawned\"",
    );
}

// 6. A withdrawal's reason is what asksim asked for.

/// Withdrawn "for cancel_call" when asksim cancelled nothing: the agent was
/// never told its question was gone, and no invariant fired.
#[test]
fn a_withdrawal_for_cancel_call_nobody_sent_is_a_protocol_error() {
    let stdout = fails("withdrawn-no-answerer.json", "withdraws_as_cancelled.py");
    protocol_error(
        &stdout,
        "root/1 withdrawn for `cancel_call` outside the reply to a `cancel_call` of it (asksim cancelled nothing: \
         a pending call nobody can answer is withdrawn for `NO_ANSWERER`, with its message)",
        "{\"do\":[",
    );
    assert!(
        stdout.contains("\"reason\":\"cancel_call\",\"message\":null"),
        "{stdout}"
    );
}

// 7. Smaller slips.

/// A second line behind a reply is blamed on the exchange it came with, not
/// taken as the reply to the next line.
#[test]
fn a_second_line_behind_a_reply_fails_that_exchange() {
    let stdout = fails("quickstart.json", "wire_slips.py extra-line");
    assert!(
        stdout.contains("PROCESS FAILED the outside broker failed: two lines in reply to one"),
        "{stdout}"
    );
    assert!(
        stdout.contains("asksim wrote: {\"t\":0.0,\"t_ns\":0,\"msg\":\"register\""),
        "{stdout}"
    );
    assert!(
        stdout.contains("it replied:   {\"do\":[{\"registered\":{\"agent\":1,\"error\":null}}]}\n                    {\"do\":[]}"),
        "{stdout}"
    );
}

#[test]
fn a_late_answer_message_that_is_not_compact_is_named_so() {
    let stdout = fails("pending-late-answer.json", "wire_slips.py spaced-late");
    protocol_error(
        &stdout,
        "the late answer's message for root/1 is not the compact text PROTOCOL.md 4.7 builds: from byte 8 it reads \
         \" \\\"answer_to_pending_question\\\", \\\"tool\\\": ",
        "{\"do\":[{\"late_answer\"",
    );
    assert!(!stdout.contains("questions differ"), "{stdout}");
}

#[test]
fn a_broker_that_closes_its_stdout_is_not_reported_as_killed_by_asksim() {
    let stdout = fails("quickstart.json", "wire_slips.py closes-stdout");
    assert!(
        stdout.contains(
            "PROCESS FAILED the outside broker failed: closed its stdout and did not exit (asksim killed it)"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("SIGKILL"), "{stdout}");
}

/// An outside answerer's `die` is the last thing it does: an accept behind it
/// made a dead answerer the owner.
#[test]
fn an_effect_after_die_is_a_protocol_error() {
    let out = asksim(&["run", "tests/fixtures/external/acts_after_die.json"], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "PROCESS FAILED the outside answerer tg failed: a line that is not the protocol: an effect after `die` \
             ({\"accept\":{\"ticket\":1}}): `die` is the last thing an answerer does"
        ),
        "{stdout}"
    );
}

/// `asksim actor broker` takes only what asksim writes: one hello, first, of
/// protocol 1, and time that never goes back. Each line it refuses ends it
/// (exit 2) with the reason and the line.
#[test]
fn asksims_own_broker_refuses_another_version_a_second_hello_and_time_going_back() {
    let hello = |protocol: u32, t_ns: u64| {
        format!(
            "{{\"t\":0.0,\"t_ns\":{t_ns},\"msg\":\"hello\",\"protocol\":{protocol},\"role\":\"broker\",\"life\":1,\
             \"scenario\":\"s\",\"seed\":0,\"config\":{{\"answerers\":[\"web\"],\"offer_timeout_ns\":1000000000,\
             \"limits\":{{\"open_calls_max\":10,\"agents_per_tree_max\":10}}}}}}"
        )
    };
    let register = |t_ns: u64| {
        format!(
            "{{\"t\":0.0,\"t_ns\":{t_ns},\"msg\":\"register\",\"agent\":1,\"name\":\"r\",\"owner\":null,\
             \"lineage\":null,\"turn\":[\"1.1\"]}}"
        )
    };
    let cases = [
        (
            vec![hello(2, 0)],
            "a hello of protocol 2; this implementation speaks 1",
        ),
        (vec![hello(1, 0), hello(1, 0)], "a second hello"),
        (vec![hello(1, 5), register(4)], "t_ns went backwards: 4 after 5"),
    ];
    for (lines, reason) in cases {
        let mut child = Command::new(env!("CARGO_BIN_EXE_asksim"))
            .args(["actor", "broker"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        for line in &lines {
            let _ = writeln!(stdin, "{line}");
        }
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{reason}: {stderr}");
        assert!(stderr.contains(reason), "{reason}: {stderr}");
        assert!(stderr.contains(lines.last().unwrap()), "the line: {stderr}");
    }
}
