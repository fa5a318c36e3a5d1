//! A verdict users can trust (issue #9): each test pins one way a PASS or a FAIL
//! was wrong, from the smallest scenario or log that showed it, and fails if the
//! rule it pins breaks.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use asksim::event::{EventKind, RawQuestions};
use asksim::scenario::{self, Clock, Scenario, Strategy};
use asksim::sim::hunt::seeds::SeedRange;
use asksim::sim::hunt::sweep::{SweepOptions, sweep};
use asksim::sim::summarise;
use asksim::sim::{self, RunOutput};
use serde_json::{Value, json};
use tempfile::NamedTempFile;

fn scenario_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.json"))
}

fn load(name: &str) -> Scenario {
    scenario::load(&scenario_path(name)).unwrap_or_else(|e| panic!("{e}"))
}

fn run(scenario: &Scenario, seed: u64) -> RunOutput {
    sim::run(scenario, seed, Clock::Virtual).expect("a run")
}

fn asksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(args)
        .output()
        .expect("asksim runs")
}

/// A scenario file of the test's own, `tag` in its name, removed on drop.
fn temp_file(tag: &str, text: &str) -> NamedTempFile {
    let file = tempfile::Builder::new()
        .prefix(&format!("asksim-trust-{tag}-"))
        .suffix(".json")
        .tempfile()
        .expect("a temp file");
    std::fs::write(file.path(), text).expect("written");
    file
}

/// `file`'s path, as an argument.
fn arg(file: &NamedTempFile) -> &str {
    file.path().to_str().expect("a UTF-8 temp path")
}

const QUESTIONS: &str = r#"[{"id":"db","question":"Which database?","header":"Database","options":[{"label":"Postgres (Recommended)"},{"label":"SQLite"}]}]"#;

/// Issue #9.1: a turn cancelled after a restart does not wait for a call that was
/// in its window at the loss: it is pending since the restart and in no turn.
#[test]
fn a_turn_cancelled_after_a_restart_raises_no_false_alarm() {
    let scenario = load("cancel-after-restart");
    let output = run(&scenario, scenario.seed);
    let summary = summarise(&scenario, "cancel-after-restart", &output);
    assert!(summary.passed(), "{:?}", summary.invariants.violations);
    let kinds: Vec<&str> = output
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ProcessLoss { .. } => Some("loss"),
            EventKind::Restart { .. } => Some("restart"),
            EventKind::Cancel { .. } => Some("cancel"),
            EventKind::LateAnswer { .. } => Some("late"),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        ["loss", "restart", "cancel", "late"],
        "the cancel really came after the restart"
    );
}

/// Issue #9.3: a sweep whose runs panic fails every such seed, with its reproduce
/// command and the panic, and `runs` is the number of seeds asked for.
#[test]
fn a_sweep_whose_runs_panic_fails_each_seed_and_exits_1() {
    let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args([
            "sweep",
            scenario_path("quickstart").to_str().unwrap(),
            "--seeds",
            "0..6",
            "--json",
        ])
        .env(sim::PANIC_AFTER_ENV, "3")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["runs"], 6);
    assert_eq!(report["passed"], 0);
    let failed = report["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 6);
    for failure in failed {
        let crashed = failure["crashed"].as_str().expect("the panic is reported");
        assert!(crashed.contains("injected panic"), "{crashed}");
        assert!(failure["reproduce"].as_str().unwrap().starts_with("asksim run "));
    }
    assert!(
        out.stderr.is_empty(),
        "the panic is in the report, not on stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue #9.3 for `run`: a panic is a failed run (exit 1, `crashed`), never exit
/// 0 or 101.
#[test]
fn a_run_that_panics_exits_1_and_reports_the_crash() {
    let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(["run", scenario_path("quickstart").to_str().unwrap(), "--json"])
        .env(sim::PANIC_AFTER_ENV, "2")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        summary["crashed"]
            .as_str()
            .unwrap()
            .contains("after 2 deliveries")
    );
    assert!(summary["reproduce"].is_string());
}

/// Issue #9.4: seed ranges up to u64::MAX end, with every seed run once.
#[test]
fn a_sweep_up_to_the_last_seed_ends() {
    let range: SeedRange = "18446744073709551614..=18446744073709551615".parse().unwrap();
    assert_eq!((range.len(), range.seed(1)), (2, u64::MAX));
    let scenario = load("quickstart");
    let options = SweepOptions {
        file: "quickstart".into(),
        seeds: range,
        jobs: 2,
        clock: Clock::Virtual,
        strategy: Strategy::Random,
        invariants_only: true,
        shard: asksim::sim::hunt::seeds::Shard::WHOLE,
        answerers: Default::default(),
        broker: None,
    };
    let report = sweep(&scenario, &options, |_| {});
    assert_eq!(report.runs, 2);
    assert_eq!(report.passed, 2);
}

/// Issue #9.5: a late answer decided before a process loss reaches the resumed
/// agent exactly once, whether or not its message arrived before the loss.
#[test]
fn a_late_answer_in_flight_at_a_loss_is_delivered_once_after_the_restart() {
    let scenario = load("loss-late-answer-in-flight");
    let mut redelivered = 0;
    for seed in 0..60 {
        let output = run(&scenario, seed);
        let summary = summarise(&scenario, "loss-late-answer-in-flight", &output);
        assert!(
            summary.passed(),
            "seed {seed}: {:?}",
            summary.invariants.violations
        );
        let events = output.events();
        let restart = events
            .iter()
            .position(|e| matches!(e.kind, EventKind::Restart { .. }));
        let loss = events
            .iter()
            .position(|e| matches!(e.kind, EventKind::ProcessLoss { .. }));
        let decided = events
            .iter()
            .position(|e| matches!(e.kind, EventKind::LateAnswer { .. }));
        let received: Vec<usize> = events
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e.kind, EventKind::UserMessage { .. }))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(received.len(), 1, "seed {seed}: exactly once");
        if decided < loss && received[0] > restart.unwrap() {
            redelivered += 1;
        }
    }
    assert!(redelivered > 0, "some seed has the message in flight at the loss");
}

/// Issue #9.6: a fault still ahead does not keep a finished run going.
#[test]
fn a_crash_still_ahead_does_not_keep_a_finished_run_going() {
    let scenario = load("fault-after-work");
    let output = run(&scenario, scenario.seed);
    assert_eq!(output.virtual_s, 3.0);
    assert!(output.limit.is_none());
}

/// A crash still ahead keeps a run going only if it could change a call: its
/// answerer owns or is offered one. `web` owns the question and never answers;
/// `term`, whose crash is due at 100 s, has nothing. The run ended at 1 s with
/// the question pending; before, any open question made every fault count, so
/// it ran on to 100 s, and with a limit of 50 s a finished run failed as
/// `LIMIT HIT` (exit 1). When the crashing answerer is the owner, the crash
/// fails the question over (to `term`), so the run goes on to it.
#[test]
fn a_crash_that_can_change_no_call_does_not_keep_a_run_going() {
    let scenario = |crashes: &str, limit: f64| {
        let answerer = |name: &str| {
            let mut row =
                json!({"name": name, "accepts": "all", "latency": "never", "answer": "recommended"});
            if name == crashes {
                row["faults"] = json!({"crash_at": 100.0});
            }
            row
        };
        let text = json!({
            "name": "crash-ahead",
            "tool": {"mode": "timed", "timeout": 30},
            "answerers": [answerer("web"), answerer("term")],
            "agents": [{"name": "root", "script": [{"ask": {
                "questions": serde_json::from_str::<Value>(QUESTIONS).unwrap(), "timeout": 1}}]}],
            "limits": {"virtual_s_max": limit}
        });
        asksim::scenario::parse("crash-ahead.json", &text.to_string()).unwrap()
    };
    for limit in [50.0, 1000.0] {
        let idle = scenario("term", limit);
        let output = run(&idle, 0);
        assert_eq!((output.virtual_s, output.limit), (1.0, None), "limit {limit}");
        let summary = summarise(&idle, "crash-ahead.json", &output);
        assert!(summary.passed(), "{}", asksim::sim::render_table(&summary));
        assert_eq!(summary.outcomes.pending_open, 1);
    }
    let owner = scenario("web", 1000.0);
    let output = run(&owner, 0);
    assert_eq!(
        output.virtual_s, 100.0,
        "the owner's crash fails the question over"
    );
    let offers_to_term = (output.events().iter())
        .filter(|e| matches!(&e.kind, EventKind::Offer { answerer, .. } if &**answerer == "term"))
        .count();
    assert_eq!(offers_to_term, 1, "offered to term at the owner's crash");
}

/// A dead answerer's timers die with it, as on the real clock: killed by a
/// `crash_answerer` event (its own `crash_at` cancels them itself), its decision
/// due at 100 s does not keep a run whose calls all settled by 2 s going until
/// then (the run ended at 100 s before, with nothing after 2 s to show for it).
#[test]
fn a_dead_answerers_timers_do_not_keep_the_run_going() {
    let scenario = asksim::scenario::parse(
        "dead-timers.json",
        &json!({
            "name": "dead-timers",
            "tool": {"mode": "timed", "timeout": 30},
            "answerers": [
                {"name": "slow", "accepts": "all", "latency": 100.0, "answer": "recommended"},
                {"name": "web", "accepts": "all", "latency": 1.0, "answer": "recommended"}
            ],
            "agents": [{"name": "root", "script": [
                {"ask": {"questions": serde_json::from_str::<Value>(QUESTIONS).unwrap()}}]}],
            "events": [{"at": 1.0, "crash_answerer": "slow"}],
            "expect": {"counts": {"answered": 1}}
        })
        .to_string(),
    )
    .unwrap();
    let output = run(&scenario, 0);
    assert_eq!(output.virtual_s, 2.0, "web answers at 2 s; nothing is due after");
    assert!(asksim::sim::summarise(&scenario, "dead-timers.json", &output).passed());
}

/// Issue #9.6: an event past `limits.virtual_s_max` never fires; the run runs
/// everything before it, stops at the limit and fails naming it.
#[test]
fn an_event_past_the_limit_stops_the_run_at_the_limit() {
    let file = temp_file(
        "past-limit",
        &json!({
            "name": "past-limit",
            "tool": {"mode": "timed"},
            "answerers": [{"name": "web", "accepts": "all", "latency": 1.0, "answer": "recommended"}],
            "agents": [{"name": "root", "script": [{"work": 2.0}, {"ask": {"questions": serde_json::from_str::<Value>(QUESTIONS).unwrap(), "timeout": 5}}]}],
            "events": [{"at": 20.0, "stop_agent": "root"}],
            "limits": {"virtual_s_max": 10}
        })
        .to_string(),
    );
    let out = asksim(&["run", arg(&file), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["limit"], "virtual_s_max");
    assert_eq!(summary["virtual_s"], 10.0);
    assert_eq!(
        summary["outcomes"]["answered"], 1,
        "the script ran before the limit"
    );
    let log = temp_file("past-limit-log", "");
    let out = asksim(&["run", arg(&file), "--log", arg(&log)]);
    assert_eq!(out.status.code(), Some(1));
    let text = std::fs::read_to_string(log.path()).unwrap();
    assert!(
        !text.contains("\"event\":\"stop\""),
        "the event past the limit never fired"
    );
}

/// Issue #9.7: a hold dies with its holder. Past the window the call goes pending
/// at once, then fails over; inside it, the rest of the window runs.
#[test]
fn a_hold_dies_with_its_holder() {
    let after = run(&load("hold-dies-after-window"), 0);
    let pending_at = after.events().iter().find_map(|e| match &e.kind {
        EventKind::Result { call_id, .. } if call_id == "root/1" => Some(e.t),
        _ => None,
    });
    assert_eq!(pending_at, Some(10.0), "pending at the holder's death");
    let within = run(&load("hold-dies-within-window"), 0);
    let answered = within.events().iter().find_map(|e| match &e.kind {
        EventKind::Result { call_id, result, .. } if call_id == "root/1" => Some((e.t, result.clone())),
        _ => None,
    });
    assert_eq!(
        answered,
        Some((
            7.0,
            r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#.to_owned()
        ))
    );
}

/// Issue #9.8: the reproduce command carries every flag that changes the run.
#[test]
fn a_reproduce_command_names_the_clock_and_strategy_it_ran_under() {
    let file = temp_file(
        "real-clock",
        &json!({
            "name": "real-clock",
            "clock": "real",
            "tool": {"mode": "timed"},
            "agents": [{"name": "root", "script": [{"ask": {"questions": serde_json::from_str::<Value>(QUESTIONS).unwrap(), "timeout": 5}}]}],
            "expect": {"counts": {"answered": 1}}
        })
        .to_string(),
    );
    let out = asksim(&[
        "run",
        arg(&file),
        "--clock",
        "virtual",
        "--explore",
        "pct:3",
        "--seed",
        "9",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let command = format!(
        "asksim run {} --seed 9 --clock virtual --explore pct:3",
        arg(&file)
    );
    assert_eq!(summary["reproduce"], command.as_str());
    let mut args: Vec<&str> = command.split(' ').skip(1).collect();
    args.push("--json");
    let again = asksim(&args);
    let again: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(
        again["trace_hash"], summary["trace_hash"],
        "the command reproduces the run"
    );
}

/// Issue #9.9: the Chrome trace has a track for an answerer that only declines.
#[test]
fn the_chrome_trace_has_a_track_for_an_answerer_that_only_declines() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let trace_path = dir.path().join("trace.json");
    let out = asksim(&[
        "run",
        scenario_path("fail-over").to_str().unwrap(),
        "--chrome-trace",
        trace_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&trace_path).unwrap()).unwrap();
    let scenario = load("fail-over");
    let tracks: Vec<&str> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name" && e["pid"] == 2)
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    for answerer in &scenario.answerers {
        assert!(
            tracks.contains(&answerer.name.as_str()),
            "{} has no track in {tracks:?}",
            answerer.name
        );
    }
}

/// Issue #9.11: a spawn over the agents limit is logged, and the spawning script
/// sees the error (the scenario's `expect` pins the final result).
#[test]
fn a_spawn_over_the_limit_is_logged_and_seen() {
    let scenario = load("spawn-over-limit");
    let output = run(&scenario, 0);
    assert!(summarise(&scenario, "spawn-over-limit", &output).passed());
    let refused: Vec<(String, String)> = output
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SpawnRefused { agent, reason, .. } => Some((agent.to_string(), reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(refused, [("second".to_owned(), "LIMIT_EXCEEDED".to_owned())]);
}

/// Issue #9.13: restored questions are the text the model sent, not a
/// re-serialisation: from the log line, through the projection, into the late
/// answer's message.
#[test]
fn restored_questions_keep_the_text_the_model_sent() {
    let spaced = r#"[ {"id":"db",  "question":"Which database?","header":"Database", "options":[{"label":"SQLite"},{"label":"Postgres"}]} ]"#;
    let log = format!(
        "{}\n{}\n{}\n{}\n",
        r#"{"format":"asksim-log","version":1,"stateVersion":3,"scenario":"s","seed":1}"#,
        r#"{"seq":1,"t":0.0,"event":"spawn","agent":"root","owner":null,"lineage":null}"#,
        format_args!(
            r#"{{"seq":2,"t":0.0,"event":"request","callId":"root/1","agent":"root","schema":"timed","keyed":true,"questions":{spaced},"timeout":5.0,"window_s":5.0}}"#
        ),
        r#"{"seq":3,"t":1.0,"event":"process_loss","restart_after":1.0}"#,
    );
    let (_, events) = asksim::log::parse(&log).unwrap();
    let projection = asksim::projection::Projection::fold(&events);
    let plan = asksim::restart::plan(&projection);
    let ask = plan.reopened[0].ask.clone().expect("restorable");
    assert_eq!(ask.questions_raw.get(), spaced);
    let items = vec![asksim::tool::AnswerItem {
        id: "db".into(),
        selected: vec!["SQLite".into()],
        custom: None,
    }];
    let message = asksim::tool::result::late_answer_message("root/1", ask.questions_raw.get(), &items);
    assert!(message.contains(spaced), "{message}");
    // A text with a line break is logged compacted in `questions` and exactly in
    // `questions_text`, and read back exactly.
    let multiline = "[\n  {\"id\":\"db\",\"question\":\"Which database?\",\"header\":\"Database\",\"options\":[{\"label\":\"A\"},{\"label\":\"B\"}]}\n]";
    let event = asksim::event::Event {
        seq: 1,
        t: 0.0,
        kind: EventKind::Request {
            call_id: "root/1".into(),
            agent: "root".into(),
            schema: asksim::tool::Schema::Timed,
            keyed: true,
            questions: RawQuestions::new(multiline).unwrap(),
            questions_text: Some(multiline.to_owned()),
            timeout: None,
            window_s: Some(5.0),
            mbox: None,
        },
    };
    let line = serde_json::to_string(&event).unwrap();
    assert!(!line.contains('\n'), "one line per event");
    let header = r#"{"format":"asksim-log","version":1,"stateVersion":3,"scenario":"s","seed":1}"#;
    let (_, back) = asksim::log::parse(&format!("{header}\n{line}\n")).unwrap();
    let projection = asksim::projection::Projection::fold(&back);
    assert_eq!(
        projection.questions["root/1"].questions.as_ref().unwrap().text(),
        multiline
    );
}

/// Issue #9, "Real-clock end": a real-clock run does not end while a message is
/// in flight. The answerer builds and submits a batch of 100,000 items, which the
/// broker records and refuses: the run must end only after the refusal (a run that
/// ended early would lose it: no_answer_lost). `tests/actor_runtime.rs` pins the
/// account of messages in flight this end relies on.
#[test]
fn a_real_clock_run_does_not_end_while_a_message_is_in_flight() {
    let items: Vec<Value> = (0..100_000)
        .map(|i| json!({"id": format!("q{i}"), "selected": ["Postgres (Recommended)"]}))
        .collect();
    let file = temp_file(
        "in-flight",
        &json!({
            "name": "in-flight",
            "clock": "real",
            "tool": {"mode": "timed"},
            "broker": {"offer_timeout": 600},
            "answerers": [{"name": "web", "accepts": "all", "latency": 0, "answer": {"batch": items}}],
            "agents": [{"name": "root", "script": [{"ask": {"questions": serde_json::from_str::<Value>(QUESTIONS).unwrap(), "timeout": -1}}]}]
        })
        .to_string(),
    );
    let log = temp_file("in-flight-log", "");
    let out = asksim(&["run", arg(&file), "--json", "--log", arg(&log)]);
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["invariants"]["violations"], json!([]), "{summary}");
    let text = std::fs::read_to_string(log.path()).unwrap();
    let mut lines = text.lines().rev();
    let end = lines.next().unwrap();
    assert!(
        end.contains("\"event\":\"end\""),
        "the log ends with its end: {end}"
    );
    let last = lines.next().unwrap();
    assert!(
        last.contains("\"event\":\"refused\""),
        "the refusal was recorded before the end: {}",
        &last[..last.len().min(200)]
    );
}

/// Issue #9.8, continued: a reproduce command pastes back exactly even when the
/// file's path holds a space and a quote (the path is quoted for a POSIX shell;
/// `explore` and `shrink` print theirs through the same `shell_word`).
#[test]
fn a_reproduce_command_quotes_a_path_a_shell_would_split() {
    let text = std::fs::read_to_string(scenario_path("failing/many-agents")).unwrap();
    let file = temp_file("it's a dir name", &text);
    let out = asksim(&["run", arg(&file), "--json"]);
    assert_eq!(out.status.code(), Some(1), "the example fails");
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let command = summary["reproduce"].as_str().unwrap().to_owned();
    let words = shlex::split(&command).expect("a command a shell can read");
    assert_eq!(words[2], arg(&file), "{command}");
    let mut args: Vec<&str> = words.iter().skip(1).map(String::as_str).collect();
    args.push("--json");
    let again: Value = serde_json::from_slice(&asksim(&args).stdout).unwrap();
    assert_eq!(again["trace_hash"], summary["trace_hash"], "{command}");
}

/// A reader that closes stdout early (`asksim run … --timeline | head -1`) ends
/// the command with 141, as SIGPIPE ends a C tool: no panic message, and not 0
/// (a verdict nobody read is no pass).
#[test]
fn a_closed_stdout_ends_the_command_with_141_and_no_panic() {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(["run", scenario_path("load-small").to_str().unwrap(), "--timeline"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("asksim starts");
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The pipe is closed here, with most of the timeline still to print.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Any other failure to print (stdout on a full disk, `/dev/full`) ends every
/// printing command with the error said and exit 1: before, `print!` panicked
/// (exit 101, a panic message and a backtrace).
#[cfg(target_os = "linux")]
#[test]
fn a_stdout_that_cannot_be_written_is_said_never_a_panic() {
    let quickstart = scenario_path("quickstart");
    let quickstart = quickstart.to_str().unwrap();
    for args in [
        vec!["run", quickstart],
        vec!["run", quickstart, "--json"],
        vec!["sweep", quickstart, "--seeds", "0..3"],
        vec!["explore", quickstart, "--all"],
    ] {
        let full = std::fs::File::options().write(true).open("/dev/full").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
            .args(&args)
            .stdout(full)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("asksim: cannot write to stdout: No space left on device"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
