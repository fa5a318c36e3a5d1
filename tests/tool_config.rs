//! SPEC §2.1: the plugin row, and §2.2's "exactly one definition is registered".

use asksim::tool::{ConfigError, Mode, Schema, Timeout, ToolConfig, legacy, timed};
use serde_json::{Value, json};

fn config(row: Value) -> Result<ToolConfig, ConfigError> {
    ToolConfig::from_json(Some(&row))
}

fn config_error(row: Value) -> String {
    match config(row.clone()) {
        Ok(c) => panic!("{row} was accepted as {c:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn absent_config_registers_the_legacy_tool() {
    let config = ToolConfig::from_json(None).unwrap();
    assert_eq!(config.mode, Mode::Legacy);
    assert_eq!(config.schema(), Schema::Legacy);
    assert_eq!(config, ToolConfig::default());
}

#[test]
fn null_config_registers_the_legacy_tool() {
    assert_eq!(config(Value::Null).unwrap().mode, Mode::Legacy);
}

#[test]
fn empty_row_registers_the_legacy_tool() {
    assert_eq!(config(json!({})).unwrap().mode, Mode::Legacy);
}

#[test]
fn mode_legacy_registers_the_legacy_tool() {
    assert_eq!(config(json!({"mode": "legacy"})).unwrap().mode, Mode::Legacy);
}

#[test]
fn mode_timed_registers_the_timed_tool_with_default_timeout_120() {
    let config = config(json!({"mode": "timed"})).unwrap();
    assert_eq!(config.mode, Mode::Timed);
    assert_eq!(config.schema(), Schema::Timed);
    assert_eq!(config.timeout, Timeout::Window(120.0));
}

#[test]
fn timed_timeout_is_a_positive_number_up_to_86400_or_minus_one() {
    for (seconds, expected) in [
        (json!(30), Timeout::Window(30.0)),
        (json!(0.5), Timeout::Window(0.5)),
        (json!(86400), Timeout::Window(86_400.0)),
        (json!(-1), Timeout::Blocking),
    ] {
        let row = json!({"mode": "timed", "timeout": seconds});
        assert_eq!(config(row.clone()).unwrap().timeout, expected, "{row}");
    }
}

#[test]
fn key_order_does_not_matter() {
    let config = config(json!({"timeout": 45, "mode": "timed"})).unwrap();
    assert_eq!(config, ToolConfig::timed(Timeout::Window(45.0)));
}

#[test]
fn timeout_zero_is_a_config_error() {
    let message = config_error(json!({"mode": "timed", "timeout": 0}));
    assert_eq!(
        message,
        "tool.timeout: expected a positive number of seconds up to 86400, or -1, got 0"
    );
}

#[test]
fn timeout_minus_two_is_a_config_error() {
    let message = config_error(json!({"mode": "timed", "timeout": -2}));
    assert_eq!(
        message,
        "tool.timeout: expected a positive number of seconds up to 86400, or -1, got -2"
    );
}

#[test]
fn timeout_above_one_day_is_a_config_error() {
    let message = config_error(json!({"mode": "timed", "timeout": 86400.5}));
    assert!(message.starts_with("tool.timeout: "), "{message}");
}

#[test]
fn timeout_of_the_wrong_type_is_a_config_error() {
    for bad in [json!("30"), json!(null), json!(true), json!([30])] {
        let message = config_error(json!({"mode": "timed", "timeout": bad}));
        assert!(
            message.starts_with("tool.timeout: expected a positive number"),
            "{message}"
        );
    }
}

#[test]
fn bad_timeout_is_a_config_error_in_legacy_mode_too() {
    // A bad row is a bad row, whichever tool it registers.
    let message = config_error(json!({"mode": "legacy", "timeout": 0}));
    assert!(message.starts_with("tool.timeout: "), "{message}");
}

#[test]
fn unknown_mode_is_a_config_error() {
    assert_eq!(
        config_error(json!({"mode": "fast"})),
        r#"tool.mode: expected "legacy" or "timed", got "fast""#
    );
    for bad in [json!("Timed"), json!(""), json!(null), json!(1)] {
        let message = config_error(json!({"mode": bad}));
        assert!(message.starts_with("tool.mode: "), "{message}");
    }
}

#[test]
fn unknown_key_is_a_config_error() {
    let error = config(json!({"mode": "timed", "timeout_s": 30})).unwrap_err();
    assert_eq!(error.key, "timeout_s");
    assert_eq!(
        error.to_string(),
        "tool.timeout_s: unknown key (expected mode or timeout)"
    );
}

#[test]
fn a_row_that_is_not_an_object_is_a_config_error() {
    for bad in [json!("timed"), json!([]), json!(120), json!(true)] {
        let message = config_error(bad);
        assert!(
            message.starts_with("tool.config: expected an object"),
            "{message}"
        );
    }
}

#[test]
fn exactly_one_definition_is_registered() {
    let legacy_config = ToolConfig::default();
    let timed_config = ToolConfig::timed(Timeout::Window(120.0));
    assert_eq!(legacy_config.definition(), legacy::DEFINITION);
    assert_eq!(timed_config.definition(), timed::DEFINITION);
    assert_ne!(legacy::DEFINITION, timed::DEFINITION);
    for config in [legacy_config, timed_config] {
        // One JSON object naming one tool, not a list of definitions.
        let definition: Value = serde_json::from_str(config.definition()).unwrap();
        let keys: Vec<&str> = definition
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["name", "description", "input_schema"]);
        assert_eq!(definition["name"], "ask_user_question");
    }
    // The legacy definition knows nothing of the timed tool, and vice versa.
    let legacy_schema: Value = serde_json::from_str(legacy::DEFINITION).unwrap();
    let timed_schema: Value = serde_json::from_str(timed::DEFINITION).unwrap();
    assert!(
        legacy_schema["input_schema"]["properties"]
            .get("timeout")
            .is_none()
    );
    assert!(
        legacy_schema["input_schema"]["properties"]["questions"]["items"]["properties"]
            .get("id")
            .is_none()
    );
    assert!(
        timed_schema["input_schema"]["properties"]
            .get("timeout")
            .is_some()
    );
}

#[test]
fn the_configured_mode_decides_which_arguments_are_accepted() {
    let timed_args = r#"{"questions":[{"id":"q","question":"Go?","header":"Go","options":[{"label":"Yes"},{"label":"No"}]}]}"#;
    let legacy_args =
        r#"{"questions":[{"question":"Go?","header":"Go","options":[{"label":"Yes"},{"label":"No"}]}]}"#;
    let legacy_config = ToolConfig::default();
    let timed_config = config(json!({"mode": "timed"})).unwrap();
    assert_eq!(timed_config.prepare(timed_args).unwrap().schema, Schema::Timed);
    assert_eq!(legacy_config.prepare(legacy_args).unwrap().schema, Schema::Legacy);
    assert_eq!(
        legacy_config.prepare(timed_args).unwrap_err().to_string(),
        "questions[0].id: unknown field"
    );
    assert_eq!(
        timed_config.prepare(legacy_args).unwrap_err().to_string(),
        "questions[0].id: required field is missing"
    );
}
