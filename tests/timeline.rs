//! "See why, not only that" (issue #14): `asksim run --timeline` prints one
//! readable line per event, names aligned, process losses and restarts as rules,
//! results named by their recorded kind; a failing report prints, under each of
//! its first violations, the timeline of the call it names; expectation failures
//! print compact JSON.

use std::path::{Path, PathBuf};
use std::process::Command;

use asksim::event::{Event, EventKind};
use asksim::scenario;
use asksim::sim::judge::invariants::Violation;
use asksim::sim::show::timeline::{
    CALL_TIMELINE_LINES_MAX, VIOLATION_TIMELINES_MAX, call_timeline, timeline, violation_timeline,
};
use asksim::sim::{self, RunOutput};
use asksim::sim::{render_table_with_timelines, summarise};
use asksim::tool::{ErrorCode, ResultKind};
use serde_json::Value;

fn scenario_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name)
}

fn run(name: &str) -> RunOutput {
    let scenario = scenario::load(&scenario_path(name)).unwrap();
    sim::run(&scenario, scenario.seed, scenario.clock).unwrap()
}

/// Every scenario but the load ones (big, and nothing they do is not done by a
/// smaller one).
fn scenario_names() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") && !n.starts_with("load-"))
        .collect();
    names.sort();
    names
}

/// The agent or answerer a line names, as the log records it (written here
/// from the log's JSON fields, apart from the code under test), control
/// characters escaped.
fn actor(event: &Event) -> String {
    let v = serde_json::to_value(event).unwrap();
    let name = ["agent", "answerer"]
        .iter()
        .find_map(|key| v[key].as_str())
        .unwrap_or_else(|| match (v["event"].as_str(), v["callId"].as_str()) {
            (Some("cancel_call"), Some(call)) => call.rsplit_once('/').unwrap().0,
            _ => "",
        });
    name.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            }
        })
        .collect()
}

fn is_rule(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::ProcessLoss { .. } | EventKind::Restart { .. }
    )
}

/// Checks `lines` against `events` one for one: the time, then the actor padded
/// to the longest name, then the text, all texts in one column; rules of `─`.
fn assert_aligned(events: &[&Event], lines: &[String]) {
    assert_eq!(
        lines.len(),
        events.len(),
        "one line per event:\n{}",
        lines.join("\n")
    );
    let time_w = events
        .iter()
        .map(|e| format!("{:.3}", e.t).len())
        .max()
        .unwrap_or(0);
    let name_w = events.iter().map(|e| actor(e).chars().count()).max().unwrap_or(0);
    let name_at = time_w + " s  ".len();
    let text_at = name_at + name_w + 1;
    for (event, line) in events.iter().zip(lines) {
        let chars: Vec<char> = line.chars().collect();
        let time: String = chars[..time_w].iter().collect();
        assert_eq!(time.trim_start(), format!("{:.3}", event.t), "{line}");
        assert!(!line.contains('\n'), "{line:?}");
        if is_rule(event) {
            let rule: String = chars[name_at..].iter().collect();
            assert!(rule.starts_with("── ") && rule.ends_with("──"), "a rule: {line}");
            continue;
        }
        assert!(!line.contains('─'), "only losses and restarts are rules: {line}");
        let name: String = chars[name_at..text_at - 1].iter().collect();
        assert_eq!(name.trim_end(), actor(event), "{line}");
        assert_eq!(chars[text_at - 1], ' ', "{line}");
        assert_ne!(
            chars[text_at], ' ',
            "the text starts in the column after the names: {line}"
        );
        if let Some(call_id) = event.kind.call_id() {
            assert!(line[line.find(' ').unwrap()..].contains(call_id), "{line}");
        }
    }
}

#[test]
fn the_timeline_has_one_aligned_line_per_event_in_order_on_every_scenario() {
    for name in scenario_names() {
        let output = run(&name);
        // Every event but the log's closing `end`, which no actor did.
        let events: Vec<&Event> = (output.events().iter())
            .filter(|e| !matches!(e.kind, EventKind::End { .. }))
            .collect();
        assert!(!events.is_empty(), "{name}");
        assert!(
            matches!(
                output.events().last().map(|e| &e.kind),
                Some(EventKind::End { .. })
            ),
            "{name}: the log ends with its end"
        );
        assert_aligned(&events, &timeline(output.events()));
    }
}

/// Pins the format on the smallest run (docs/timelines.md shows longer ones,
/// which tests/docs.rs runs).
#[test]
fn quickstart_timeline_reads_as_pinned() {
    let output = run("quickstart.json");
    let expected = [
        r#"0.000 s  root spawned as a root"#,
        r#"0.000 s  root asks root/1 (timed, window 5 s): "Proceed with the destructive cleanup?""#,
        r#"0.000 s  web  is offered root/1"#,
        r#"0.000 s  web  accepts root/1"#,
        r#"2.000 s  web  answers root/1: ["Yes, delete them (Recommended)"] -> answered"#,
        r#"2.000 s  root gets answers for root/1: {"answers":[{"id":"cleanup","selected":["Yes, delete them (Recommended)"]}]}"#,
    ];
    assert_eq!(timeline(output.events()), expected);
}

#[test]
fn process_losses_and_restarts_are_rules_across_the_page() {
    for name in ["loss-during-window.json", "loss-twice.json"] {
        let output = run(name);
        let lines = timeline(output.events());
        let rules: Vec<(usize, &String)> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.contains("──"))
            .collect();
        let expected: Vec<usize> = (0..output.events().len())
            .filter(|&i| is_rule(&output.events()[i]))
            .collect();
        assert!(expected.len() >= 2, "{name} loses the process and restarts");
        assert_eq!(
            rules.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            expected,
            "{name}"
        );
        for (i, line) in rules {
            let what = match output.events()[i].kind {
                EventKind::ProcessLoss { .. } => "process loss (restart after 1 s)",
                _ => "restart",
            };
            assert!(line.contains(&format!("── {what}")), "{line}");
            assert!(line.chars().count() >= 72, "a rule spans the page: {line}");
        }
    }
}

#[test]
fn results_name_their_recorded_kind() {
    let mut kinds = std::collections::BTreeSet::new();
    for name in scenario_names() {
        let output = run(&name);
        let lines = timeline(output.events());
        for (event, line) in output.events().iter().zip(&lines) {
            let Some(kind) = event.kind.result_kind() else {
                continue;
            };
            let call_id = event.kind.call_id().unwrap();
            let named = match kind {
                ResultKind::Answers => format!("gets answers for {call_id}: "),
                ResultKind::Pending => format!("gets pending for {call_id}"),
                ResultKind::Error(code) => format!("gets error {code} for {call_id}: "),
            };
            assert!(line.contains(&named), "{name}: {line}");
            kinds.insert(kind.as_str());
        }
    }
    for kind in [
        "answers",
        "pending",
        "ABORTED",
        "NO_ANSWERER",
        "INVALID_ARGUMENTS",
        "DELEGATED_CALLER",
    ] {
        assert!(kinds.contains(kind), "the scenarios return {kind}: {kinds:?}");
    }
}

/// The kind comes from the event's typed field: a result whose text says
/// answers but whose recorded kind is `ABORTED` reads `ABORTED`.
#[test]
fn a_result_reads_its_kind_from_the_event_never_from_its_text() {
    let event = |outcome: &str| -> Event {
        let line = format!(
            r#"{{"seq":1,"t":1.0,"event":"result","callId":"root/1","agent":"root","result":"{{\"answers\":[]}}","is_error":false,"outcome":"{outcome}"}}"#
        );
        serde_json::from_str(&line).unwrap()
    };
    assert_eq!(
        event("ABORTED").kind.result_kind(),
        Some(ResultKind::Error(ErrorCode::Aborted))
    );
    let lines = timeline(&[event("ABORTED"), event("pending")]);
    assert!(lines[0].contains("gets error ABORTED for root/1"), "{}", lines[0]);
    assert!(lines[1].contains("gets pending for root/1"), "{}", lines[1]);
}

/// The requests of a `count` row share one questions text, which the timeline
/// reads once; a request with other questions still shows its own, whether it
/// comes between two that share a text or after them.
#[test]
fn each_request_shows_its_own_questions_shared_or_not() {
    let request = |seq: u64, call: &str, question: &str| -> Event {
        let line = format!(
            r#"{{"seq":{seq},"t":1.0,"event":"request","callId":"{call}","agent":"root","schema":"timed","keyed":true,"questions":[{{"id":"q","question":"{question}","header":"H","options":[{{"label":"A"}},{{"label":"B"}}]}}],"timeout":5,"window_s":5}}"#
        );
        serde_json::from_str(&line).unwrap()
    };
    let first = request(1, "root/1", "Go?");
    // A copy shares the questions text, as a `count` row's requests do.
    let shared = Event {
        seq: 2,
        ..first.clone()
    };
    let other = request(3, "root/3", "Stop?");
    let again = Event {
        seq: 4,
        ..first.clone()
    };
    let lines = timeline(&[first, shared, other, again]);
    for (line, asked) in lines.iter().zip(["\"Go?\"", "\"Go?\"", "\"Stop?\"", "\"Go?\""]) {
        assert!(line.ends_with(&format!(": {asked}")), "{line}");
    }
}

/// Every kind of event (a log line without `seq` and `t`) and what its line says.
const EVERY_KIND: [(&str, &str); 22] = [
    (
        r#"{"event":"spawn","agent":"root","owner":null,"lineage":null}"#,
        "spawned as a root",
    ),
    (
        r#"{"event":"spawn","agent":"kid\nx","owner":"root","lineage":"l"}"#,
        "spawned by root (lineage l)",
    ),
    (
        r#"{"event":"spawn_refused","agent":"kid","owner":"root","reason":"duplicate_name"}"#,
        "spawn refused: duplicate_name",
    ),
    (
        r#"{"event":"request","callId":"root/1","agent":"root","schema":"timed","keyed":true,"questions":{"odd":1},"timeout":-1,"window_s":-1}"#,
        r#"asks root/1 (timed, blocking (-1)): {"odd":1}"#,
    ),
    (
        r#"{"event":"offer","callId":"root/1","answerer":"web"}"#,
        "is offered root/1",
    ),
    (
        r#"{"event":"decline","callId":"root/1","answerer":"web","reason":"offer_timeout"}"#,
        "declines root/1 (offer_timeout)",
    ),
    (
        r#"{"event":"accept","callId":"root/1","answerer":"web"}"#,
        "accepts root/1",
    ),
    (
        r#"{"event":"hold","callId":"root/1","answerer":"web"}"#,
        "holds root/1",
    ),
    (
        r#"{"event":"answer","callId":"root/1","answerer":"web","batch":"odd"}"#,
        r#"answers root/1: "odd" -> refused: bad_batch"#,
    ),
    (
        r#"{"event":"refused","callId":"root/1","answerer":"web","what":"submit","reason":"bad_batch"}"#,
        "submit to root/1 refused: bad_batch",
    ),
    (
        r#"{"event":"answer","callId":"root/1","answerer":"web","batch":[{"id":"a","selected":["X"]},{"id":"b","selected":[],"custom":"two\nlines"}]}"#,
        r#"answers root/1: a: ["X"], b: [] custom "two\nlines" -> pending"#,
    ),
    (
        r#"{"event":"result","callId":"root/1","agent":"root","result":"{}","is_error":false,"outcome":"pending"}"#,
        "gets pending for root/1",
    ),
    (
        r#"{"event":"late_answer","callId":"root/1","agent":"root","answers":[{"id":"a","selected":["X"]}],"message":"{}"}"#,
        r#"gets a late answer to root/1: ["X"]"#,
    ),
    (
        r#"{"event":"user_message","callId":"root/1","agent":"root","message":"{\"kind\":\"answer_to_pending_question\"}"}"#,
        "gets a user message about root/1 (answer_to_pending_question)",
    ),
    (
        r#"{"event":"withdraw","callId":"root/2","agent":"root","reason":"cancel_call","message":null}"#,
        "has root/2 withdrawn: cancel_call",
    ),
    (
        r#"{"event":"cancel_call","callId":"root/2"}"#,
        "cancel_call root/2",
    ),
    (r#"{"event":"cancel","agent":"root"}"#, "turn cancelled"),
    (r#"{"event":"crash","answerer":"web"}"#, "crashes"),
    (r#"{"event":"stop","agent":"root"}"#, "stopped"),
    (
        r#"{"event":"process_loss","restart_after":1.5}"#,
        "── process loss (restart after 1.5 s) ──",
    ),
    (r#"{"event":"restart"}"#, "── restart from the log ──"),
    (
        r#"{"event":"dropped","what":{"at":3.0,"cancel_turn":"root"}}"#,
        r#"dropped {"at":3.0,"cancel_turn":"root"}"#,
    ),
];

/// Every kind of event, in one hand-made log, some of it odd (a line break in a
/// name and in custom text, questions that are not a list, a batch that is not
/// one): a line each, on one line, saying what happened.
#[test]
fn every_event_kind_has_a_line_and_odd_input_stays_on_it() {
    let log = EVERY_KIND;
    let events: Vec<Event> = log
        .iter()
        .enumerate()
        .map(|(i, (line, _))| {
            let mut value: Value = serde_json::from_str(line).unwrap();
            value["seq"] = (i as u64 + 1).into();
            value["t"] = (i as f64 * 10.0).into();
            serde_json::from_value(value).unwrap()
        })
        .collect();
    let kinds: std::collections::BTreeSet<String> = events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds.len(),
        20,
        "every kind of asksim::event::EventKind: {kinds:?}"
    );
    let lines = timeline(&events);
    assert_eq!(lines.len(), events.len());
    for ((_, says), line) in log.iter().zip(&lines) {
        assert!(line.contains(says), "{line:?} should say {says:?}");
    }
    assert!(
        lines[1].contains(r"kid\nx spawned by root"),
        "names are escaped too: {}",
        lines[1]
    );
    let shown: Vec<&Event> = events.iter().collect();
    assert_aligned(&shown, &lines);
}

#[test]
fn a_call_timeline_holds_the_calls_events_and_the_rules_only() {
    let output = run("race-submit-vs-owner-death.json");
    let lines = call_timeline(output.events(), "root/1");
    let shown: Vec<&Event> = output
        .events()
        .iter()
        .filter(|e| e.kind.call_id() == Some("root/1") || is_rule(e))
        .collect();
    assert_aligned(&shown, &lines);
    assert!(
        lines
            .iter()
            .all(|l| !l.contains("crashes") && !l.contains("spawned"))
    );
    let output = run("loss-during-window.json");
    let lines = call_timeline(output.events(), "root/1");
    assert_eq!(lines.iter().filter(|l| l.contains("──")).count(), 2, "{lines:#?}");
    assert!(
        call_timeline(output.events(), "nobody/9")
            .iter()
            .all(|l| l.contains("──"))
    );
}

/// A violation's timeline marks the offending event, shows it also when it is
/// not the call's own, and keeps a long call to its ends and that event.
#[test]
fn a_violation_timeline_marks_the_offending_event_and_is_bounded() {
    let mut log = vec![r#"{"event":"request","callId":"root/1","agent":"root","schema":"timed","keyed":true,"questions":[],"timeout":5,"window_s":5}"#.to_owned()];
    for i in 0..100 {
        log.push(format!(
            r#"{{"event":"offer","callId":"root/1","answerer":"a{i}"}}"#
        ));
        if i == 50 {
            log.push(r#"{"event":"cancel","agent":"root"}"#.to_owned());
        }
    }
    let events: Vec<Event> = log
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let mut value: Value = serde_json::from_str(line).unwrap();
            value["seq"] = (i as u64 + 1).into();
            value["t"] = (i as f64).into();
            serde_json::from_value(value).unwrap()
        })
        .collect();
    let cancel = events
        .iter()
        .find(|e| matches!(e.kind, EventKind::Cancel { .. }))
        .unwrap();
    let violation = Violation {
        invariant: "turn_cancel_settles_descendants",
        call_id: Some("root/1".into()),
        seq: cancel.seq,
        detail: "still waiting".into(),
    };
    let lines = violation_timeline(&events, &violation);
    let marked: Vec<&String> = lines.iter().filter(|l| l.starts_with("▶ ")).collect();
    assert_eq!(marked.len(), 1, "{lines:#?}");
    assert!(marked[0].contains("turn cancelled"), "{}", marked[0]);
    assert!(lines.len() <= CALL_TIMELINE_LINES_MAX + 3, "{}", lines.len());
    assert_eq!(
        lines.iter().filter(|l| l.contains("events not shown")).count(),
        2,
        "{lines:#?}"
    );
    assert!(lines[0].contains("asks root/1") && lines.last().unwrap().contains("a99"));
    let no_call = Violation {
        call_id: None,
        ..violation
    };
    assert_eq!(violation_timeline(&events, &no_call).len(), 1);
}

/// The run's report (the library path `asksim run` prints): under each of the
/// first violations, the named call's timeline; none past the bound.
#[test]
fn a_failing_run_report_prints_the_named_calls_timeline_under_each_violation() {
    let file = scenario_path("race-submit-vs-owner-death.json");
    let scenario = scenario::load(&file).unwrap();
    let output = sim::run(&scenario, scenario.seed, scenario.clock).unwrap();
    let mut summary = summarise(&scenario, "x", &output);
    let answer = output
        .events()
        .iter()
        .find(|e| matches!(e.kind, EventKind::Answer { .. }))
        .unwrap();
    for _ in 0..VIOLATION_TIMELINES_MAX + 2 {
        summary.invariants.violations.push(Violation {
            invariant: "exactly_once",
            call_id: Some("root/1".into()),
            seq: answer.seq,
            detail: "made up for this test".into(),
        });
    }
    let report = render_table_with_timelines(&summary, output.events());
    let call = call_timeline(output.events(), "root/1");
    let lines: Vec<&str> = report.lines().collect();
    let at: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("  VIOLATION"))
        .collect();
    assert_eq!(at.len(), VIOLATION_TIMELINES_MAX + 2);
    for (n, &i) in at.iter().enumerate() {
        let under: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| l.starts_with("    "))
            .copied()
            .collect();
        if n >= VIOLATION_TIMELINES_MAX {
            assert!(
                under.is_empty(),
                "only the first {VIOLATION_TIMELINES_MAX}: {report}"
            );
            continue;
        }
        assert_eq!(under.len(), call.len(), "{report}");
        for (shown, line) in under.iter().zip(&call) {
            assert_eq!(shown.chars().skip(6).collect::<String>(), *line, "{report}");
        }
        assert_eq!(under.iter().filter(|l| l.starts_with("    ▶ ")).count(), 1);
        assert!(
            under
                .iter()
                .any(|l| l.starts_with("    ▶ ") && l.contains("terminal answers root/1"))
        );
    }
    assert_eq!(
        asksim::sim::render_table(&summary).lines().count(),
        lines.len() - VIOLATION_TIMELINES_MAX * call.len(),
        "render_table prints no timelines"
    );
}

fn asksim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

#[test]
fn run_timeline_prints_every_event_after_the_summary_and_into_json() {
    let file = scenario_path("loss-during-window.json");
    let file = file.to_str().unwrap();
    let expected = timeline(run("loss-during-window.json").events());
    let out = asksim(&["run", file, "--timeline"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let (table, rest) = stdout
        .split_once(&format!("  timeline        {} events\n", expected.len()))
        .unwrap();
    assert!(
        table.contains("  result          PASS\n"),
        "after the summary: {stdout}"
    );
    let printed: Vec<&str> = rest.lines().collect();
    assert_eq!(printed.len(), expected.len());
    for (printed, line) in printed.iter().zip(&expected) {
        assert_eq!(*printed, format!("    {line}"));
    }
    let plain = asksim(&["run", file]);
    assert!(!String::from_utf8(plain.stdout).unwrap().contains("timeline"));

    let json = asksim(&["run", file, "--json", "--timeline"]);
    let summary: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(summary["timeline"], serde_json::json!(expected));
    let json = asksim(&["run", file, "--json"]);
    let summary: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(summary.get("timeline").is_none(), "only when asked");
}

/// `asksim replay` of a log that breaks an invariant prints the named call's
/// timeline under the violation, the offending event marked.
#[test]
fn replay_prints_the_named_calls_timeline_under_each_violation() {
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/violations/exactly_once.jsonl");
    let out = asksim(&["replay", log.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let (_, under) = stdout
        .split_once("  VIOLATION exactly_once (callId root/1, seq 7)")
        .unwrap();
    let under: Vec<&str> = under.lines().skip(1).collect();
    assert_eq!(
        under,
        [
            r#"      0.000 s  root asks root/1 (timed, window 5 s): "Which database?""#,
            r#"      0.000 s  web  is offered root/1"#,
            r#"      0.000 s  web  accepts root/1"#,
            r#"      5.000 s  web  answers root/1: ["SQLite"] -> answered"#,
            r#"      5.000 s  root gets answers for root/1: {"answers":[{"id":"db","selected":["SQLite"]}]}"#,
            r#"    ▶ 5.000 s  root gets pending for root/1"#,
        ],
        "{stdout}"
    );
}

/// A failed `user_messages` expectation prints both sides as compact JSON
/// (what `serde_json::to_string` gives), never Rust's debug form (`Object {`).
#[test]
fn a_failed_user_messages_expectation_prints_compact_json() {
    let text = std::fs::read_to_string(scenario_path("pending-late-answer.json")).unwrap();
    let mut scenario: Value = serde_json::from_str(&text).unwrap();
    let messages = &mut scenario["expect"]["user_messages"]["root"];
    let actual = messages.clone();
    messages[0]["answers"][0]["selected"][0] = "SQLite".into();
    let expected = messages.clone();
    let file = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    std::fs::write(file.path(), serde_json::to_string_pretty(&scenario).unwrap()).unwrap();
    let out = asksim(&["run", file.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let prefix = format!(
        "  EXPECTATION FAILED user_messages[root]: expected {}, got ",
        serde_json::to_string(&expected).unwrap()
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("{stdout}"));
    let got = &line[prefix.len()..];
    let got_value: Value = serde_json::from_str(got).unwrap();
    assert_eq!(got_value, actual);
    assert_eq!(serde_json::to_string(&got_value).unwrap(), got, "compact JSON");
    for debug in ["Object {", "Array [", "String(", "Number("] {
        assert!(!stdout.contains(debug), "{stdout}");
    }
}

/// On the real clock a process loss reads the log back into a new recorder: the
/// timeline and the Chrome trace, which watched the old one, go on past the
/// restart (they ended at the loss, the run's report silently short).
#[test]
fn a_real_clock_timeline_and_trace_go_on_past_a_process_loss() {
    let text = std::fs::read_to_string(scenario_path("loss-during-window.json")).unwrap();
    let mut scenario: Value = serde_json::from_str(&text).unwrap();
    // The same run at a twentieth of its times: under a second of wall time.
    scenario["answerers"][0]["latency"]["fixed"] = serde_json::json!(0.25);
    scenario["agents"][0]["script"][0]["ask"]["timeout"] = serde_json::json!(0.5);
    scenario["events"][0] = serde_json::json!({ "at": 0.15, "process_loss": { "restart_after": 0.05 } });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("loss.json");
    std::fs::write(&file, scenario.to_string()).unwrap();
    let trace = dir.path().join("trace.json");
    let (file, trace) = (file.to_str().unwrap(), trace.to_str().unwrap());
    let out = asksim(&[
        "run",
        file,
        "--clock",
        "real",
        "--json",
        "--timeline",
        "--chrome-trace",
        trace,
    ]);
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let timeline: Vec<&str> = (summary["timeline"].as_array().unwrap().iter())
        .map(|line| line.as_str().unwrap())
        .collect();
    // One line per event but the closing `end`.
    assert_eq!(
        timeline.len() as u64 + 1,
        summary["events"].as_u64().unwrap(),
        "{timeline:#?}"
    );
    let restart = (timeline.iter().position(|line| line.contains("restart")))
        .unwrap_or_else(|| panic!("a restart rule: {timeline:#?}"));
    assert!(
        timeline[restart..]
            .iter()
            .any(|line| line.contains("web  answers root/1")),
        "the late answer after the restart: {timeline:#?}"
    );
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(trace).unwrap()).unwrap();
    let names: Vec<&str> = (trace["traceEvents"].as_array().unwrap().iter())
        .filter_map(|event| event["name"].as_str())
        .collect();
    assert!(
        names.iter().any(|name| name.contains("restart")),
        "the trace goes on past the loss: {names:?}"
    );
}
