//! SPEC §7: `asksim schema --scenario` prints a JSON Schema of the scenario format
//! (SPEC §5). Every scenario of the repository validates against the printed schema;
//! a file with an unknown key, at any level, does not; the schema and the parser
//! agree on the forms the format added (bare latencies, `accepts: "none"` without
//! `latency`/`answer`, `explore`, `$schema`, the broker's limits).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use asksim::scenario::{self, PCT_DEPTH_MAX, Strategy};
use serde_json::{Value, json};

fn asksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(args)
        .output()
        .expect("the asksim binary runs")
}

/// The schema as `asksim schema --scenario` prints it.
fn printed_schema() -> Value {
    let output = asksim(&["schema", "--scenario"]);
    assert!(output.status.success(), "{output:?}");
    assert!(output.stderr.is_empty(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("the schema is JSON")
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&printed_schema()).expect("the schema compiles")
}

/// The schema's complaints about `instance`, one line each.
fn errors(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|err| format!("{}: {err}", err.instance_path()))
        .collect()
}

fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    paths
}

#[test]
fn schema_scenario_prints_the_library_schema_as_pretty_json() {
    let output = asksim(&["schema", "--scenario"]);
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    let expected = serde_json::to_string_pretty(&scenario::json_schema()).unwrap() + "\n";
    assert_eq!(text, expected);
    assert_eq!(
        asksim(&["schema", "--scenario"]).stdout,
        text.as_bytes(),
        "byte-stable"
    );
}

#[test]
fn the_schema_is_a_draft_07_schema_of_a_closed_object() {
    let schema = printed_schema();
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
    jsonschema::meta::validate(&schema).expect("a valid schema");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["required"], json!(["name"]));
}

#[test]
fn mode_and_scenario_are_mutually_exclusive_and_one_is_required() {
    for args in [
        &["schema", "--mode", "timed", "--scenario"][..],
        &["schema", "--scenario", "--mode", "legacy"],
        &["schema"],
    ] {
        let output = asksim(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(!output.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn every_scenario_in_the_repository_validates_against_the_printed_schema() {
    let validator = validator();
    let files = scenario_files();
    assert!(files.len() >= 20, "{files:?}");
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let instance: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            errors(&validator, &instance),
            Vec::<String>::new(),
            "{}",
            path.display()
        );
        // And the parser agrees.
        scenario::parse(&path.display().to_string(), &text).unwrap();
    }
}

#[test]
fn a_file_with_an_unknown_key_does_not_validate() {
    let validator = validator();
    let bad = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios_bad/unknown_key.json");
    let instance: Value = serde_json::from_str(&std::fs::read_to_string(bad).unwrap()).unwrap();
    assert!(!validator.is_valid(&instance));
    for instance in [
        json!({ "name": "x", "agnets": [] }),
        json!({ "name": "x", "broker": { "offer_timeout": 1, "x": 1 } }),
        json!({ "name": "x", "answerers": [{ "name": "a", "accepts": "all", "latency": 1, "answer": "skip", "colour": 1 }] }),
        json!({ "name": "x", "answerers": [{ "name": "a", "accepts": "all", "latency": { "fixed": 1, "x": 1 }, "answer": "skip" }] }),
        json!({ "name": "x", "agents": [{ "name": "r", "script": [{ "wrok": 1 }] }] }),
        json!({ "name": "x", "agents": [{ "name": "r", "script": [{ "spawn": { "name": "c", "count": 2 } }] }] }),
        json!({ "name": "x", "events": [{ "at": 1, "cancel_turn": "r", "why": 1 }] }),
        json!({ "name": "x", "expect": { "result": {} } }),
        json!({ "name": "x", "tool": { "window": 3 } }),
    ] {
        assert!(!validator.is_valid(&instance), "{instance}");
        assert!(
            scenario::parse("t.json", &instance.to_string()).is_err(),
            "{instance}"
        );
    }
}

#[test]
fn the_schema_and_the_parser_agree_on_the_added_forms() {
    let validator = validator();
    let good = json!({
        "$schema": "./asksim-scenario.schema.json",
        "name": "added",
        "explore": "pct:3",
        "broker": { "offer_timeout": 0.5, "open_calls_max": 10, "agents_per_tree_max": 4 },
        "answerers": [
            { "name": "mute", "accepts": "none" },
            { "name": "bot", "accepts": "all", "offer_latency": 0.05, "latency": 2, "answer": "recommended" }
        ],
        "agents": [{ "name": "root", "script": [{ "work": 1 }] }]
    });
    assert_eq!(errors(&validator, &good), Vec::<String>::new());
    scenario::parse("t.json", &good.to_string()).unwrap();
    // An optional key given `null` is the key left out, to both.
    let nulls = json!({ "name": "x", "tool": null, "explore": null, "broker": null, "jitter": null });
    assert_eq!(errors(&validator, &nulls), Vec::<String>::new());
    scenario::parse("t.json", &nulls.to_string()).unwrap();
    for bad in [
        json!({ "name": "x", "answerers": [{ "name": "a", "accepts": "all", "answer": "skip" }] }),
        json!({ "name": "x", "answerers": [{ "name": "a", "accepts": "keyed", "latency": 1 }] }),
        json!({ "name": "x", "explore": "pct:0" }),
        json!({ "name": "x", "explore": "lifo" }),
        json!({ "name": "x", "$schema": 1 }),
        json!({ "name": "x", "broker": { "open_calls_max": 0 } }),
        json!({ "name": "x", "broker": { "agents_per_tree_max": 100_001 } }),
        json!({ "name": "x", "limits": { "virtual_s_max": 2e9 } }),
        // Negative seconds: the parser refuses them, so the schema does too.
        json!({ "name": "x", "agents": [{ "name": "r", "script": [{ "work": -1 }] }] }),
        json!({ "name": "x", "events": [{ "at": -1, "cancel_turn": "r" }], "agents": [{ "name": "r" }] }),
        json!({ "name": "x", "events": [{ "at": 1, "process_loss": { "restart_after": -1 } }] }),
        json!({ "name": "x", "jitter": { "max": -0.5 } }),
        json!({ "name": "x", "answerers": [{ "name": "a", "accepts": "all", "latency": 1, "answer": "skip", "hold": { "after": -1 } }] }),
        json!({ "name": "x", "answerers": [{ "name": "a", "accepts": "all", "latency": 1, "answer": "skip", "faults": { "crash_at": -1 } }] }),
    ] {
        assert!(!validator.is_valid(&bad), "{bad}");
        assert!(scenario::parse("t.json", &bad.to_string()).is_err(), "{bad}");
    }
}

#[test]
fn the_schema_lists_exactly_the_explore_forms_the_parser_takes() {
    let schema = printed_schema();
    let enumerated = schema["properties"]["explore"]["enum"].as_array().unwrap();
    // `null`, the key left out, as the parser takes it for every optional key.
    assert_eq!(enumerated.last(), Some(&Value::Null));
    let listed: Vec<&str> = (enumerated.iter()).filter_map(|form| form.as_str()).collect();
    assert_eq!(listed.len(), 2 + PCT_DEPTH_MAX as usize);
    for form in &listed {
        assert!(form.parse::<Strategy>().is_ok(), "{form}");
    }
    for depth in 0..=PCT_DEPTH_MAX + 2 {
        let form = format!("pct:{depth}");
        assert_eq!(
            form.parse::<Strategy>().is_ok(),
            listed.contains(&form.as_str()),
            "{form}"
        );
    }
}

/// SPEC §10: an answerer may be an outside process; the schema and the parser
/// agree that it takes no policy key beside its command, and that any other
/// answerer needs `accepts`.
#[test]
fn the_schema_and_the_parser_agree_on_process_answerers() {
    let validator = validator();
    let with = |row: Value| json!({ "name": "x", "answerers": [row], "agents": [] });
    let good = with(json!({ "name": "tg{i}", "count": 2, "process": ["python3", "bot.py", "--fast"] }));
    assert_eq!(errors(&validator, &good), Vec::<String>::new());
    let parsed = scenario::parse("t.json", &good.to_string()).unwrap();
    assert_eq!(parsed.answerers.len(), 2);
    assert_eq!(
        parsed.answerers[1].process.as_deref(),
        Some(&["python3".to_owned(), "bot.py".to_owned(), "--fast".to_owned()][..])
    );
    assert!(parsed.has_process_answerers());
    for bad in [
        with(json!({ "name": "tg", "process": ["python3"], "accepts": "all" })),
        with(json!({ "name": "tg", "process": ["python3"], "latency": 1 })),
        with(json!({ "name": "tg", "process": [] })),
        with(json!({ "name": "tg", "process": "python3 bot.py" })),
        with(json!({ "name": "tg", "latency": 1, "answer": "skip" })),
    ] {
        assert!(!validator.is_valid(&bad), "{bad}");
        assert!(scenario::parse("t.json", &bad.to_string()).is_err(), "{bad}");
    }
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/external/bot.json");
    let example: Value = serde_json::from_str(&std::fs::read_to_string(example).unwrap()).unwrap();
    assert_eq!(errors(&validator, &example), Vec::<String>::new());
}
