//! `asksim shrink` (SPEC §7, issue #12): from a failing run, a 1-minimal scenario
//! that fails the same way, written as an ordinary scenario file that the printed
//! command reproduces. The failing inputs live in `scenarios/failing/`: every
//! file in `scenarios/` must pass.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use asksim::scenario::{self, Clock, Strategy};
use asksim::sim::{self, RunOptions};
use asksim::sim::{Summary, summarise};
use serde_json::{Value, json};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/failing")
        .join(name)
}

fn asksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(args)
        .output()
        .expect("asksim runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `asksim shrink FILE -o OUT [more]`, which must succeed; its stdout.
fn shrink(file: &Path, out: &Path, more: &[&str]) -> String {
    let (file, out) = (file.display().to_string(), out.display().to_string());
    let mut args = vec!["shrink", file.as_str(), "-o", out.as_str()];
    args.extend(more);
    let output = asksim(&args);
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "asksim {}: stdout {stdout}, stderr {}",
        args.join(" "),
        text(&output.stderr)
    );
    stdout
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("the shrunk file is there");
    serde_json::from_str(&text).expect("the shrunk file is JSON")
}

/// The summary of a run of the scenario `text` under `seed`, strategy random, on
/// the virtual clock; `None` when it is not a valid scenario.
fn summary_of(text: &str, seed: u64) -> Option<Summary> {
    let scenario = scenario::parse("candidate.json", text).ok()?;
    let options = RunOptions {
        seed,
        clock: Clock::Virtual,
        strategy: Strategy::Random,
        keep_events: true,
        journal_after: None,
        ..RunOptions::new(&scenario, seed, Clock::Virtual)
    };
    let output = sim::run_options(&scenario, options).expect("a run without a log");
    Some(summarise(&scenario, "candidate.json", &output))
}

/// [`summary_of`] under `strategy`.
fn summary_with(text: &str, seed: u64, strategy: Strategy) -> Option<Summary> {
    let scenario = scenario::parse("candidate.json", text).ok()?;
    let options = RunOptions {
        seed,
        clock: Clock::Virtual,
        strategy,
        keep_events: false,
        journal_after: None,
        ..RunOptions::new(&scenario, seed, Clock::Virtual)
    };
    let output = sim::run_options(&scenario, options).expect("a run without a log");
    Some(summarise(&scenario, "candidate.json", &output))
}

/// The failed expectation lines of the scenario at `path` under `seed`.
fn failures(path: &Path, seed: u64) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("readable");
    let summary = summary_of(&text, seed).expect("a valid scenario");
    summary.expectations.failures
}

fn names(scenario: &Value, key: &str) -> Vec<String> {
    let items = scenario[key].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .map(|item| item["name"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// The `reproduce with:` command of a report, run with this build's asksim.
fn run_reproduce_command(report: &str) -> Output {
    let line = report
        .lines()
        .find_map(|line| line.trim().strip_prefix("reproduce with: "))
        .unwrap_or_else(|| panic!("no reproduce command in {report}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"asksim"), "{line}");
    asksim(&words[1..])
}

const WORKER7: &str = "results[worker7/1]: expected \
    {\"answers\":[{\"id\":\"deploy\",\"selected\":[\"Yes (Recommended)\"]},{\"id\":\"notify\",\"selected\":[\"Yes (Recommended)\"]}]}, \
    got {\"error\":{\"code\":\"ABORTED\",\"message\":\"the call was cancelled\"}}";

/// Twenty workers, three answerers, five events: the expected answer of worker7/1
/// fails only because the terminal holds it open past 5 s and cancel_call aborts
/// it then. The shrink keeps exactly those three.
#[test]
fn many_agents_shrink_to_the_one_agent_answerer_and_event_that_fail() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (input, out) = (fixture("many-agents.json"), dir.path().join("min.json"));
    assert_eq!(failures(&input, 3), vec![WORKER7.to_owned()]);
    let report = shrink(&input, &out, &[]);
    let shrunk = read_json(&out);
    assert_eq!(names(&shrunk, "agents"), ["worker7"]);
    assert_eq!(names(&shrunk, "answerers"), ["terminal"]);
    assert_eq!(
        shrunk["events"],
        json!([{ "at": 5.0, "cancel_call": "worker7/1" }])
    );
    let script = shrunk["agents"][0]["script"].as_array().expect("a script");
    assert_eq!(script.len(), 1, "only the ask is needed: {script:?}");
    let questions = script[0]["ask"]["questions"].as_array().expect("questions");
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0]["options"].as_array().map(Vec::len), Some(2));
    assert_eq!(shrunk["expect"]["results"].as_object().map(|m| m.len()), Some(1));
    for gone in ["about", "jitter", "limits"] {
        assert!(shrunk.get(gone).is_none(), "{gone} is not needed");
    }
    assert_eq!(shrunk["seed"], 3, "the file's seed is kept");
    assert!(
        report.contains("fails with      expectation results[worker7/1]"),
        "{report}"
    );
    assert!(
        report.contains("agents[0] (count 20): worker0 … worker19"),
        "{report}"
    );
    assert!(
        report.contains("19 of 20 agents, 2 of 3 answerers, 4 of 5 events"),
        "{report}"
    );
    assert!(report.contains("1-minimal       yes"), "{report}");

    let again = run_reproduce_command(&report);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again.stdout));
    let expected = format!("EXPECTATION FAILED {WORKER7}");
    assert!(text(&again.stdout).contains(&expected), "{}", text(&again.stdout));
}

/// Every scenario that `scenario` becomes when one list element is removed (no
/// repair: a dangling reference makes it invalid, which counts as not failing).
fn single_removals(scenario: &Value) -> Vec<(String, Value)> {
    let mut lists: Vec<String> = ["/agents", "/answerers", "/events"].map(str::to_owned).to_vec();
    for key in ["results", "user_messages", "counts", "final_results"] {
        lists.push(format!("/expect/{key}"));
    }
    for (k, agent) in scenario["agents"].as_array().into_iter().flatten().enumerate() {
        step_lists(agent, &format!("/agents/{k}"), &mut lists);
    }
    let mut out = Vec::new();
    for list in lists {
        let len = match scenario.pointer(&list) {
            Some(Value::Array(items)) => items.len(),
            Some(Value::Object(map)) => map.len(),
            _ => continue,
        };
        for i in 0..len {
            let mut candidate = scenario.clone();
            match candidate.pointer_mut(&list) {
                Some(Value::Array(items)) => {
                    items.remove(i);
                }
                Some(Value::Object(map)) => {
                    let key = map.keys().nth(i).cloned().expect("a key");
                    map.shift_remove(&key);
                }
                _ => unreachable!(),
            }
            out.push((format!("{list}[{i}]"), candidate));
        }
    }
    for key in ["about", "jitter", "limits"] {
        let mut candidate = scenario.clone();
        if candidate
            .as_object_mut()
            .and_then(|o| o.shift_remove(key))
            .is_some()
        {
            out.push((key.to_owned(), candidate));
        }
    }
    out
}

fn step_lists(agent: &Value, at: &str, lists: &mut Vec<String>) {
    for key in ["script", "on_resume"] {
        let Some(steps) = agent[key].as_array() else {
            continue;
        };
        lists.push(format!("{at}/{key}"));
        for (s, step) in steps.iter().enumerate() {
            let here = format!("{at}/{key}/{s}");
            if step.get("spawn").is_some() {
                step_lists(&step["spawn"], &format!("{here}/spawn"), lists);
            }
            let questions = step.pointer("/ask/questions").and_then(Value::as_array);
            for (q, _) in questions.into_iter().flatten().enumerate() {
                lists.push(format!("{here}/ask/questions/{q}/options"));
            }
            if questions.is_some() {
                lists.push(format!("{here}/ask/questions"));
            }
        }
    }
}

/// The result is 1-minimal: removing any one remaining element (here without the
/// shrinker's own repair) gives a scenario that is invalid or no longer fails with
/// the same expectation line.
#[test]
fn shrunk_scenarios_are_one_minimal() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (name, seed) in [("many-agents.json", 3), ("references.json", 1)] {
        let (input, out) = (fixture(name), dir.path().join(name));
        let primary = failures(&input, seed).remove(0);
        shrink(&input, &out, &[]);
        let shrunk = read_json(&out);
        let removals = single_removals(&shrunk);
        assert!(removals.len() >= 8, "{name}: {} removals", removals.len());
        for (what, candidate) in removals {
            let summary = summary_of(&candidate.to_string(), seed);
            let same = summary.is_some_and(|s| {
                s.invariants.violations.is_empty() && s.expectations.failures.contains(&primary)
            });
            assert!(!same, "{name}: removing {what} still fails with {primary}");
        }
    }
}

/// The same input gives the same file, byte for byte, and the same report.
#[test]
fn shrinking_is_deterministic() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let input = fixture("references.json");
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let report_a = shrink(&input, &a, &[]);
    let report_b = shrink(&input, &b, &[]);
    let bytes_a = std::fs::read(&a).expect("a");
    assert_eq!(bytes_a, std::fs::read(&b).expect("b"));
    let b_shown = b.display().to_string();
    assert_eq!(report_a, report_b.replace(&b_shown, &a.display().to_string()));
    let shown = text(&bytes_a);
    assert!(
        shown.starts_with("{\n  \"name\": \"leads\",\n"),
        "pretty, two spaces: {shown}"
    );
    assert!(shown.ends_with("}\n"));
}

/// A scenario with `count`, `lineage`, `spawn`, `join`, `await_answer` and a
/// `repeat` shrinks to a valid file whose references name what it holds.
#[test]
fn count_and_references_shrink_to_a_valid_file_with_the_references_intact() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (input, out) = (fixture("references.json"), dir.path().join("min.json"));
    let report = shrink(&input, &out, &[]);
    let text = std::fs::read_to_string(&out).expect("written");
    scenario::parse("min.json", &text).unwrap_or_else(|e| panic!("{e}"));
    let shrunk: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(names(&shrunk, "answerers"), ["desk"]);
    assert_eq!(shrunk["events"], json!([{ "at": 6.5, "cancel_turn": "lead2" }]));
    let lead = &shrunk["agents"][0];
    assert_eq!(shrunk["agents"].as_array().map(Vec::len), Some(1));
    assert_eq!(lead["name"], "lead2");
    assert_eq!(lead["lineage"], json!({ "parent": "boss2" }));
    let steps: Vec<&str> = (lead["script"].as_array().expect("a script").iter())
        .map(|step| {
            step.as_object()
                .and_then(|o| o.keys().next())
                .map_or("?", String::as_str)
        })
        .collect();
    assert_eq!(steps, ["spawn", "join", "ask_unresolved", "await_answer", "ask"]);
    assert_eq!(lead["script"][0]["spawn"]["name"], "sub2");
    assert_eq!(lead["script"][1]["join"], "sub2");
    assert_eq!(lead["script"][3]["await_answer"], "lead2/1");
    assert!(report.contains("agents[0] (count 4): lead0 … lead3"), "{report}");
    assert!(!report.contains("kept as written"), "{report}");
    let again = run_reproduce_command(&report);
    assert_eq!(
        again.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
}

/// With no time to search, the written-out input is the best so far: it is the
/// very scenario of the input (count and repeat written out), fails the same way,
/// and the report says it may not be 1-minimal.
#[test]
fn a_time_bound_writes_the_best_so_far_and_says_so() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (input, out) = (fixture("references.json"), dir.path().join("min.json"));
    let report = shrink(&input, &out, &["--max-s", "0"]);
    assert!(
        report.contains("NOT PROVEN: the time bound (--max-s) was hit"),
        "{report}"
    );
    assert!(report.contains("may not be 1-minimal"), "{report}");
    let written = std::fs::read_to_string(&out).expect("written");
    let original = std::fs::read_to_string(&input).expect("readable");
    assert_eq!(
        scenario::parse("min.json", &written).expect("valid"),
        scenario::parse("min.json", &original).expect("valid"),
        "writing out count and repeat changes nothing that runs"
    );
    assert!(!written.contains("\"count\"") && !written.contains("\"repeat\""));
    let again = run_reproduce_command(&report);
    assert_eq!(again.status.code(), Some(1));
}

/// Bad input exits 2 with a message naming what is wrong, and writes nothing: an
/// input that passes, an invalid scenario, an unwritable output, a bad bound.
#[test]
fn inputs_that_do_not_fail_or_are_bad_exit_2() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().join("out.json");
    let out_shown = out.display().to_string();
    let quickstart = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.json");
    let quickstart = quickstart.display().to_string();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"name\": \"x\", \"agnets\": []}").expect("writable");
    let bad = bad.display().to_string();
    let many = fixture("many-agents.json").display().to_string();
    let unwritable = dir.path().join("no/such/dir/out.json").display().to_string();
    let cases: [(Vec<&str>, &str); 4] = [
        (vec![&quickstart, "-o", &out_shown], "does not fail under seed 1"),
        (
            vec![&bad, "-o", &out_shown],
            "bad.json:1:22: unknown field `agnets`",
        ),
        (vec![&many, "-o", &unwritable], "cannot write"),
        (
            vec![&many, "-o", &out_shown, "--max-s", "-1"],
            "--max-s: expected a number of seconds",
        ),
    ];
    for (args, needle) in cases {
        let output = asksim(&[&["shrink"][..], &args].concat());
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(!out.exists(), "{args:?} wrote {out_shown}");
    }
}

/// The answer-vs-cancel tie, expecting the answer: under the seeds where the
/// cancel wins, `counts[answered]` is 0.
const RACE_EXPECTING_ANSWER: &str = r#"{
  "name": "race-expecting-answer",
  "tool": { "mode": "timed" },
  "answerers": [ { "name": "web", "accepts": "all", "latency": 3.0, "answer": "recommended" } ],
  "agents": [ { "name": "root", "script": [ { "ask": { "questions": [ { "id": "db", "question": "Which database?", "header": "Database", "options": [ { "label": "Postgres (Recommended)" }, { "label": "SQLite" } ] } ], "timeout": -1 } } ] } ],
  "events": [ { "at": 3.0, "cancel_turn": "root" } ],
  "expect": { "counts": { "answered": 1 } }
}"#;

/// Regression (issue #22): a `counts` failure shrank to a file with no agent, no
/// answerer and no event, "1-minimal", since an empty run also answers 0; and the
/// shrunk file kept `"seed": 0` while the failure was under another seed, so
/// `asksim run x.min.json` passed. A count fails the same way only while the calls
/// that made it differ are there and end the same way, and the shrunk file carries
/// the failing seed.
#[test]
fn a_counts_failure_keeps_the_calls_that_made_the_count_differ_and_its_seed() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (input, out) = (dir.path().join("race.json"), dir.path().join("race.min.json"));
    let fails = |seed: &u64| summary_of(RACE_EXPECTING_ANSWER, *seed).is_some_and(|s| !s.passed());
    let failing = (0..64u64).find(fails).expect("the cancel wins under some seed");
    let passing = (0..64u64)
        .find(|seed| !fails(seed))
        .expect("the answer wins under some seed");
    // The file's own seed passes, so only --seed makes it fail.
    let with_seed = RACE_EXPECTING_ANSWER.replacen(
        r#""name": "race-expecting-answer","#,
        &format!(r#""name": "race-expecting-answer", "seed": {passing},"#),
        1,
    );
    std::fs::write(&input, &with_seed).expect("writable");
    let seed = failing.to_string();
    let report = shrink(&input, &out, &["--seed", &seed]);
    assert!(
        report.contains(
            "fails with      expectation counts[answered]: expected 1, got 0 (from root/1 ABORTED)"
        ),
        "{report}"
    );
    let shrunk = read_json(&out);
    assert_eq!(names(&shrunk, "agents"), ["root"], "{shrunk:#}");
    assert_eq!(names(&shrunk, "answerers"), ["web"], "{shrunk:#}");
    assert_eq!(shrunk["events"], json!([{ "at": 3.0, "cancel_turn": "root" }]));
    assert_eq!(shrunk["seed"], failing, "the failing seed is in the file");
    let keys: Vec<&String> = shrunk.as_object().expect("an object").keys().collect();
    assert_eq!(keys[..2], ["name", "seed"], "the seed comes right after the name");
    let out_shown = out.display().to_string();
    let again = asksim(&["run", &out_shown]);
    let stdout = text(&again.stdout);
    assert_eq!(again.status.code(), Some(1), "run with no flags fails: {stdout}");
    assert!(
        stdout.contains("EXPECTATION FAILED counts[answered]: expected 1, got 0"),
        "{stdout}"
    );
}

/// A file that runs on the real clock shrinks on the virtual one, and says so:
/// `asksim run OUT` with no flags fails the same way, not on the wall clock.
#[test]
fn a_real_clock_file_shrinks_to_a_virtual_clock_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (input, out) = (dir.path().join("real.json"), dir.path().join("real.min.json"));
    let failing = (0..64u64)
        .find(|seed| summary_of(RACE_EXPECTING_ANSWER, *seed).is_some_and(|s| !s.passed()))
        .expect("the cancel wins under some seed");
    let real = RACE_EXPECTING_ANSWER.replacen(
        r#""name": "race-expecting-answer","#,
        r#""name": "race-expecting-answer", "clock": "real","#,
        1,
    );
    std::fs::write(&input, &real).expect("writable");
    shrink(&input, &out, &["--seed", &failing.to_string()]);
    let shrunk = read_json(&out);
    assert_eq!(shrunk["clock"], "virtual", "{shrunk:#}");
    let again = asksim(&["run", &out.display().to_string()]);
    let stdout = text(&again.stdout);
    assert_eq!(again.status.code(), Some(1), "run with no flags fails: {stdout}");
    assert!(stdout.contains("virtual clock"), "{stdout}");
}

/// A count that is too high keeps every call it counted: `counts[ABORTED]: 0`
/// broken by the cancel keeps root/1 aborted (not an empty run, which aborts
/// nothing and passes anyway), and the failing strategy rides into the file.
#[test]
fn a_count_too_high_keeps_the_calls_it_counted_and_the_strategy() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (input, out) = (dir.path().join("over.json"), dir.path().join("over.min.json"));
    let text_in = RACE_EXPECTING_ANSWER.replace(r#""answered": 1"#, r#""ABORTED": 0"#);
    std::fs::write(&input, &text_in).expect("writable");
    let strategy = Strategy::Pct { depth: 2 };
    let failing = (0..64u64)
        .find(|seed| summary_with(&text_in, *seed, strategy).is_some_and(|s| !s.passed()))
        .expect("the cancel wins under some seed");
    let (seed, shown) = (failing.to_string(), strategy.to_string());
    let report = shrink(&input, &out, &["--seed", &seed, "--explore", &shown]);
    assert!(report.contains("(from root/1 ABORTED)"), "{report}");
    let shrunk = read_json(&out);
    assert_eq!(names(&shrunk, "agents"), ["root"], "{shrunk:#}");
    assert_eq!(shrunk["seed"], failing);
    assert_eq!(shrunk["explore"], "pct:2");
    let again = asksim(&["run", &out.display().to_string()]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again.stdout));
}

/// An outside process that cannot start fails every candidate the same way,
/// so shrinking would "keep" the failure while removing everything: a typo in
/// `--broker-cmd` made a 1-minimal scenario with no agent and no answerer, exit
/// 0. It is refused (exit 2), nothing written.
#[test]
fn a_broker_command_that_cannot_start_is_not_shrunk() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().join("min.json");
    let quickstart = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.json");
    let output = asksim(&[
        "shrink",
        quickstart.to_str().unwrap(),
        "--broker-cmd",
        "/nonexistent/broker",
        "-o",
        out.to_str().unwrap(),
    ]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--broker-cmd: could not start \"/nonexistent/broker\""),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing written");
}
