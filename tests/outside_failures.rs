//! SPEC §10 "Its own failures are verdicts": an outside process that exits,
//! does not answer within the wall-clock limit, or writes a line that is not the
//! protocol fails the run (exit 1) with the reason, the offending line, the tail
//! of its stderr and the command that reproduces the run; never a panic, never a
//! hang. Each case breaks one rule and shows the report naming it.

use crate::common;

use common::asksim;

fn run_with_broker(broker: &str, env: &[(&str, &str)]) -> (i32, String, String) {
    let out = asksim(&["run", "scenarios/quickstart.json", "--broker-cmd", broker], env);
    let code = out.status.code().expect("asksim exits, it is not killed");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (code, stdout, stderr)
}

/// A broker written inline in Python: `body` runs after the hello is answered,
/// with `line` the first message after it.
fn python(body: &str) -> String {
    let script = format!(
        "import sys, json\nsys.stdin.readline()\nprint(json.dumps({{\"protocol\": 1, \"do\": []}}), flush=True)\nline = sys.stdin.readline()\n{body}\n"
    );
    format!("python3 -c {}", shlex::try_quote(&script).unwrap())
}

#[test]
fn a_broker_that_exits_fails_the_run_with_its_status_and_its_stderr() {
    let broker =
        python("sys.stderr.write('broker: giving up on ' + json.loads(line)['msg'] + '\\n')\nsys.exit(3)");
    let (code, stdout, _) = run_with_broker(&broker, &[]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("PROCESS FAILED the outside broker failed: exited (exit status: 3)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("asksim wrote: {\"t\":0.0,\"t_ns\":0,\"msg\":\"register\""),
        "{stdout}"
    );
    assert!(
        stdout.contains("broker: giving up on register"),
        "the tail of its stderr: {stdout}"
    );
    assert!(stdout.contains("result          FAIL"), "{stdout}");
    assert!(
        stdout.contains("reproduce with: asksim run scenarios/quickstart.json --seed 1 --clock virtual --explore random --broker-cmd "),
        "{stdout}"
    );
}

#[test]
fn a_broker_that_does_not_answer_is_killed_at_the_wall_clock_limit() {
    let (code, stdout, _) = run_with_broker("sleep 30", &[("ASKSIM_REPLY_WALL_S", "0.3")]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains(
            "PROCESS FAILED the outside broker failed: no reply within 0.3 s (wall clock) (sleep 30)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("\"msg\":\"hello\""),
        "what asksim wrote last: {stdout}"
    );
    // Regression: the reproduce command left the limit out, so it waited the
    // default 10 s and failed another way.
    assert!(
        stdout.contains(
            "reproduce with: ASKSIM_REPLY_WALL_S=0.3 asksim run scenarios/quickstart.json --seed 1"
        ),
        "{stdout}"
    );
}

#[test]
fn a_line_that_is_not_json_fails_the_run_and_is_shown() {
    let broker = python("print('registered, thanks!', flush=True)\nsys.stdin.readline()");
    let (code, stdout, _) = run_with_broker(&broker, &[]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("a line that is not the protocol: expected value at line 1 column 1"),
        "{stdout}"
    );
    assert!(stdout.contains("it replied:   registered, thanks!"), "{stdout}");
}

#[test]
fn an_unknown_effect_fails_the_run_naming_it() {
    let broker = python(
        "print(json.dumps({'do': [{'registerd': {'agent': 1, 'error': None}}]}), flush=True)\nsys.stdin.readline()",
    );
    let (code, stdout, _) = run_with_broker(&broker, &[]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("unknown variant `registerd`"), "{stdout}");
}

#[test]
fn a_reply_to_an_accept_without_a_verdict_is_a_protocol_error() {
    let (code, stdout, _) = run_with_broker("python3 tests/fixtures/external/drops_verdicts.py", &[]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("the reply to an accept of ticket 1 is neither `accepted` nor a refused accept"),
        "{stdout}"
    );
    assert!(stdout.contains("\"msg\":\"accept\""), "{stdout}");
}

/// Exactly one `registered`, in the reply to that agent's register: a second
/// one recorded the agent's spawn twice and the run passed.
#[test]
fn a_second_registered_is_a_protocol_error() {
    let (code, stdout, _) = run_with_broker("python3 tests/fixtures/external/registers_twice.py", &[]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("`registered` for agent 1 outside the reply to its register, or a second one"),
        "{stdout}"
    );
}

/// A process whose timer due at once starts the next, forever, never lets the
/// clock move and records nothing, so no limit stops the run: it fails as a
/// loop (PROTOCOL.md 6: asksim never hangs on what a process writes), where
/// asksim hung for good.
#[test]
fn a_loop_of_timers_due_at_once_fails_the_run_instead_of_hanging() {
    let (code, stdout, _) = run_with_broker("python3 tests/fixtures/external/timer_loop.py", &[]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("a loop of timers: 100000 timers due at once, each started when the last one fired"),
        "{stdout}"
    );
}

#[test]
fn a_broker_of_another_protocol_version_is_refused_at_hello() {
    let script = "import sys\nsys.stdin.readline()\nprint('{\"protocol\":2,\"do\":[]}', flush=True)\nsys.stdin.readline()";
    let broker = format!("python3 -c {}", shlex::try_quote(script).unwrap());
    let (code, stdout, _) = run_with_broker(&broker, &[]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("it speaks protocol 2; asksim speaks 1"),
        "{stdout}"
    );
}

/// Through the library (no CLI to check it first), a command that cannot start
/// fails the run, which says why.
#[test]
fn a_command_that_cannot_start_fails_a_library_run() {
    let scenario = asksim::scenario::load(std::path::Path::new("scenarios/quickstart.json")).unwrap();
    let broker = asksim::wire::Endpoint::parse("./no-such-broker --fast").unwrap();
    let options = asksim::sim::RunOptions {
        broker: Some(broker),
        ..asksim::sim::RunOptions::new(&scenario, scenario.seed, scenario.clock)
    };
    let output = asksim::sim::run_options(&scenario, options).expect("no log");
    let failure = output.process_failed.expect("the run failed");
    assert_eq!(failure.who, "broker");
    assert!(
        failure
            .reason
            .starts_with("could not start \"./no-such-broker\": "),
        "{failure:?}"
    );
}

#[test]
fn the_json_summary_carries_the_failure() {
    let out = asksim(
        &[
            "run",
            "scenarios/quickstart.json",
            "--json",
            "--broker-cmd",
            "python3 -c 'print(1)'",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let failed = &summary["process_failed"];
    assert_eq!(failed["who"], "broker");
    assert_eq!(failed["line"], "1");
    assert!(
        failed["reason"]
            .as_str()
            .unwrap()
            .starts_with("a line that is not the protocol")
    );
    // The reproduce command gives the broker back word for word.
    let words = shlex::split(summary["reproduce"].as_str().unwrap()).unwrap();
    let at = words
        .iter()
        .position(|w| w == "--broker-cmd")
        .expect("it names the broker");
    assert_eq!(
        shlex::split(&words[at + 1]).unwrap(),
        ["python3", "-c", "print(1)"]
    );
}

#[test]
fn a_sweep_counts_a_failed_process_as_a_failing_seed() {
    let out = asksim(
        &[
            "sweep",
            "scenarios/quickstart.json",
            "--seeds",
            "0..3",
            "--broker-cmd",
            "python3 -c 'print(1)'",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("0 passed, 3 failed"), "{stdout}");
    assert!(
        stdout.contains("PROCESS FAILED the outside broker failed"),
        "{stdout}"
    );
}

#[test]
fn an_answerer_process_that_dies_fails_the_run_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dies.json");
    let scenario = serde_json::json!({
        "name": "dies",
        "tool": { "mode": "timed", "timeout": 5 },
        "answerers": [ { "name": "tg", "process": ["python3", "-c", "import sys; sys.stdin.readline(); print('{\"protocol\":1,\"do\":[]}', flush=True); sys.stdin.readline()"] } ],
        "agents": [ { "name": "root", "script": [ { "ask": { "questions": [ { "id": "q", "question": "Go?", "header": "Go",
            "options": [ { "label": "Yes" }, { "label": "No" } ] } ] } } ] } ]
    });
    std::fs::write(&file, scenario.to_string()).unwrap();
    let out = asksim(&["run", file.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("PROCESS FAILED the outside answerer tg failed: exited (exit status: 0)"),
        "{stdout}"
    );
    assert!(stdout.contains("\"msg\":\"offer\""), "{stdout}");
}

#[test]
fn outside_implementations_on_the_real_clock_are_bad_input() {
    let out = asksim(
        &[
            "run",
            "scenarios/quickstart.json",
            "--clock",
            "real",
            "--broker-cmd",
            "asksim actor broker",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "asksim run: --broker-cmd and process answerers run on the virtual clock only (PROTOCOL.md); drop --clock real\n"
    );
    // Real by the file's own `clock`, it says how to run it on the virtual one,
    // for a sweep too, and before it starts the command (which cannot start).
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = dir.path().join("real.json");
    std::fs::write(&file, r#"{"name":"real","clock":"real"}"#).expect("written");
    let file = file.to_str().expect("UTF-8");
    for command in [&["run", file][..], &["sweep", file, "--seeds", "0..2"]] {
        let args = [command, &["--broker-cmd", "asksim-no-such-broker"]].concat();
        let out = asksim(&args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.ends_with(r#"run on the virtual clock only (PROTOCOL.md); add --clock virtual (the scenario's "clock" is "real")
"#),
            "{args:?}: {stderr}"
        );
    }
    let out = asksim(
        &[
            "run",
            "scenarios/quickstart.json",
            "--broker-cmd",
            "python3 'broker.py",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "an unclosed quote");
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not split into words"));
}

/// A command that cannot start is bad input (exit 2), named in one line on
/// stderr before anything runs: not a report of an empty run that failed (exit
/// 1), nor a sweep whose every seed fails the same way. Each command that
/// takes `--broker-cmd` checks it; `run` and `sweep` check a scenario's process
/// answerers too.
#[test]
fn a_command_that_cannot_start_is_bad_input_before_anything_runs() {
    let missing = "asksim-no-such-broker --flag";
    for command in [
        &["run", "scenarios/quickstart.json"][..],
        &["sweep", "scenarios/quickstart.json", "--seeds", "0..3"],
        &["explore", "--all", "scenarios/quickstart.json"],
        &[
            "shrink",
            "scenarios/quickstart.json",
            "-o",
            "/nonexistent/dir/min.json",
        ],
    ] {
        let out = asksim(&[command, &["--broker-cmd", missing]].concat(), &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {stderr}");
        let name = command[0];
        assert_eq!(
            stderr.trim_end(),
            format!(
                "asksim {name}: --broker-cmd: could not start \"asksim-no-such-broker\": No such file or directory (os error 2)"
            ),
            "{command:?}"
        );
        assert!(out.stdout.is_empty(), "{command:?}: no report");
    }
    let not_executable = asksim(
        &["run", "scenarios/quickstart.json", "--broker-cmd", "Cargo.toml"],
        &[],
    );
    assert_eq!(not_executable.status.code(), Some(2));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tg.json");
    let scenario = serde_json::json!({
        "name": "tg",
        "answerers": [ { "name": "tg", "process": ["asksim-no-such-answerer"] } ],
        "agents": [ { "name": "root", "script": [ { "ask": { "questions": [ { "id": "q", "question": "Go?", "header": "Go", "options": [ { "label": "Yes" }, { "label": "No" } ] } ] } } ] } ]
    });
    std::fs::write(&file, scenario.to_string()).unwrap();
    for command in [&["run"][..], &["sweep", "--seeds", "0..2"]] {
        let out = asksim(&[command, &[file.to_str().unwrap()]].concat(), &[]);
        let command = command[0];
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.starts_with(&format!(
                "asksim {command}: answerer \"tg\": process: could not start \"asksim-no-such-answerer\""
            )),
            "{command}: {stderr}"
        );
    }
}

#[test]
fn a_line_that_is_not_utf8_or_too_long_fails_the_run() {
    let not_utf8 = "import sys\nsys.stdin.readline()\nsys.stdout.buffer.write(b'{\"do\":\"\\xff\"}\\n')\nsys.stdout.flush()\nsys.stdin.readline()";
    let broker = format!("python3 -c {}", shlex::try_quote(not_utf8).unwrap());
    let (code, stdout, _) = run_with_broker(&broker, &[]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("the outside broker failed: a line that is not UTF-8"),
        "{stdout}"
    );
    let long = "import sys\nsys.stdin.readline()\nsys.stdout.write('x' * (17 << 20) + '\\n')\nsys.stdout.flush()\nsys.stdin.readline()";
    let broker = format!("python3 -c {}", shlex::try_quote(long).unwrap());
    let (code, stdout, _) = run_with_broker(&broker, &[]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("a line longer than 16777216 bytes"), "{stdout}");
    assert!(
        stdout.len() < 20_000,
        "the report shows the start of the line, not all of it"
    );
}
