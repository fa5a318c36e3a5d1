//! SPEC §2.2: `asksim schema --mode legacy|timed` prints the one definition, byte
//! for byte the golden files (the legacy golden file is the freeze), the schemas
//! state the limits of §2.3 with the crate's own constants, and the descriptions
//! say what the contract requires them to say.

use std::path::Path;
use std::process::{Command, Output};

use asksim::tool::limits::*;
use asksim::tool::{legacy, timed};
use serde_json::{Value, json};

fn asksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(args)
        .output()
        .expect("the asksim binary runs")
}

fn golden(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn schema(mode: &str) -> Vec<u8> {
    let output = asksim(&["schema", "--mode", mode]);
    assert!(output.status.success(), "{output:?}");
    assert!(output.stderr.is_empty(), "{output:?}");
    output.stdout
}

#[test]
fn schema_legacy_prints_the_golden_file_byte_for_byte() {
    assert!(
        schema("legacy") == golden("legacy.json"),
        "legacy definition differs from tests/golden/legacy.json"
    );
}

#[test]
fn schema_timed_prints_the_golden_file_byte_for_byte() {
    assert!(
        schema("timed") == golden("timed.json"),
        "timed definition differs from tests/golden/timed.json"
    );
}

#[test]
fn library_definitions_equal_the_golden_files() {
    assert_eq!(legacy::DEFINITION.as_bytes(), golden("legacy.json"));
    assert_eq!(timed::DEFINITION.as_bytes(), golden("timed.json"));
}

#[test]
fn schema_output_is_byte_stable_across_runs() {
    for mode in ["legacy", "timed"] {
        assert_eq!(schema(mode), schema(mode), "{mode}");
    }
}

#[test]
fn schema_with_an_unknown_mode_exits_with_code_2() {
    for args in [
        &["schema", "--mode", "fast"][..],
        &["schema", "--mode", "Timed"],
        &["schema"],
    ] {
        let output = asksim(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(!output.stderr.is_empty(), "{args:?}");
    }
}

fn definition(text: &str) -> Value {
    serde_json::from_str(text).expect("a definition is JSON")
}

fn question_items(definition: &Value) -> &Value {
    &definition["input_schema"]["properties"]["questions"]["items"]
}

fn option_items(definition: &Value) -> &Value {
    &question_items(definition)["properties"]["options"]["items"]
}

#[test]
fn schema_limits_equal_the_limit_constants() {
    for text in [legacy::DEFINITION, timed::DEFINITION] {
        let d = definition(text);
        let questions = &d["input_schema"]["properties"]["questions"];
        assert_eq!(questions["minItems"], json!(QUESTIONS_PER_CALL_MIN));
        assert_eq!(questions["maxItems"], json!(QUESTIONS_PER_CALL_MAX));
        let q = &question_items(&d)["properties"];
        assert_eq!(q["question"]["minLength"], json!(1));
        assert_eq!(q["question"]["maxLength"], json!(QUESTION_CHARS_MAX));
        assert_eq!(q["header"]["minLength"], json!(1));
        assert_eq!(q["header"]["maxLength"], json!(HEADER_CHARS_MAX));
        assert_eq!(q["options"]["minItems"], json!(OPTIONS_PER_QUESTION_MIN));
        assert_eq!(q["options"]["maxItems"], json!(OPTIONS_PER_QUESTION_MAX));
        let o = &option_items(&d)["properties"];
        assert_eq!(o["label"]["minLength"], json!(1));
        assert_eq!(o["label"]["maxLength"], json!(LABEL_CHARS_MAX));
        assert_eq!(o["description"]["maxLength"], json!(DESCRIPTION_CHARS_MAX));
        assert!(o["description"].get("minLength").is_none());
    }
    let d = definition(timed::DEFINITION);
    assert_eq!(
        question_items(&d)["properties"]["id"]["pattern"],
        json!(format!("^[A-Za-z0-9_-]{{1,{ID_CHARS_MAX}}}$"))
    );
    let timeout = &d["input_schema"]["properties"]["timeout"]["anyOf"];
    assert_eq!(timeout[0]["exclusiveMinimum"], json!(0));
    assert_eq!(timeout[0]["maximum"].as_f64(), Some(TIMEOUT_S_MAX));
    assert_eq!(timeout[1]["const"].as_f64(), Some(TIMEOUT_BLOCKING));
}

#[test]
fn multi_select_and_option_description_are_optional_and_the_rest_required() {
    for (text, question_fields) in [
        (legacy::DEFINITION, &["question", "header", "options"][..]),
        (timed::DEFINITION, &["id", "question", "header", "options"]),
    ] {
        let d = definition(text);
        assert_eq!(d["input_schema"]["required"], json!(["questions"]));
        let q = question_items(&d);
        assert_eq!(q["required"], json!(question_fields));
        assert_eq!(q["properties"]["multiSelect"]["type"], "boolean");
        assert_eq!(q["properties"]["multiSelect"]["default"], json!(false));
        assert_eq!(option_items(&d)["required"], json!(["label"]));
    }
}

/// Every object schema names its properties, requires only some of them and
/// allows nothing else: unknown fields are refused by the schema as by the code.
fn assert_closed_objects(schema: &Value, path: &str) {
    if schema.get("type") == Some(&json!("object")) {
        let properties = schema["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{path}: no properties"));
        assert_eq!(schema["additionalProperties"], json!(false), "{path}");
        for required in schema["required"]
            .as_array()
            .unwrap_or_else(|| panic!("{path}: no required"))
        {
            assert!(
                properties.contains_key(required.as_str().unwrap()),
                "{path}: {required}"
            );
        }
        for (key, property) in properties {
            assert_closed_objects(property, &format!("{path}.{key}"));
        }
    }
    if let Some(items) = schema.get("items") {
        assert_closed_objects(items, &format!("{path}[]"));
    }
}

#[test]
fn every_object_in_both_schemas_is_closed() {
    for text in [legacy::DEFINITION, timed::DEFINITION] {
        let d = definition(text);
        assert_eq!(d["name"], "ask_user_question");
        assert_closed_objects(&d["input_schema"], "input_schema");
    }
}

#[test]
fn both_descriptions_mention_recommended_and_never_approval() {
    for text in [legacy::DEFINITION, timed::DEFINITION] {
        let description = definition(text)["description"].as_str().unwrap().to_owned();
        assert!(description.contains("(Recommended)"), "{description}");
        assert!(description.contains("never approval"), "{description}");
    }
}

#[test]
fn timed_description_mentions_pending_the_late_answer_kind_and_minus_one() {
    let description = definition(timed::DEFINITION)["description"]
        .as_str()
        .unwrap()
        .to_owned();
    for phrase in ["pending", "answer_to_pending_question", "-1"] {
        assert!(description.contains(phrase), "missing {phrase:?}");
    }
}

#[test]
fn legacy_description_promises_no_pending() {
    // The legacy call blocks (SPEC §3.3); its definition must not teach `pending`.
    let description = definition(legacy::DEFINITION)["description"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!description.contains("pending"), "{description}");
    assert!(!description.contains("-1"), "{description}");
}
