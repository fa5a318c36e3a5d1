//! The scenario file format, SPEC §5: what a file means once loaded, and every
//! class of bad file refused with its name and, where one exists, its position.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use asksim::limits::{AGENTS_PER_TREE_MAX, OPEN_CALLS_MAX};
use asksim::scenario::{
    self, Accepts, Action, AgentSpec, AnswerPolicy, AnswererSpec, BrokerSpec, Clock, EventSpec, Latency,
    Limits, PCT_DEPTH_MAX, Policy, Scenario, ScenarioError, Step, VIRTUAL_S_MAX_MAX,
};
use asksim::tool::{Mode, Timeout, ToolConfig};
use proptest::prelude::*;
use serde_json::{Value, json};

/// The example of SPEC §5, verbatim.
const SPEC_EXAMPLE: &str = r#"{
  "name": "cleanup-confirm",
  "about": "A root asks to confirm a cleanup; the web client picks the recommended option after 2 s.",
  "seed": 1,
  "clock": "virtual",
  "tool": { "mode": "timed", "timeout": 30 },
  "broker": { "offer_timeout": 1.0 },
  "answerers": [
    { "name": "web", "accepts": "keyed", "latency": { "fixed": 2.0 }, "answer": "recommended" },
    { "name": "terminal", "accepts": "all", "latency": { "uniform": [1.0, 5.0] }, "answer": { "option": 1 } }
  ],
  "agents": [
    { "name": "root", "script": [
        { "ask": { "questions": [ { "id": "cleanup", "question": "Proceed with the destructive cleanup?",
                                     "header": "Confirm", "options": [ { "label": "Yes, delete them (Recommended)", "description": "Removes the three stale files." },
                                                                       { "label": "No, keep them", "description": "Aborts the cleanup." } ] } ],
                   "timeout": 5 } },
        { "work": 1.0 }
    ] }
  ],
  "events": [ { "at": 30.0, "cancel_turn": "root" } ],
  "expect": {
    "results": { "root/1": { "answers": [ { "id": "cleanup", "selected": [ "Yes, delete them (Recommended)" ] } ] } },
    "counts": { "answered": 1 }
  }
}"#;

fn parse(value: Value) -> Result<Scenario, ScenarioError> {
    scenario::parse("test.json", &serde_json::to_string_pretty(&value).unwrap())
}

fn parsed(value: Value) -> Scenario {
    parse(value).unwrap_or_else(|err| panic!("expected a valid scenario: {err}"))
}

/// The error for `value`, which must be refused, and whose message must hold
/// `needle`.
fn refused(value: Value, needle: &str) -> ScenarioError {
    let err = parse(value).expect_err("expected the scenario to be refused");
    assert_eq!(err.file, "test.json");
    assert!(
        err.message.contains(needle),
        "expected {needle:?} in the error, got: {err}"
    );
    err
}

fn answerer(name: &str) -> Value {
    json!({ "name": name, "accepts": "all", "latency": { "fixed": 1.0 }, "answer": "recommended" })
}

fn with_agents(agents: Value) -> Value {
    json!({ "name": "t", "agents": agents })
}

fn root(script: Value) -> Value {
    with_agents(json!([{ "name": "root", "script": script }]))
}

fn names(agents: &[Arc<AgentSpec>]) -> Vec<&str> {
    agents.iter().map(|a| a.name.as_str()).collect()
}

// ---------------------------------------------------------------------------------
// What a good file means.

#[test]
fn spec_example_parses_into_the_expected_structure() {
    let scenario = scenario::parse("cleanup-confirm.json", SPEC_EXAMPLE).unwrap();
    let arguments = concat!(
        r#"{"questions":[{"id":"cleanup","question":"Proceed with the destructive cleanup?","#,
        r#""header":"Confirm","options":[{"label":"Yes, delete them (Recommended)","description":"Removes the three stale files."},"#,
        r#"{"label":"No, keep them","description":"Aborts the cleanup."}]}],"timeout":5}"#
    );
    let expected = Scenario {
        name: "cleanup-confirm".into(),
        about: "A root asks to confirm a cleanup; the web client picks the recommended option after 2 s."
            .into(),
        seed: 1,
        clock: Clock::Virtual,
        tool: ToolConfig::timed(Timeout::Window(30.0)),
        broker: BrokerSpec {
            offer_timeout_s: 1.0,
            open_calls_max: None,
            agents_per_tree_max: None,
        },
        answerers: vec![
            AnswererSpec {
                name: "web".into(),
                process: None,
                policy: Policy {
                    accepts: Accepts::Keyed,
                    offer_latency: Latency::Fixed(0.0),
                    latency: Latency::Fixed(2.0),
                    answer: AnswerPolicy::Recommended,
                    hold_after_s: None,
                    crash_at_s: None,
                    crash_after_accepts: None,
                },
            },
            AnswererSpec {
                name: "terminal".into(),
                process: None,
                policy: Policy {
                    accepts: Accepts::All,
                    offer_latency: Latency::Fixed(0.0),
                    latency: Latency::Uniform(1.0, 5.0),
                    answer: AnswerPolicy::Option(1),
                    hold_after_s: None,
                    crash_at_s: None,
                    crash_after_accepts: None,
                },
            },
        ],
        agents: vec![Arc::new(AgentSpec {
            name: "root".into(),
            lineage_parent: None,
            script: vec![
                Step::Ask {
                    arguments: arguments.into(),
                },
                Step::Work(1.0),
            ]
            .into(),
            on_resume: Arc::from([]),
        })],
        events: vec![EventSpec {
            at_s: 30.0,
            action: Action::CancelTurn("root".into()),
        }],
        jitter_max_s: None,
        limits: Limits {
            virtual_s_max: 86_400.0,
            events_max: 10_000_000,
        },
        explore: None,
        expect: Some(scenario::Expect {
            results: BTreeMap::from([(
                "root/1".to_owned(),
                json!({ "answers": [ { "id": "cleanup", "selected": [ "Yes, delete them (Recommended)" ] } ] }),
            )]),
            user_messages: BTreeMap::new(),
            counts: BTreeMap::from([("answered".to_owned(), 1)]),
            final_results: BTreeMap::new(),
        }),
    };
    assert_eq!(scenario, expected);
}

#[test]
fn omitted_keys_take_their_defaults() {
    let scenario = parsed(json!({ "name": "minimal" }));
    assert_eq!(scenario.about, "");
    assert_eq!(scenario.seed, 0);
    assert_eq!(scenario.clock, Clock::Virtual);
    assert_eq!(scenario.tool, ToolConfig::default());
    assert_eq!(scenario.tool.mode, Mode::Legacy);
    assert_eq!(scenario.broker.offer_timeout_s, 1.0);
    assert_eq!(scenario.limits, Limits::default());
    assert_eq!(scenario.jitter_max_s, None);
    assert!(scenario.answerers.is_empty() && scenario.agents.is_empty());
    assert!(scenario.events.is_empty() && scenario.expect.is_none());
}

#[test]
fn every_optional_key_is_read() {
    let scenario = parsed(json!({
        "name": "all", "clock": "real", "jitter": { "max": 0.01 },
        "limits": { "virtual_s_max": 100.0, "events_max": 5000 },
        "answerers": [{ "name": "bot", "accepts": { "agents": ["worker-*"] },
            "offer_latency": { "exp": 0.5 }, "latency": "never", "answer": { "batch": [{ "id": "q" }] },
            "hold": { "after": 0.5 }, "faults": { "crash_at": 7.0, "crash_after_accepts": 3 } }],
        "agents": [{ "name": "root", "lineage": { "parent": "ghost" },
            "script": [{ "ask_raw": [1, "x"] }, { "ask_unresolved": { "timeout": -1 } }, { "await_answer": "root/1" }],
            "on_resume": [{ "ask_unresolved": {} }] }],
        "events": [{ "at": 3.0, "process_loss": { "restart_after": 2.0 } }]
    }));
    assert_eq!(scenario.clock, Clock::Real);
    assert_eq!(scenario.jitter_max_s, Some(0.01));
    assert_eq!(
        scenario.limits,
        Limits {
            virtual_s_max: 100.0,
            events_max: 5000
        }
    );
    let bot = &scenario.answerers[0];
    assert_eq!(bot.policy.accepts, Accepts::Agents(vec!["worker-*".into()]));
    assert_eq!(bot.policy.offer_latency, Latency::Exp(0.5));
    assert_eq!(bot.policy.latency, Latency::Never);
    assert_eq!(bot.policy.answer, AnswerPolicy::Batch(json!([{ "id": "q" }])));
    assert_eq!(
        (
            bot.policy.hold_after_s,
            bot.policy.crash_at_s,
            bot.policy.crash_after_accepts
        ),
        (Some(0.5), Some(7.0), Some(3))
    );
    let root = &scenario.agents[0];
    assert_eq!(root.lineage_parent.as_deref(), Some("ghost"));
    assert_eq!(
        *root.script,
        [
            Step::AskRaw {
                arguments: r#"[1,"x"]"#.into()
            },
            Step::AskUnresolved { timeout: Some(-1.0) },
            Step::AwaitAnswer(1),
        ]
    );
    assert_eq!(*root.on_resume, [Step::AskUnresolved { timeout: None }]);
    assert_eq!(
        scenario.events[0].action,
        Action::ProcessLoss { restart_after_s: 2.0 }
    );
}

#[test]
fn ask_arguments_keep_the_authors_key_order_and_are_not_validated() {
    let scenario = parsed(root(
        json!([{ "ask": { "zeta": 1, "alpha": { "b": 2, "a": [] } } }]),
    ));
    assert_eq!(
        *scenario.agents[0].script,
        [Step::Ask {
            arguments: r#"{"zeta":1,"alpha":{"b":2,"a":[]}}"#.into()
        }]
    );
}

#[test]
fn count_fans_out_rows_with_i_substituted_in_names_and_references() {
    let scenario = parsed(json!({
        "name": "fan",
        "answerers": [
            { "name": "bot-{i}", "count": 3, "accepts": "keyed", "latency": { "fixed": 1.0 }, "answer": "skip" },
            answerer("human")
        ],
        "agents": [{ "name": "root-{i}", "count": 2, "lineage": { "parent": "session-{i}" }, "script": [
            { "spawn": { "name": "child-{i}", "script": [
                { "spawn": { "name": "grandchild-{i}" } }, { "join": "grandchild-{i}" } ] } },
            { "join": "child-{i}" },
            { "await_answer": "root-{i}/1" },
            { "ask": { "note": "{i} stays verbatim in arguments" } }
        ] }],
        "events": [{ "at": 1.0, "stop_agent": "grandchild-1" }, { "at": 1.0, "crash_answerer": "bot-2" }]
    }));
    let answerers: Vec<&str> = scenario.answerers.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(answerers, ["bot-0", "bot-1", "bot-2", "human"]);
    assert_eq!(names(&scenario.agents), ["root-0", "root-1"]);
    let all: Vec<&str> = scenario.all_agents().iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        all,
        [
            "root-0",
            "child-0",
            "grandchild-0",
            "root-1",
            "child-1",
            "grandchild-1"
        ]
    );
    let second = &scenario.agents[1];
    assert_eq!(second.lineage_parent.as_deref(), Some("session-1"));
    let Step::Spawn(child) = &second.script[0] else {
        panic!("expected a spawn")
    };
    assert_eq!(child.name, "child-1");
    assert_eq!(child.lineage_parent.as_deref(), Some("root-1"));
    assert_eq!(child.script[1], Step::Join("grandchild-1".into()));
    assert_eq!(second.script[1], Step::Join("child-1".into()));
    assert_eq!(second.script[2], Step::AwaitAnswer(1));
    assert_eq!(
        second.script[3],
        Step::Ask {
            arguments: r#"{"note":"{i} stays verbatim in arguments"}"#.into()
        }
    );
}

/// SPEC §6 "Cost": the copies of a `count` row whose scripts name nothing share
/// one list of steps; a row whose scripts spawn, join or await gets its own per
/// copy, substituted.
#[test]
fn copies_of_a_count_row_share_a_script_that_names_nothing() {
    let scenario = parsed(with_agents(json!([
        { "name": "asker-{i}", "count": 3, "script": [
            { "ask": { "note": "{i} stays verbatim" } }, { "work": 1.0 } ],
          "on_resume": [{ "work": 2.0 }] },
        { "name": "parent-{i}", "count": 2, "script": [
            { "spawn": { "name": "kid-{i}" } }, { "join": "kid-{i}" } ] }
    ])));
    let [a, b, c, p, q] = &scenario.agents[..] else {
        panic!("expected five roots, got {:?}", names(&scenario.agents))
    };
    assert_eq!(
        names(&scenario.agents),
        ["asker-0", "asker-1", "asker-2", "parent-0", "parent-1"]
    );
    assert!(Arc::ptr_eq(&a.script, &b.script) && Arc::ptr_eq(&b.script, &c.script));
    assert!(Arc::ptr_eq(&a.on_resume, &c.on_resume));
    assert_eq!(
        *c.script,
        [
            Step::Ask {
                arguments: r#"{"note":"{i} stays verbatim"}"#.into()
            },
            Step::Work(1.0)
        ]
    );
    assert_eq!(*c.on_resume, [Step::Work(2.0)]);
    assert!(
        !Arc::ptr_eq(&p.script, &q.script),
        "each parent spawns its own kid"
    );
    assert_eq!(q.script[1], Step::Join("kid-1".into()));
    let (Step::Spawn(kid_p), Step::Spawn(kid_q)) = (&p.script[0], &q.script[0]) else {
        panic!("expected spawns")
    };
    assert_eq!((&*kid_p.name, &*kid_q.name), ("kid-0", "kid-1"));
    assert!(
        Arc::ptr_eq(&kid_p.script, &kid_q.script),
        "their kids' scripts name nothing"
    );
}

/// An `await_answer` of the copy's own call names no agent once parsed (the
/// call's number), so the copies share it; one that names another agent's call
/// is refused at the copy it does not fit, and a number that differs by copy
/// is substituted per copy.
#[test]
fn copies_of_a_count_row_share_an_await_of_their_own_call() {
    let scenario = parsed(with_agents(json!([
        { "name": "late-{i}", "count": 3, "script": [{ "ask": {} }, { "await_answer": "late-{i}/1" }],
          "on_resume": [{ "await_answer": "late-{i}/1" }] },
        { "name": "own-{i}", "count": 2, "script": [{ "await_answer": "own-{i}/1{i}" }] }
    ])));
    let [a, b, c, p, q] = &scenario.agents[..] else {
        panic!("expected five roots, got {:?}", names(&scenario.agents))
    };
    assert!(Arc::ptr_eq(&a.script, &b.script) && Arc::ptr_eq(&b.script, &c.script));
    assert!(Arc::ptr_eq(&a.on_resume, &c.on_resume));
    assert_eq!(c.script[1], Step::AwaitAnswer(1));
    assert_eq!(*c.on_resume, [Step::AwaitAnswer(1)]);
    assert_eq!(
        (&*p.script, &*q.script),
        (&[Step::AwaitAnswer(10)][..], &[Step::AwaitAnswer(11)][..])
    );
    refused(
        with_agents(json!([
            { "name": "late-{i}", "count": 2, "script": [{ "await_answer": "late-0/1" }] }
        ])),
        "agents[0].script[0].await_answer: expected a call of this agent, \"late-1/<n>\"",
    );
}

/// The children a `repeat` spawns share their scripts when these name nothing
/// (an await of the child's own call included), as the copies of a `count` row
/// do; a child whose script spawns, joins or awaits another's call gets its own.
#[test]
fn children_of_a_repeat_share_a_script_that_names_nothing() {
    let scenario = parsed(root(json!([
        { "repeat": { "times": 3, "script": [
            { "spawn": { "name": "leaf-{r}", "script": [{ "ask": {} }, { "await_answer": "leaf-{r}/1" }],
                         "on_resume": [{ "work": 2.0 }] } },
            { "spawn": { "name": "tree-{r}", "script": [{ "spawn": { "name": "sub-{r}" } }] } }
        ] } }
    ])));
    let spawned: Vec<&AgentSpec> = (scenario.agents[0].script.iter())
        .map(|step| match step {
            Step::Spawn(child) => &**child,
            other => panic!("expected a spawn, got {other:?}"),
        })
        .collect();
    let [l0, t0, l1, _, l2, t2] = spawned[..] else {
        panic!("expected six spawns")
    };
    assert_eq!((&*l0.name, &*l2.name, &*t2.name), ("leaf-0", "leaf-2", "tree-2"));
    assert!(Arc::ptr_eq(&l0.script, &l1.script) && Arc::ptr_eq(&l1.script, &l2.script));
    assert!(Arc::ptr_eq(&l0.on_resume, &l2.on_resume));
    assert_eq!(
        *l2.script,
        [
            Step::Ask {
                arguments: "{}".into()
            },
            Step::AwaitAnswer(1)
        ]
    );
    assert!(
        !Arc::ptr_eq(&t0.script, &t2.script),
        "each tree spawns its own sub"
    );
    let Step::Spawn(sub) = &t2.script[0] else {
        panic!("expected a spawn")
    };
    assert_eq!(&*sub.name, "sub-2");
    let Step::Spawn(sub0) = &t0.script[0] else {
        panic!("expected a spawn")
    };
    assert!(Arc::ptr_eq(&sub0.script, &sub.script), "shared at any depth");
    refused(
        root(json!([{ "repeat": { "times": 2, "script": [
            { "spawn": { "name": "c-{r}", "script": [{ "await_answer": "c-0/1" }] } } ] } }])),
        "expected a call of this agent, \"c-1/<n>\"",
    );
}

#[test]
fn repeat_is_unrolled_with_r_substituted_in_spawns_and_references() {
    let scenario = parsed(root(json!([
        { "repeat": { "times": 3, "script": [
            { "spawn": { "name": "worker-{r}", "script": [
                { "spawn": { "name": "helper-{r}" } }, { "join": "helper-{r}" } ] } },
            { "join": "worker-{r}" },
            { "work": 0.5 }
        ] } },
        { "repeat": { "times": 0, "script": [{ "work": 9.0 }] } },
        { "join": "worker-0" }
    ])));
    let script = &scenario.agents[0].script;
    assert_eq!(script.len(), 10);
    for r in 0..3 {
        let Step::Spawn(worker) = &script[3 * r] else {
            panic!("expected a spawn")
        };
        assert_eq!(worker.name, format!("worker-{r}"));
        assert_eq!(worker.script[1], Step::Join(format!("helper-{r}")));
        assert_eq!(script[3 * r + 1], Step::Join(format!("worker-{r}")));
        assert_eq!(script[3 * r + 2], Step::Work(0.5));
    }
    assert_eq!(script[9], Step::Join("worker-0".into()));
}

#[test]
fn nested_repeats_bind_r_to_the_innermost_repetition() {
    let scenario = parsed(root(json!([
        { "repeat": { "times": 2, "script": [
            { "repeat": { "times": 2, "script": [{ "await_answer": "root/1{r}" }] } } ] } }
    ])));
    let call = Step::AwaitAnswer;
    assert_eq!(
        *scenario.agents[0].script,
        [call(10), call(11), call(10), call(11)]
    );
}

#[test]
fn events_are_stable_sorted_by_time() {
    let scenario = parsed(json!({
        "name": "order", "answerers": [answerer("a"), answerer("b")],
        "agents": [{ "name": "root", "script": [{ "ask_raw": {} }, { "ask_raw": {} }] }],
        "events": [
            { "at": 5.0, "crash_answerer": "a" },
            { "at": 1.0, "cancel_call": "root/2" },
            { "at": 5.0, "crash_answerer": "b" },
            { "at": 0.0, "cancel_turn": "root" }
        ]
    }));
    let kinds: Vec<&Action> = scenario.events.iter().map(|e| &e.action).collect();
    assert_eq!(
        kinds,
        [
            &Action::CancelTurn("root".into()),
            &Action::CancelCall("root/2".into()),
            &Action::CrashAnswerer("a".into()),
            &Action::CrashAnswerer("b".into()),
        ]
    );
}

#[test]
fn accepts_matches_by_key_kind_and_by_agent_glob() {
    assert!(Accepts::All.matches("x", true) && Accepts::All.matches("x", false));
    assert!(Accepts::Keyed.matches("x", true) && !Accepts::Keyed.matches("x", false));
    assert!(!Accepts::Legacy.matches("x", true) && Accepts::Legacy.matches("x", false));
    assert!(!Accepts::None.matches("x", true) && !Accepts::None.matches("x", false));
    let globs = Accepts::Agents(vec!["worker-*".into(), "*-lead".into(), "a*b*c".into()]);
    for yes in [
        "worker-",
        "worker-7",
        "team-lead",
        "-lead",
        "abc",
        "a-b-c",
        "aXbYbZc",
    ] {
        assert!(globs.matches(yes, true), "{yes} should match");
    }
    for no in ["worker", "lead", "team-leader", "ab", "acb", "Worker-1"] {
        assert!(!globs.matches(no, false), "{no} should not match");
    }
    assert!(Accepts::Agents(vec!["*".into()]).matches("", true));
    assert!(!Accepts::Agents(vec![]).matches("root", true));
    // Characters beyond ASCII: `*` takes whole characters, a literal matches
    // whole characters only.
    let wide = Accepts::Agents(vec!["é*ü".into(), "*ö".into(), "x?".into()]);
    for yes in ["éü", "é—ü", "éüü", "ö", "ßö", "x?"] {
        assert!(wide.matches(yes, true), "{yes} should match");
    }
    for no in ["eü", "é", "ü", "öß", "x", "xy"] {
        assert!(!wide.matches(no, true), "{no} should not match");
    }
}

// ---------------------------------------------------------------------------------
// Syntax and type errors: serde's position, in characters.

#[test]
fn a_syntax_error_names_the_file_line_and_column() {
    let text = "{\n  \"name\": \"x\",\n  \"seed\": 1,,\n}";
    let err = scenario::parse("bad.json", text).unwrap_err();
    assert_eq!((err.line, err.column), (Some(3), Some(13)));
    assert!(
        err.to_string().starts_with("bad.json:3:13: invalid JSON: "),
        "{err}"
    );
}

#[test]
fn columns_count_characters_not_bytes() {
    let text = "{\"about\": \"ééé\", \"seed\": x}";
    let err = scenario::parse("bad.json", text).unwrap_err();
    // `x` is the 26th character (and the 29th byte).
    assert_eq!((err.line, err.column), (Some(1), Some(26)), "{err}");
}

#[test]
fn a_truncated_or_empty_file_is_refused_with_a_position() {
    let err = scenario::parse("cut.json", &SPEC_EXAMPLE[..200]).unwrap_err();
    assert!(err.message.starts_with("truncated JSON"), "{err}");
    assert!(err.line.is_some());
    let err = scenario::parse("empty.json", "").unwrap_err();
    assert_eq!(
        err.to_string(),
        "empty.json:1:1: truncated JSON: EOF while parsing a value"
    );
    let err = scenario::parse("nothing.json", "hello").unwrap_err();
    assert!(err.message.starts_with("invalid JSON"), "{err}");
}

#[test]
fn an_unknown_key_is_refused_at_every_level() {
    let text = "{\n  \"name\": \"x\",\n  \"agents\": [ { \"name\": \"root\", \"scirpt\": [] } ]\n}";
    let err = scenario::parse("typo.json", text).unwrap_err();
    assert_eq!(err.line, Some(3));
    assert!(
        err.message.starts_with("agents[0]: unknown field `scirpt`"),
        "{err}"
    );
    refused(json!({ "name": "x", "colour": "red" }), "unknown field `colour`");
    refused(
        json!({ "name": "x", "broker": { "offer_timeout": 1, "x": 1 } }),
        "unknown field `x`",
    );
    refused(
        root(json!([{ "wrk": 1.0 }])),
        "agents[0].script[0]: unknown variant `wrk`",
    );
    refused(
        root(json!([{ "work": 1.0, "join": "c" }])),
        "agents[0].script[0]: expected an object with exactly one key",
    );
    refused(
        root(json!([{ "spawn": { "name": "c", "count": 2 } }])),
        "unknown field `count`",
    );
    refused(
        json!({ "name": "x", "events": [{ "at": 1, "cancel_turn": "r", "why": 1 }] }),
        "unknown field `why`",
    );
    refused(
        json!({ "name": "x", "expect": { "result": {} } }),
        "unknown field `result`",
    );
}

/// Regression: an empty step `{}` was reported at its script, without its index
/// and at the token after it (`agents[0].script: expected an object with exactly
/// one key`), while a step with two keys named itself (`agents[0].script[0]`).
#[test]
fn an_empty_step_is_refused_at_its_own_path_and_position() {
    let text = r#"{"name":"x","agents":[{"name":"a","script":[{"work":1},{"work":1},{}]}]}"#;
    let err = scenario::parse("empty.json", text).unwrap_err();
    assert_eq!(
        err.to_string(),
        "empty.json:1:67: agents[0].script[2]: expected an object with exactly one key"
    );
    assert_eq!(at_position(text, &err), "{}]}]}");
    let text =
        "{\"name\": \"x\", \"agents\": [{\"name\": \"a\", \"script\": [\n  {\"work\": 1},\n  {  }\n]}]}";
    let err = scenario::parse("empty.json", text).unwrap_err();
    assert_eq!(
        err.to_string(),
        "empty.json:3:3: agents[0].script[1]: expected an object with exactly one key"
    );
    for (value, path) in [
        (
            root(json!([{ "work": 1 }, { "repeat": { "times": 1, "script": [{}] } }])),
            "agents[0].script[1].repeat.script[0]",
        ),
        (
            root(json!([{ "spawn": { "name": "c", "script": [{}] } }])),
            "agents[0].script[0].spawn.script[0]",
        ),
        (
            with_agents(json!([{ "name": "a", "on_resume": [{ "work": 1 }, {}] }])),
            "agents[0].on_resume[1]",
        ),
        (
            json!({ "name": "x", "answerers": [{ "name": "w", "accepts": {}, "latency": 1, "answer": "skip" }] }),
            "answerers[0].accepts",
        ),
        (
            json!({ "name": "x", "answerers": [{ "name": "w", "accepts": "all", "latency": 1, "answer": {} }] }),
            "answerers[0].answer",
        ),
        // An empty object that is a form's value, before a second key: the step.
        (
            root(json!([{ "ask_unresolved": {}, "work": 1 }])),
            "agents[0].script[0]",
        ),
    ] {
        let err = refused(value, "expected an object with exactly one key");
        assert_eq!(
            err.message,
            format!("{path}: expected an object with exactly one key")
        );
    }
}

#[test]
fn a_wrong_type_is_refused_with_its_path() {
    refused(
        json!({ "name": "x", "seed": -1 }),
        "seed: invalid value: integer `-1`",
    );
    refused(json!({ "name": "x", "seed": "1" }), "seed: invalid type");
    refused(
        json!({ "name": "x", "clock": "wall" }),
        "clock: unknown variant `wall`",
    );
    refused(
        json!({ "name": "x", "broker": [1.0] }),
        "broker: invalid type: a list, expected an object",
    );
    refused(
        json!([{ "name": "x" }]),
        "invalid type: a list, expected an object",
    );
    refused(
        json!({ "name": "x", "answerers": [{ "name": "a", "accepts": "some", "latency": "never", "answer": "skip" }] }),
        "answerers[0].accepts: unknown variant `some`",
    );
    refused(
        json!({ "name": "x", "answerers": [{ "name": "a", "accepts": "all", "latency": { "uniform": [1] }, "answer": "skip" }] }),
        "answerers[0].latency.uniform",
    );
    refused(
        json!({ "name": "x", "answerers": [{ "name": "a", "accepts": "all", "latency": "never", "answer": { "option": -1 } }] }),
        "answerers[0].answer.option: invalid value",
    );
    refused(
        json!({ "name": "x" , "agents": [{ "script": [] }] }),
        "agents[0]: missing field `name`",
    );
    refused(json!({ "about": "no name" }), "missing field `name`");
}

#[test]
fn the_tool_row_is_checked_by_the_tool_config() {
    let err = refused(
        json!({ "name": "x", "tool": { "mode": "timed", "timeout": 0 } }),
        "tool.timeout: expected a positive number",
    );
    assert!(err.line.is_some());
    refused(json!({ "name": "x", "tool": { "mode": "fast" } }), "tool.mode:");
    refused(
        json!({ "name": "x", "tool": { "window": 3 } }),
        "tool.window: unknown key",
    );
    refused(
        json!({ "name": "x", "tool": "timed" }),
        "tool: expected an object",
    );
}

// ---------------------------------------------------------------------------------
// Errors found after parsing: the JSON path, and a position that is right.

#[test]
fn a_semantic_error_points_at_the_offending_value() {
    let text = include_str!("scenarios_bad/join_unknown_child.json");
    let err = scenario::parse("join.json", text).unwrap_err();
    let (line, column) = (err.line.unwrap(), err.column.unwrap());
    let at: String = text
        .lines()
        .nth(line - 1)
        .unwrap()
        .chars()
        .skip(column - 1)
        .collect();
    assert!(
        at.starts_with("\"helpr\""),
        "position {line}:{column} points at {at:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "join.json:{line}:{column}: agents[0].script[1].join: no child \"helpr\" spawned earlier in this script of \"root\""
        )
    );
}

#[test]
fn duplicate_names_are_refused_across_roots_children_and_answerers() {
    refused(
        with_agents(json!([{ "name": "a" }, { "name": "a" }])),
        "duplicate name \"a\"",
    );
    refused(
        with_agents(json!([{ "name": "a" }, { "name": "b", "script": [{ "spawn": { "name": "a" } }] }])),
        "agents[1].script[0].spawn.name: duplicate name \"a\"",
    );
    refused(
        root(json!([{ "repeat": { "times": 2, "script": [{ "spawn": { "name": "same" } }] } }])),
        "agents[0].script[0].repeat.script[0].spawn.name: duplicate name \"same\": a repeat spawns it at every repetition; put `{r}` in the name",
    );
    refused(
        json!({ "name": "x", "answerers": [answerer("w"), answerer("w")] }),
        "answerers[1].name: duplicate name \"w\"",
    );
    refused(
        json!({ "name": "x", "answerers": [answerer("root")], "agents": [{ "name": "root" }] }),
        "duplicate name \"root\"",
    );
}

#[test]
fn names_are_non_empty_without_a_slash_or_a_control_character_and_fully_substituted() {
    refused(
        with_agents(json!([{ "name": "a/b" }])),
        "agents[0].name: name \"a/b\" contains `/`",
    );
    refused(
        json!({ "name": "x", "answerers": [answerer("")] }),
        "expected a non-empty name",
    );
    refused(
        with_agents(json!([{ "name": "w-{i}" }])),
        "only a row with `count` substitutes",
    );
    refused(
        root(json!([{ "spawn": { "name": "c-{r}" } }])),
        "only substituted inside `repeat`",
    );
    refused(json!({ "name": "" }), "name: expected a non-empty name");
    // A line break or a terminal escape would break the report's header and the
    // timeline's one line per event.
    refused(
        json!({ "name": "two\nlines" }),
        r#"name: name "two\nlines" contains the control character '\n'"#,
    );
    refused(
        with_agents(json!([{ "name": "red\u{1b}[31m" }])),
        r#"agents[0].name: name "red\u{1b}[31m" contains the control character '\u{1b}'"#,
    );
    refused(
        json!({ "name": "x", "answerers": [answerer("tab\tbed")] }),
        r#"answerers[0].name: name "tab\tbed" contains the control character '\t'"#,
    );
}

#[test]
fn a_count_needs_i_and_a_sane_size() {
    refused(
        with_agents(json!([{ "name": "same", "count": 2 }])),
        "agents[0].count: count 2 needs `{i}`",
    );
    refused(
        with_agents(json!([{ "name": "a{i}", "count": 0 }])),
        "expected a count from 1 to 100000",
    );
    let one = parsed(with_agents(json!([{ "name": "solo", "count": 1 }])));
    assert_eq!(names(&one.agents), ["solo"]);
}

#[test]
fn join_must_name_a_child_spawned_earlier_in_the_same_script() {
    refused(
        root(json!([{ "join": "ghost" }])),
        "agents[0].script[0].join: no child \"ghost\"",
    );
    refused(
        root(json!([{ "join": "late" }, { "spawn": { "name": "late" } }])),
        "no child \"late\"",
    );
    refused(
        with_agents(
            json!([{ "name": "root", "script": [{ "spawn": { "name": "c" } }], "on_resume": [{ "join": "c" }] }]),
        ),
        "agents[0].on_resume[0].join",
    );
    refused(
        root(json!([{ "spawn": { "name": "c", "script": [{ "join": "c" }] } }])),
        "agents[0].script[0].spawn.script[0].join",
    );
}

#[test]
fn await_answer_must_name_a_call_of_this_agent() {
    parsed(root(json!([{ "await_answer": "root/12" }])));
    for bad in [
        "other/1",
        "root/0",
        "root/01",
        "root/",
        "root",
        "root/x",
        "/1",
        "root/99999999999999999999999",
    ] {
        refused(
            root(json!([{ "await_answer": bad }])),
            "agents[0].script[0].await_answer: expected a call of this agent",
        );
    }
}

#[test]
fn events_must_name_what_exists() {
    let base = |events: Value| {
        json!({ "name": "x", "answerers": [answerer("web")],
            "agents": [{ "name": "root", "script": [{ "spawn": { "name": "kid",
                "script": [{ "ask_raw": {} }, { "ask_raw": {} }, { "ask_unresolved": {} }] } }] }], "events": events })
    };
    parsed(base(
        json!([{ "at": 1, "cancel_turn": "kid" }, { "at": 1, "stop_agent": "kid" }, { "at": 1, "cancel_call": "kid/3" }]),
    ));
    refused(
        base(json!([{ "at": 1, "cancel_call": "kid/4" }])),
        "events[0].cancel_call: \"kid/4\" can never exist: kid makes at most 3 tool calls in this run",
    );
    refused(
        base(json!([{ "at": 1, "cancel_turn": "nobody" }])),
        "events[0].cancel_turn: no agent \"nobody\"",
    );
    refused(
        base(json!([{ "at": 1, "stop_agent": "web" }])),
        "events[0].stop_agent: no agent \"web\"",
    );
    refused(
        base(json!([{ "at": 1, "crash_answerer": "root" }])),
        "events[0].crash_answerer: no answerer \"root\"",
    );
    refused(
        base(json!([{ "at": 1, "cancel_call": "root" }])),
        "events[0].cancel_call: expected a callId",
    );
    refused(
        base(json!([{ "at": 1, "cancel_call": "ghost/1" }])),
        "names no agent",
    );
    refused(base(json!([{ "at": 1 }])), "events[0]: expected exactly one of");
    refused(
        base(json!([{ "at": 1, "cancel_turn": "root", "stop_agent": "root" }])),
        "expected exactly one of",
    );
    refused(
        base(json!([{ "at": -1, "cancel_turn": "root" }])),
        "events[0].at: expected a non-negative",
    );
    refused(
        base(json!([{ "at": 1, "process_loss": { "restart_after": -0.5 } }])),
        "events[0].process_loss.restart_after",
    );
}

#[test]
fn times_and_distributions_must_make_sense() {
    let with_answerer = |fields: Value| {
        let mut row = answerer("a");
        row.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        json!({ "name": "x", "answerers": [row] })
    };
    refused(
        with_answerer(json!({ "latency": { "fixed": -1.0 } })),
        "answerers[0].latency.fixed: expected a non-negative",
    );
    refused(
        with_answerer(json!({ "latency": { "uniform": [5, 1] } })),
        "answerers[0].latency.uniform: min 5 is greater than max 1",
    );
    refused(
        with_answerer(json!({ "latency": { "uniform": [-1, 1] } })),
        "answerers[0].latency.uniform[0]",
    );
    refused(
        with_answerer(json!({ "offer_latency": { "exp": 0 } })),
        "answerers[0].offer_latency.exp: expected a positive",
    );
    refused(
        with_answerer(json!({ "hold": { "after": -2 } })),
        "answerers[0].hold.after",
    );
    refused(
        with_answerer(json!({ "faults": { "crash_at": -2 } })),
        "answerers[0].faults.crash_at",
    );
    refused(
        with_answerer(json!({ "faults": { "crash_after_accepts": 0 } })),
        "answerers[0].faults.crash_after_accepts: expected at least 1",
    );
    // An answer that would select nothing and say nothing is a skip, written so.
    refused(
        with_answerer(json!({ "answer": { "custom": "" } })),
        "answerers[0].answer.custom: expected a text that is not empty (\"skip\" skips the questions)",
    );
    refused(
        with_answerer(json!({ "answer": { "options": [] } })),
        "answerers[0].answer.options: expected at least one index",
    );
    refused(root(json!([{ "work": -0.1 }])), "agents[0].script[0].work");
    refused(
        root(json!([{ "ask_unresolved": { "timeout": 0 } }])),
        "agents[0].script[0].ask_unresolved.timeout",
    );
    refused(json!({ "name": "x", "jitter": { "max": -1 } }), "jitter.max");
    refused(
        json!({ "name": "x", "broker": { "offer_timeout": 0 } }),
        "broker.offer_timeout: expected a positive",
    );
    refused(
        json!({ "name": "x", "limits": { "virtual_s_max": 0 } }),
        "limits.virtual_s_max",
    );
    refused(
        json!({ "name": "x", "limits": { "events_max": 0 } }),
        "limits.events_max",
    );
    // JSON has no infinity: an overflowing number is a parse error, not an infinite time.
    let err = scenario::parse("big.json", r#"{"name":"x","jitter":{"max":1e400}}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "big.json:1:33: invalid JSON: number out of range"
    );
}

#[test]
fn expect_names_outcomes_error_codes_calls_and_agents() {
    // Root makes one call: `root/1` can exist.
    let agents = json!([{ "name": "root", "script": [{ "ask_raw": {} }] }]);
    let ok = parsed(json!({ "name": "x", "agents": agents, "expect": {
        "counts": { "answered": 1, "pending": 0, "late_answered": 0, "withdrawn": 0, "pending_open": 0,
                    "lost_on_restart": 0, "open": 0, "NO_ANSWERER": 2, "DELEGATED_CALLER": 0 },
        "results": { "root/1": { "error": { "code": "ABORTED" } } },
        "user_messages": { "root": [{ "kind": "answer_to_pending_question" }] },
        "final_results": { "root": { "agent": "root" } } } }));
    assert_eq!(ok.expect.unwrap().counts["NO_ANSWERER"], 2);
    refused(
        json!({ "name": "x", "expect": { "counts": { "answerd": 1 } } }),
        "expect.counts.answerd: \"answerd\" is not an outcome",
    );
    refused(
        json!({ "name": "x", "expect": { "counts": { "aborted": 1 } } }),
        "is not an outcome",
    );
    refused(
        json!({ "name": "x", "expect": { "results": { "root/1": {} } } }),
        "expect.results.root/1: callId \"root/1\" names no agent",
    );
    refused(
        json!({ "name": "x", "expect": { "user_messages": { "root": [] } } }),
        "expect.user_messages.root: no agent",
    );
    refused(
        json!({ "name": "x", "expect": { "final_results": { "root": {} } } }),
        "expect.final_results.root: no agent",
    );
}

// ---------------------------------------------------------------------------------
// Bounded times: every time is at most `limits.virtual_s_max`, itself at most
// VIRTUAL_S_MAX_MAX; over a bound is a bad file naming the path and the bound.

/// What the file holds at the position of `err`.
fn at_position(text: &str, err: &ScenarioError) -> String {
    let (line, column) = (err.line.expect("a line"), err.column.expect("a column"));
    text.lines()
        .nth(line - 1)
        .unwrap()
        .chars()
        .skip(column - 1)
        .collect()
}

/// Every time field of the format, set to `s` in an otherwise valid file whose
/// `limits` are `limits`, with the JSON path of that field.
fn time_fields(s: f64, limits: Value) -> Vec<(&'static str, Value)> {
    let with_answerer = |fields: Value| {
        let mut row = json!({ "name": "a", "accepts": "all", "latency": 1.0, "answer": "recommended" });
        let row_map = row.as_object_mut().unwrap();
        row_map.extend(fields.as_object().unwrap().clone());
        json!({ "name": "x", "limits": limits, "answerers": [row] })
    };
    let with_event = |event: Value| json!({ "name": "x", "limits": limits, "agents": [{ "name": "root" }], "events": [event] });
    vec![
        (
            "events[0].at",
            with_event(json!({ "at": s, "cancel_turn": "root" })),
        ),
        (
            "events[0].process_loss.restart_after",
            with_event(json!({ "at": 0, "process_loss": { "restart_after": s } })),
        ),
        (
            "agents[0].script[0].work",
            json!({ "name": "x", "limits": limits, "agents": [{ "name": "root", "script": [{ "work": s }] }] }),
        ),
        (
            "answerers[0].faults.crash_at",
            with_answerer(json!({ "faults": { "crash_at": s } })),
        ),
        (
            "answerers[0].hold.after",
            with_answerer(json!({ "hold": { "after": s } })),
        ),
        ("answerers[0].latency", with_answerer(json!({ "latency": s }))),
        (
            "answerers[0].latency.fixed",
            with_answerer(json!({ "latency": { "fixed": s } })),
        ),
        (
            "answerers[0].latency.uniform[0]",
            with_answerer(json!({ "latency": { "uniform": [s, s] } })),
        ),
        (
            "answerers[0].latency.uniform[1]",
            with_answerer(json!({ "latency": { "uniform": [0, s] } })),
        ),
        (
            "answerers[0].latency.exp",
            with_answerer(json!({ "latency": { "exp": s } })),
        ),
        (
            "answerers[0].offer_latency",
            with_answerer(json!({ "offer_latency": s })),
        ),
        (
            "answerers[0].offer_latency.fixed",
            with_answerer(json!({ "offer_latency": { "fixed": s } })),
        ),
        (
            "answerers[0].offer_latency.uniform[0]",
            with_answerer(json!({ "offer_latency": { "uniform": [s, s] } })),
        ),
        (
            "answerers[0].offer_latency.uniform[1]",
            with_answerer(json!({ "offer_latency": { "uniform": [0, s] } })),
        ),
        (
            "answerers[0].offer_latency.exp",
            with_answerer(json!({ "offer_latency": { "exp": s } })),
        ),
        (
            "jitter.max",
            json!({ "name": "x", "limits": limits, "jitter": { "max": s } }),
        ),
        (
            "broker.offer_timeout",
            json!({ "name": "x", "limits": limits, "broker": { "offer_timeout": s } }),
        ),
    ]
}

/// Instants on the run's clock: one past `limits.virtual_s_max` is valid (it never
/// fires and the run stops at the limit, SPEC §5); they are bounded by
/// `VIRTUAL_S_MAX_MAX`. Every other time is a duration, bounded by the file's limit.
const INSTANTS: [&str; 2] = ["events[0].at", "answerers[0].faults.crash_at"];

/// `1e20` in one time field is refused naming that field, its bound, and a
/// position on the value itself.
fn assert_1e20_refused_at(path: &str) {
    let (_, file) = time_fields(1e20, json!({}))
        .into_iter()
        .find(|(p, _)| *p == path)
        .unwrap_or_else(|| panic!("no time field {path}"));
    let text = serde_json::to_string_pretty(&file).unwrap();
    let err = scenario::parse("t.json", &text).expect_err(path);
    let bound = if INSTANTS.contains(&path) {
        "the latest instant a run can reach (1000000000 s)"
    } else {
        "limits.virtual_s_max (86400 s)"
    };
    assert_eq!(err.message, format!("{path}: 1e20 is past {bound}"));
    // On the number itself, as serde_json wrote it (`1e+20`).
    let at = at_position(&text, &err);
    assert!(at.starts_with(&json!(1e20).to_string()), "{err}: {at:?}");
}

macro_rules! refuses_1e20 {
    ($($name:ident: $path:literal,)*) => {$(
        #[test]
        fn $name() {
            assert_1e20_refused_at($path);
        }
    )*};
}

refuses_1e20! {
    bound_events_at: "events[0].at",
    bound_process_loss_restart_after: "events[0].process_loss.restart_after",
    bound_work: "agents[0].script[0].work",
    bound_faults_crash_at: "answerers[0].faults.crash_at",
    bound_hold_after: "answerers[0].hold.after",
    bound_latency_bare: "answerers[0].latency",
    bound_latency_fixed: "answerers[0].latency.fixed",
    bound_latency_uniform_min: "answerers[0].latency.uniform[0]",
    bound_latency_uniform_max: "answerers[0].latency.uniform[1]",
    bound_latency_exp: "answerers[0].latency.exp",
    bound_offer_latency_bare: "answerers[0].offer_latency",
    bound_offer_latency_fixed: "answerers[0].offer_latency.fixed",
    bound_offer_latency_uniform_min: "answerers[0].offer_latency.uniform[0]",
    bound_offer_latency_uniform_max: "answerers[0].offer_latency.uniform[1]",
    bound_offer_latency_exp: "answerers[0].offer_latency.exp",
    bound_jitter_max: "jitter.max",
    bound_broker_offer_timeout: "broker.offer_timeout",
}

#[test]
fn every_time_field_is_covered_by_a_bound_test() {
    // The macro above lists one test per field of `time_fields`.
    assert_eq!(time_fields(1.0, json!({})).len(), 17);
}

#[test]
fn bound_virtual_s_max_is_at_most_virtual_s_max_max() {
    assert_eq!(VIRTUAL_S_MAX_MAX, 1e9);
    let text =
        serde_json::to_string_pretty(&json!({ "name": "x", "limits": { "virtual_s_max": 1e20 } })).unwrap();
    let err = scenario::parse("t.json", &text).unwrap_err();
    assert_eq!(
        err.message,
        "limits.virtual_s_max: 1e20 is past the largest limits.virtual_s_max (1000000000 s)"
    );
    // On the number itself, as serde_json wrote it (`1e+20`).
    let at = at_position(&text, &err);
    assert!(at.starts_with(&json!(1e20).to_string()), "{err}: {at:?}");
    let at_max = parsed(json!({ "name": "x", "limits": { "virtual_s_max": 1e9 } }));
    assert_eq!(at_max.limits.virtual_s_max, VIRTUAL_S_MAX_MAX);
    refused(
        json!({ "name": "x", "limits": { "virtual_s_max": 1e9f64.next_up() } }),
        "limits.virtual_s_max: 1000000000.0000001 is past the largest",
    );
}

#[test]
fn the_bound_is_the_files_own_virtual_s_max() {
    let limits = json!({ "virtual_s_max": 100 });
    for (path, file) in time_fields(100.5, limits.clone()) {
        if INSTANTS.contains(&path) {
            let scenario = parse(file).unwrap_or_else(|err| panic!("{path}: {err}"));
            assert_eq!(
                scenario.limits.virtual_s_max, 100.0,
                "{path}: an instant past the limit is valid"
            );
            continue;
        }
        let err = parse(file).expect_err(path);
        assert_eq!(
            err.message,
            format!("{path}: 100.5 is past limits.virtual_s_max (100 s)")
        );
    }
    for (path, file) in time_fields(100.0, limits) {
        parse(file).unwrap_or_else(|err| panic!("{path}: {err}"));
    }
    // The default bound, exactly.
    for (path, file) in time_fields(86_400.0, json!({})) {
        parse(file).unwrap_or_else(|err| panic!("{path}: {err}"));
    }
}

#[test]
fn existing_time_rules_hold_under_the_bound() {
    let limits = json!({ "virtual_s_max": 1e9 });
    for (path, file) in time_fields(-1.0, limits) {
        let err = parse(file).expect_err(path);
        assert!(err.message.starts_with(&format!("{path}: expected a ")), "{err}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Exactly the bound is accepted and read back exactly; the next number up is
    /// refused, for every time field and any bound up to VIRTUAL_S_MAX_MAX.
    #[test]
    fn times_exactly_at_the_bound_are_accepted(
        bound in prop_oneof![Just(VIRTUAL_S_MAX_MAX), Just(86_400.0), 1e-3f64..VIRTUAL_S_MAX_MAX],
    ) {
        let limits = json!({ "virtual_s_max": bound });
        for (path, file) in time_fields(bound, limits.clone()) {
            let scenario = parse(file).map_err(|err| TestCaseError::fail(format!("{path}: {err}")))?;
            prop_assert_eq!(scenario.limits.virtual_s_max, bound);
        }
        for (path, file) in time_fields(bound.next_up(), limits) {
            if INSTANTS.contains(&path) && bound < VIRTUAL_S_MAX_MAX {
                prop_assert!(parse(file).is_ok(), "{}: an instant past the limit is valid", path);
                continue;
            }
            let err = parse(file).expect_err(path);
            prop_assert!(err.message.starts_with(&format!("{path}: ")), "{}", err);
            prop_assert!(err.message.contains("is past "), "{}", err);
        }
    }
}

#[test]
fn times_at_the_bound_are_read_back_exactly() {
    let b = VIRTUAL_S_MAX_MAX;
    let scenario = parsed(json!({
        "name": "x", "limits": { "virtual_s_max": b }, "broker": { "offer_timeout": b }, "jitter": { "max": b },
        "answerers": [{ "name": "a", "accepts": "all", "offer_latency": b, "latency": { "uniform": [b, b] },
                        "answer": "skip", "hold": { "after": b }, "faults": { "crash_at": b } }],
        "agents": [{ "name": "root", "script": [{ "work": b }] }],
        "events": [{ "at": b, "process_loss": { "restart_after": b } }]
    }));
    assert_eq!(scenario.broker.offer_timeout_s, b);
    assert_eq!(scenario.jitter_max_s, Some(b));
    let policy = &scenario.answerers[0].policy;
    assert_eq!(policy.offer_latency, Latency::Fixed(b));
    assert_eq!(policy.latency, Latency::Uniform(b, b));
    assert_eq!((policy.hold_after_s, policy.crash_at_s), (Some(b), Some(b)));
    assert_eq!(*scenario.agents[0].script, [Step::Work(b)]);
    assert_eq!(
        scenario.events[0],
        EventSpec {
            at_s: b,
            action: Action::ProcessLoss { restart_after_s: b }
        }
    );
}

// ---------------------------------------------------------------------------------
// Shorthands and defaults.

fn one_answerer(row: Value) -> Value {
    json!({ "name": "x", "answerers": [row] })
}

#[test]
fn a_bare_number_is_a_fixed_latency() {
    let scenario = parsed(one_answerer(
        json!({ "name": "a", "accepts": "all", "offer_latency": 0.05, "latency": 2.0, "answer": "skip" }),
    ));
    assert_eq!(scenario.answerers[0].policy.offer_latency, Latency::Fixed(0.05));
    assert_eq!(scenario.answerers[0].policy.latency, Latency::Fixed(2.0));
    let integer = parsed(one_answerer(
        json!({ "name": "a", "accepts": "all", "offer_latency": 0, "latency": 3, "answer": "skip" }),
    ));
    assert_eq!(integer.answerers[0].policy.offer_latency, Latency::Fixed(0.0));
    assert_eq!(integer.answerers[0].policy.latency, Latency::Fixed(3.0));
    // The other forms are unchanged.
    for (form, latency) in [
        (json!({ "fixed": 2.0 }), Latency::Fixed(2.0)),
        (json!({ "uniform": [1, 2] }), Latency::Uniform(1.0, 2.0)),
        (json!({ "exp": 0.5 }), Latency::Exp(0.5)),
        (json!("never"), Latency::Never),
    ] {
        let scenario = parsed(one_answerer(
            json!({ "name": "a", "accepts": "all", "latency": form, "answer": "skip" }),
        ));
        assert_eq!(scenario.answerers[0].policy.latency, latency);
    }
}

#[test]
fn a_bad_latency_is_refused_with_its_path_and_position() {
    let text = "{\"name\": \"x\", \"answerers\": [\n  {\"name\": \"a\", \"accepts\": \"all\", \"latency\": -2, \"answer\": \"skip\"}]}";
    let err = scenario::parse("l.json", text).unwrap_err();
    assert_eq!(
        err.to_string(),
        "l.json:2:46: answerers[0].latency: expected a non-negative number of seconds, got -2"
    );
    for (latency, needle) in [
        (json!("nevr"), "answerers[0].latency: unknown variant `nevr`"),
        (
            json!({ "fixd": 1 }),
            "answerers[0].latency: unknown variant `fixd`",
        ),
        (
            json!({ "fixed": 1, "exp": 2 }),
            "answerers[0].latency: expected an object with exactly one key",
        ),
        (
            json!({}),
            "answerers[0].latency: invalid length 0, expected an object with exactly one key",
        ),
        (
            json!(true),
            "answerers[0].latency: invalid type: boolean `true`, expected seconds",
        ),
        (json!([1, 2]), "answerers[0].latency: invalid type: a list"),
        (json!({ "uniform": [1] }), "answerers[0].latency.uniform"),
        (
            json!({ "fixed": "1" }),
            "answerers[0].latency.fixed: invalid type: string",
        ),
    ] {
        let err = refused(
            one_answerer(json!({ "name": "a", "accepts": "all", "latency": latency, "answer": "skip" })),
            needle,
        );
        assert!(err.line.is_some() && err.column.is_some(), "{err}");
    }
}

#[test]
fn an_answerer_that_accepts_none_may_leave_out_latency_and_answer() {
    let scenario = parsed(one_answerer(json!({ "name": "mute", "accepts": "none" })));
    let policy = &scenario.answerers[0].policy;
    assert_eq!(policy.accepts, Accepts::None);
    assert_eq!(policy.latency, Latency::Never);
    assert_eq!(policy.answer, AnswerPolicy::Recommended);
    assert_eq!(policy.offer_latency, Latency::Fixed(0.0));
    // Given, they are read and checked as for any answerer.
    let given = parsed(one_answerer(
        json!({ "name": "mute", "accepts": "none", "latency": 1, "answer": "skip" }),
    ));
    assert_eq!(given.answerers[0].policy.latency, Latency::Fixed(1.0));
    assert_eq!(given.answerers[0].policy.answer, AnswerPolicy::Skip);
    refused(
        one_answerer(json!({ "name": "mute", "accepts": "none", "latency": -1 })),
        "answerers[0].latency: expected a non-negative",
    );
}

#[test]
fn any_other_answerer_still_needs_latency_and_answer() {
    for accepts in [
        json!("all"),
        json!("keyed"),
        json!("legacy"),
        json!({ "agents": ["*"] }),
    ] {
        let rows = json!([
            answerer("w0"),
            answerer("w1"),
            { "name": "late", "accepts": accepts, "answer": "skip" },
        ]);
        let text = serde_json::to_string_pretty(&json!({ "name": "x", "answerers": rows })).unwrap();
        let err = scenario::parse("t.json", &text).unwrap_err();
        assert!(
            err.message.starts_with("answerers[2]: missing field `latency`"),
            "{err}"
        );
        // At the third row itself: its `{`, followed by its name.
        assert!(at_position(&text, &err).starts_with('{'), "{err}");
        let next_line = text.lines().nth(err.line.unwrap()).unwrap();
        assert!(next_line.contains("\"late\""), "{err}: {next_line}");
        refused(
            json!({ "name": "x", "answerers": [{ "name": "a", "accepts": accepts, "latency": 1 }] }),
            "answerers[0]: missing field `answer`",
        );
    }
}

// ---------------------------------------------------------------------------------
// "Did you mean": unknown keys and variants suggest one close name.

#[test]
fn a_misspelt_top_level_key_suggests_the_key() {
    let err = refused(json!({ "name": "x", "agnets": [] }), "unknown field `agnets`");
    assert!(err.message.ends_with("; did you mean `agents`?"), "{err}");
    assert!(err.line.is_some());
    let far = refused(json!({ "name": "x", "colour": 1 }), "unknown field `colour`");
    assert!(!far.message.contains("did you mean"), "{far}");
}

#[test]
fn a_misspelt_step_suggests_the_step() {
    let err = refused(
        root(json!([{ "wrok": 1.0 }])),
        "agents[0].script[0]: unknown variant `wrok`",
    );
    assert!(err.message.ends_with("; did you mean `work`?"), "{err}");
    let err = refused(root(json!([{ "awiat_answer": "root/1" }])), "unknown variant");
    assert!(err.message.ends_with("; did you mean `await_answer`?"), "{err}");
}

#[test]
fn a_misspelt_answerer_key_or_form_suggests_the_name() {
    let err = refused(
        one_answerer(json!({ "name": "a", "acepts": "all", "latency": 1, "answer": "skip" })),
        "answerers[0]: unknown field `acepts`",
    );
    assert!(err.message.ends_with("; did you mean `accepts`?"), "{err}");
    for (row, suggestion) in [
        (
            json!({ "name": "a", "accepts": "kyed", "latency": 1, "answer": "skip" }),
            "keyed",
        ),
        (
            json!({ "name": "a", "accepts": "all", "latency": "nevr", "answer": "skip" }),
            "never",
        ),
        (
            json!({ "name": "a", "accepts": "all", "latency": { "unifrom": [1, 2] }, "answer": "skip" }),
            "uniform",
        ),
        (
            json!({ "name": "a", "accepts": "all", "latency": 1, "answer": "recomended" }),
            "recommended",
        ),
    ] {
        let err = parse(one_answerer(row)).unwrap_err();
        assert!(
            err.message.ends_with(&format!("; did you mean `{suggestion}`?")),
            "{err}"
        );
    }
}

#[test]
fn a_misspelt_event_key_suggests_the_key() {
    let err = refused(
        json!({ "name": "x", "agents": [{ "name": "root" }], "events": [{ "at": 1, "cancel_trun": "root" }] }),
        "events[0]: unknown field `cancel_trun`",
    );
    assert!(err.message.ends_with("; did you mean `cancel_turn`?"), "{err}");
}

#[test]
fn misspelt_names_checked_after_parsing_suggest_too() {
    let err = refused(
        json!({ "name": "x", "expect": { "counts": { "answerd": 1 } } }),
        "expect.counts.answerd",
    );
    assert!(err.message.ends_with("; did you mean `answered`?"), "{err}");
    let err = refused(
        json!({ "name": "x", "expect": { "counts": { "NO_ANSWERR": 1 } } }),
        "is not an outcome",
    );
    assert!(err.message.ends_with("; did you mean `NO_ANSWERER`?"), "{err}");
    let err = refused(json!({ "name": "x", "tool": { "mdoe": "timed" } }), "tool.mdoe");
    assert!(err.message.ends_with("; did you mean `mode`?"), "{err}");
}

// ---------------------------------------------------------------------------------
// `$schema`, `explore` and the broker's limits.

/// The scheduling strategy (named in full: proptest's `Strategy` is in scope).
use asksim::scenario::Strategy as Explore;

#[test]
fn dollar_schema_is_allowed_and_ignored() {
    let with = parsed(json!({ "$schema": "./asksim-scenario.schema.json", "name": "x" }));
    assert_eq!(with, parsed(json!({ "name": "x" })));
    refused(json!({ "$schema": 1, "name": "x" }), "$schema: invalid type");
}

#[test]
fn explore_names_the_scheduling_strategy() {
    assert_eq!(parsed(json!({ "name": "x" })).explore, None);
    for (text, strategy) in [
        ("random", Explore::Random),
        ("fifo", Explore::Fifo),
        ("pct:1", Explore::Pct { depth: 1 }),
        ("pct:3", Explore::Pct { depth: 3 }),
        ("pct:64", Explore::Pct { depth: PCT_DEPTH_MAX }),
    ] {
        assert_eq!(
            parsed(json!({ "name": "x", "explore": text })).explore,
            Some(strategy)
        );
        assert_eq!(strategy.to_string(), text);
        assert_eq!(text.parse::<Explore>(), Ok(strategy));
    }
    assert_eq!(Explore::default(), Explore::Random);
}

#[test]
fn a_bad_explore_is_refused_with_its_position() {
    assert_eq!(PCT_DEPTH_MAX, 64);
    for bad in [
        "pct:0", "pct:65", "pct:", "pct:x", "pct:007", "PCT:3", "lifo", "", "random ",
    ] {
        let text = serde_json::to_string_pretty(&json!({ "name": "x", "explore": bad })).unwrap();
        let err = scenario::parse("t.json", &text).unwrap_err();
        assert!(err.message.starts_with("explore: expected "), "{bad:?}: {err}");
        assert!(at_position(&text, &err).starts_with(&format!("{bad:?}")), "{err}");
        assert!(bad.parse::<Explore>().is_err());
    }
    let err = refused(json!({ "name": "x", "explore": "rnadom" }), "explore: expected");
    assert!(err.message.ends_with("; did you mean `random`?"), "{err}");
    let err = refused(
        json!({ "name": "x", "explore": "lifo" }),
        "\"random\", \"fifo\" or \"pct:D\"",
    );
    assert!(err.message.contains("from 1 to 64"), "{err}");
    refused(
        json!({ "name": "x", "explore": 3 }),
        "explore: invalid type: integer `3`",
    );
}

#[test]
fn the_broker_limits_are_read_and_bounded() {
    let scenario =
        parsed(json!({ "name": "x", "broker": { "open_calls_max": 1, "agents_per_tree_max": 2 } }));
    assert_eq!(
        scenario.broker,
        BrokerSpec {
            offer_timeout_s: 1.0,
            open_calls_max: Some(1),
            agents_per_tree_max: Some(2)
        }
    );
    assert_eq!(parsed(json!({ "name": "x" })).broker, BrokerSpec::default());
    assert_eq!(BrokerSpec::default().open_calls_max, None);
    assert_eq!(BrokerSpec::default().agents_per_tree_max, None);
    let (open_max, agents_max) = (OPEN_CALLS_MAX as u64, AGENTS_PER_TREE_MAX as u64);
    assert_eq!((open_max, agents_max), (2_000_000, 100_000));
    let at_max = parsed(
        json!({ "name": "x", "broker": { "open_calls_max": open_max, "agents_per_tree_max": agents_max } }),
    );
    assert_eq!(at_max.broker.open_calls_max, Some(open_max));
    assert_eq!(at_max.broker.agents_per_tree_max, Some(agents_max));
    for (key, n) in [
        ("open_calls_max", 0),
        ("open_calls_max", open_max + 1),
        ("agents_per_tree_max", 0),
        ("agents_per_tree_max", agents_max + 1),
    ] {
        let text = serde_json::to_string_pretty(&json!({ "name": "x", "broker": { key: n } })).unwrap();
        let err = scenario::parse("t.json", &text).unwrap_err();
        assert!(
            err.message.starts_with(&format!("broker.{key}: expected 1 to ")),
            "{err}"
        );
        assert!(at_position(&text, &err).starts_with(&n.to_string()), "{err}");
    }
    refused(
        json!({ "name": "x", "broker": { "open_calls_max": 1.5 } }),
        "broker.open_calls_max: invalid type: floating point",
    );
    refused(
        json!({ "name": "x", "broker": { "open_calls_max": -1 } }),
        "broker.open_calls_max: invalid value",
    );
}

// ---------------------------------------------------------------------------------
// Limits: absurd sizes are refused before anything is allocated.

/// Absurd sizes are refused before anything of that size is built: a check that
/// allocated 10^12 things would not come back. Not timed (SPEC §8: tests never
/// assert wall-clock time).
#[test]
fn absurd_counts_and_repeats_are_refused_before_anything_is_built() {
    refused(
        with_agents(json!([{ "name": "a{i}", "count": 1_000_000_000_000u64 }])),
        "agents[0].count",
    );
    refused(
        json!({ "name": "x", "answerers": [{ "name": "w{i}", "count": 1_000_000_000_000u64, "accepts": "all",
            "latency": { "fixed": -1 }, "answer": "skip" }] }),
        "answerers[0].count",
    );
    refused(
        root(json!([{ "repeat": { "times": 1_000_000_000_000u64, "script": [{ "work": 1 }] } }])),
        "repeat.times",
    );
    // Each level is within REPEAT_TIMES_MAX, their product is not.
    refused(
        root(json!([{ "repeat": { "times": 1_000_000, "script": [
            { "repeat": { "times": 1_000_000, "script": [{ "work": 1 }] } } ] } }])),
        "makes more than 1000000 script steps",
    );
    // The steps of children that share one script count for every child.
    refused(
        root(json!([{ "repeat": { "times": 1_000, "script": [
            { "repeat": { "times": 1_000, "script": [{ "spawn": { "name": "c{r}", "script": [{ "work": 1 }] } }] } }
        ] } }])),
        "makes more than 1000000 script steps",
    );
    // Nested repeats of nothing cost nothing.
    parsed(root(json!([{ "repeat": { "times": 1_000_000, "script": [
        { "repeat": { "times": 1_000_000, "script": [] } } ] } }])));
    // Many agents, each small: the run's agent bound.
    refused(
        with_agents(
            json!([{ "name": "a{i}", "count": 100_000, "script": [{ "spawn": { "name": "c{i}" } }] }]),
        ),
        "makes more than 100000 agents",
    );
    refused(
        with_agents(json!([{ "name": "a{i}", "count": 60_000 }, { "name": "b{i}", "count": 60_000 }])),
        "agents[1]: this count makes more than 100000 agents",
    );
}

#[test]
fn deep_nesting_is_refused() {
    let mut script = json!([{ "work": 1 }]);
    for _ in 0..40 {
        script = json!([{ "repeat": { "times": 1, "script": script } }]);
    }
    let err = parse(root(script)).unwrap_err();
    assert!(
        err.message.contains("nest deeper") || err.message.contains("recursion"),
        "{err}"
    );
}

#[test]
fn pathologically_deep_text_is_refused_without_overflowing_the_stack() {
    let depth = 100_000;
    let steps = format!(
        "{{\"name\":\"x\",\"agents\":[{{\"name\":\"r\",\"script\":{}{}}}]}}",
        "[{\"repeat\":{\"times\":1,\"script\":".repeat(depth),
        "[]}}]".repeat(depth)
    );
    assert!(scenario::parse("deep.json", &steps).is_err());
    let arguments = format!(
        "{{\"name\":\"x\",\"agents\":[{{\"name\":\"r\",\"script\":[{{\"ask\":{}{}}}]}}]}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let err = scenario::parse("deep.json", &arguments).unwrap_err();
    assert!(err.message.contains("recursion limit"), "{err}");
}

// ---------------------------------------------------------------------------------
// Reading files.

fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("scenario_format-{name}"));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn unreadable_files_are_errors_naming_the_file() {
    let missing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-scenario.json");
    let err = scenario::load(&missing).unwrap_err();
    assert_eq!(err.file, missing.display().to_string());
    assert!(err.message.starts_with("cannot read"), "{err}");

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let err = scenario::load(dir).unwrap_err();
    assert!(err.message.starts_with("cannot read"), "{err}");

    let latin1 = scratch("latin1.json", b"{\"name\": \"caf\xe9\"}");
    let err = scenario::load(&latin1).unwrap_err();
    assert_eq!((err.line, err.column), (Some(1), Some(14)));
    assert!(err.message.contains("not UTF-8"), "{err}");
}

#[test]
fn the_sample_bad_files_are_all_refused() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios_bad");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    assert!(paths.len() >= 3);
    let errors = scenario::validate_files(&paths);
    assert_eq!(errors.len(), paths.len(), "{errors:?}");
    for (err, path) in errors.iter().zip(&paths) {
        assert_eq!(err.file, path.display().to_string());
        assert!(err.line.is_some() && err.column.is_some(), "{err}");
    }
    let good = scratch("good.json", SPEC_EXAMPLE.as_bytes());
    assert!(scenario::validate_files(&[good]).is_empty());
}

#[test]
fn display_omits_a_missing_position() {
    let err = ScenarioError::new("f.json", "boom");
    assert_eq!(err.to_string(), "f.json: boom");
    let err = ScenarioError {
        line: Some(2),
        column: Some(5),
        ..err
    };
    assert_eq!(err.to_string(), "f.json:2:5: boom");
}

// ---------------------------------------------------------------------------------
// Never a panic, whatever the input.

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[a-z{}/*0-9 ]{0,8}".prop_map(Value::from),
        prop::sample::select(vec![
            "name",
            "agents",
            "script",
            "spawn",
            "join",
            "repeat",
            "times",
            "count",
            "work",
            "ask",
            "root",
            "root/1",
            "c{i}",
            "c{r}",
            "all",
            "fixed",
            "never",
            "at",
            "cancel_turn",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "name",
                        "agents",
                        "answerers",
                        "script",
                        "spawn",
                        "join",
                        "repeat",
                        "times",
                        "count",
                        "work",
                        "at",
                        "events",
                        "await_answer",
                        "expect",
                        "counts",
                        "x",
                    ]),
                    inner
                ),
                0..5
            )
            .prop_map(|pairs| Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics_on_any_text(text in ".{0,200}") {
        let _ = scenario::parse("p.json", &text);
    }

    #[test]
    fn parse_never_panics_on_any_json(value in json_value()) {
        let text = serde_json::to_string(&value).unwrap();
        if let Err(err) = scenario::parse("p.json", &text) {
            prop_assert_eq!(err.file, "p.json");
            prop_assert_eq!(err.line.is_some(), err.column.is_some());
        }
    }

    #[test]
    fn parse_never_panics_on_a_cut_or_damaged_example(cut in 0..SPEC_EXAMPLE.len(), byte in any::<u8>()) {
        let mut bytes = SPEC_EXAMPLE.as_bytes().to_vec();
        bytes[cut] = byte;
        if let Ok(text) = String::from_utf8(bytes) {
            let _ = scenario::parse("p.json", &text);
        }
        if let Some(prefix) = SPEC_EXAMPLE.get(..cut) {
            prop_assert!(scenario::parse("p.json", prefix).is_err());
        }
    }
}

/// SPEC §10: a `process` answerer is its name, its command and nothing else; the
/// errors name the key at fault.
#[test]
fn a_process_answerer_takes_a_command_and_no_policy_key() {
    let with = |row: Value| json!({ "name": "t", "answerers": [row], "agents": [] });
    let scenario = parsed(with(json!({ "name": "tg", "process": ["python3", "bot.py"] })));
    assert_eq!(
        scenario.answerers[0].process,
        Some(vec!["python3".to_owned(), "bot.py".to_owned()])
    );
    assert_eq!(
        scenario.answerers[0].policy.accepts,
        Accepts::None,
        "its policy says it is not used"
    );
    let err = refused(
        with(json!({ "name": "tg", "process": ["python3"], "hold": { "after": 1 } })),
        "a `process` answerer takes no policy keys",
    );
    assert!(err.message.starts_with("answerers[0].hold:"), "{err}");
    refused(
        with(json!({ "name": "tg", "process": [] })),
        "answerers[0].process: expected a program",
    );
    refused(
        with(json!({ "name": "tg", "process": [""] })),
        "answerers[0].process[0]: the program is empty",
    );
    refused(
        with(json!({ "name": "tg", "latency": 1, "answer": "skip" })),
        "missing field `accepts` (or `process`",
    );
}
