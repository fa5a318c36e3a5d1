//! SPEC §2.2–2.3: the arguments both tools accept, their limits (tested at the
//! boundary from both sides, counted in `chars()`), and the `INVALID_ARGUMENTS`
//! message naming the path of the first offending field.

use crate::common;

use asksim::tool::{Mode, Schema, Timeout, ToolConfig, Wait};
use common::*;
use serde_json::{Value, json};

#[test]
fn four_questions_pass_five_are_refused() {
    for config in both() {
        let ask = accept(&config, &args(questions(config.mode, 4)));
        assert_eq!(ask.questions.len(), 4);
        assert_eq!(
            refuse(&config, &args(questions(config.mode, 5))),
            "questions: expected 1 to 4 questions, got 5"
        );
    }
}

#[test]
fn one_question_passes_zero_are_refused() {
    for config in both() {
        accept(&config, &args(questions(config.mode, 1)));
        assert_eq!(
            refuse(&config, &args(vec![])),
            "questions: expected 1 to 4 questions, got 0"
        );
    }
}

fn with_options(mode: Mode, n: usize) -> String {
    let mut qs = questions(mode, 2);
    qs[1]["options"] = (0..n).map(|i| opt(&format!("Option {i}"))).collect();
    args(qs)
}

#[test]
fn two_and_four_options_pass_one_and_five_fail() {
    for config in both() {
        assert_eq!(
            accept(&config, &with_options(config.mode, 2)).questions[1].option_count(),
            2
        );
        assert_eq!(
            accept(&config, &with_options(config.mode, 4)).questions[1].option_count(),
            4
        );
        assert_eq!(
            refuse(&config, &with_options(config.mode, 1)),
            "questions[1].options: expected 2 to 4 options, got 1"
        );
        assert_eq!(
            refuse(&config, &with_options(config.mode, 5)),
            "questions[1].options: expected 2 to 4 options, got 5"
        );
    }
}

#[test]
fn invalid_arguments_result_is_exact_compact_json() {
    for config in both() {
        let error = config.prepare(&with_options(config.mode, 1)).unwrap_err();
        assert_eq!(error.path, "questions[1].options");
        let result = error.to_result();
        assert_eq!(
            result.text,
            r#"{"error":{"code":"INVALID_ARGUMENTS","message":"questions[1].options: expected 2 to 4 options, got 1"}}"#
        );
        assert!(result.is_error());
    }
}

#[test]
fn duplicate_labels_within_a_question_are_refused() {
    for config in both() {
        let mut q = question(config.mode, 0);
        q["options"] = json!([opt("Same"), opt("Other"), {"label": "Same"}]);
        assert_eq!(
            refuse(&config, &args(vec![q])),
            r#"questions[0].options[2].label: duplicate label "Same" within the question"#
        );
    }
}

#[test]
fn labels_may_repeat_across_questions() {
    for config in both() {
        // Both generated questions offer "Yes (Recommended)" and "No".
        accept(&config, &args(questions(config.mode, 2)));
    }
}

#[test]
fn twelve_character_header_passes_thirteen_fails() {
    for config in both() {
        for c in ['a', 'é', '😀'] {
            let ask = accept(&config, &with_field(config.mode, "header", json!(chars(c, 12))));
            assert_eq!(ask.questions[0].header(), chars(c, 12));
            assert_eq!(
                refuse(&config, &with_field(config.mode, "header", json!(chars(c, 13)))),
                "questions[0].header: expected at most 12 characters, got 13"
            );
        }
    }
}

#[test]
fn empty_header_is_refused() {
    for config in both() {
        assert_eq!(
            refuse(&config, &with_field(config.mode, "header", json!(""))),
            "questions[0].header: must not be empty"
        );
    }
}

#[test]
fn sixty_four_character_id_passes_sixty_five_fails() {
    let config = timed();
    let ask = accept(&config, &with_field(Mode::Timed, "id", json!(chars('x', 64))));
    assert_eq!(ask.questions[0].id(), chars('x', 64));
    assert_eq!(
        refuse(&config, &with_field(Mode::Timed, "id", json!(chars('x', 65)))),
        "questions[0].id: expected at most 64 characters, got 65"
    );
}

#[test]
fn id_of_every_allowed_character_passes() {
    let id = "ABCXYZabcxyz0189_-";
    let ask = accept(&timed(), &with_field(Mode::Timed, "id", json!(id)));
    assert_eq!(ask.questions[0].id(), id);
}

#[test]
fn id_with_a_character_outside_a_z_digits_underscore_dash_is_refused() {
    for bad in [
        "has space",
        "dot.ted",
        "sl/ash",
        "caf\u{e9}",
        "emoji😀",
        "tab\t",
        "colon:",
    ] {
        let message = refuse(&timed(), &with_field(Mode::Timed, "id", json!(bad)));
        assert!(
            message.starts_with("questions[0].id: character ")
                && message.ends_with("not allowed (only A-Za-z0-9_-)"),
            "{bad:?}: {message}"
        );
    }
}

#[test]
fn empty_id_is_refused() {
    assert_eq!(
        refuse(&timed(), &with_field(Mode::Timed, "id", json!(""))),
        "questions[0].id: must not be empty"
    );
}

#[test]
fn duplicate_ids_are_refused() {
    let mut qs = questions(Mode::Timed, 3);
    qs[2]["id"] = json!("q0");
    assert_eq!(
        refuse(&timed(), &args(qs)),
        r#"questions[2].id: duplicate id "q0" within the call"#
    );
}

#[test]
fn separate_calls_may_reuse_ids() {
    let config = timed();
    let arguments = args(questions(Mode::Timed, 2));
    let first = accept(&config, &arguments);
    let second = accept(&config, &arguments);
    assert_eq!(first.questions, second.questions);
}

#[test]
fn duplicate_legacy_question_texts_are_refused() {
    let mut qs = questions(Mode::Legacy, 3);
    qs[2]["question"] = json!("Question 1?");
    assert_eq!(
        refuse(&legacy(), &args(qs)),
        "questions[2].question: duplicate question text within the call"
    );
}

#[test]
fn legacy_question_id_is_its_text() {
    let ask = accept(&legacy(), &args(questions(Mode::Legacy, 2)));
    for q in ask.questions.iter() {
        assert_eq!(q.id(), q.question());
    }
}

#[test]
fn thousand_character_question_passes_thousand_and_one_fails() {
    for config in both() {
        for c in ['q', 'é'] {
            accept(
                &config,
                &with_field(config.mode, "question", json!(chars(c, 1000))),
            );
            assert_eq!(
                refuse(
                    &config,
                    &with_field(config.mode, "question", json!(chars(c, 1001)))
                ),
                "questions[0].question: expected at most 1000 characters, got 1001"
            );
        }
    }
}

#[test]
fn empty_question_is_refused() {
    for config in both() {
        assert_eq!(
            refuse(&config, &with_field(config.mode, "question", json!(""))),
            "questions[0].question: must not be empty"
        );
    }
}

#[test]
fn label_of_120_characters_passes_121_fails() {
    for config in both() {
        for c in ['l', '😀'] {
            let ask = accept(
                &config,
                &with_option_field(config.mode, "label", json!(chars(c, 120))),
            );
            assert_eq!(ask.questions[0].option(0).unwrap().label, chars(c, 120));
            assert_eq!(
                refuse(
                    &config,
                    &with_option_field(config.mode, "label", json!(chars(c, 121)))
                ),
                "questions[0].options[0].label: expected at most 120 characters, got 121"
            );
        }
    }
}

#[test]
fn empty_label_is_refused() {
    for config in both() {
        assert_eq!(
            refuse(&config, &with_option_field(config.mode, "label", json!(""))),
            "questions[0].options[0].label: must not be empty"
        );
    }
}

#[test]
fn description_of_500_characters_passes_501_fails() {
    for config in both() {
        for c in ['d', 'é'] {
            accept(
                &config,
                &with_option_field(config.mode, "description", json!(chars(c, 500))),
            );
            assert_eq!(
                refuse(
                    &config,
                    &with_option_field(config.mode, "description", json!(chars(c, 501)))
                ),
                "questions[0].options[0].description: expected at most 500 characters, got 501"
            );
        }
    }
}

#[test]
fn empty_description_passes() {
    for config in both() {
        let ask = accept(&config, &with_option_field(config.mode, "description", json!("")));
        assert_eq!(ask.questions[0].option(0).unwrap().description, "");
    }
}

#[test]
fn multi_select_and_option_description_are_optional() {
    for config in both() {
        let mut q = question(config.mode, 0);
        q.as_object_mut().unwrap().remove("multiSelect");
        q["options"] = json!([{"label": "A"}, {"label": "B"}]);
        let ask = accept(&config, &args(vec![q]));
        let question = &ask.questions[0];
        assert!(!question.multi_select());
        assert_eq!(question.option(0).unwrap().description, "");
        assert_eq!(question.option(1).unwrap().description, "");
    }
}

#[test]
fn multi_select_true_is_kept() {
    for config in both() {
        let ask = accept(&config, &with_field(config.mode, "multiSelect", json!(true)));
        assert!(ask.questions[0].multi_select());
    }
}

#[test]
fn questions_and_options_keep_the_models_order() {
    for config in both() {
        let mut qs = questions(config.mode, 3);
        qs[1]["options"] = json!([opt("C"), opt("A"), opt("B")]);
        let ask = accept(&config, &args(qs));
        let texts: Vec<&str> = ask.questions.iter().map(|q| q.question()).collect();
        assert_eq!(texts, ["Question 0?", "Question 1?", "Question 2?"]);
        let labels: Vec<&str> = ask.questions[1].options().map(|o| o.label).collect();
        assert_eq!(labels, ["C", "A", "B"]);
        assert_eq!(ask.questions[1].option(0).unwrap().description, "Means C.");
    }
}

// Timeout (timed tool).

fn with_timeout(timeout: Value) -> String {
    json!({"questions": questions(Mode::Timed, 1), "timeout": timeout}).to_string()
}

#[test]
fn timeout_86400_passes_86400_point_5_fails() {
    let ask = accept(&timed(), &with_timeout(json!(86400)));
    assert_eq!(ask.wait, Wait::Window(86_400.0));
    assert_eq!(ask.timeout_arg, Some(86_400.0));
    assert_eq!(
        refuse(&timed(), &with_timeout(json!(86400.5))),
        "timeout: expected a positive number of seconds up to 86400, or -1, got 86400.5"
    );
}

#[test]
fn timeout_zero_and_minus_two_fail() {
    assert_eq!(
        refuse(&timed(), &with_timeout(json!(0))),
        "timeout: expected a positive number of seconds up to 86400, or -1, got 0"
    );
    assert_eq!(
        refuse(&timed(), &with_timeout(json!(-2))),
        "timeout: expected a positive number of seconds up to 86400, or -1, got -2"
    );
    for bad in [json!(-0.5), json!(-1.5), json!(0.0)] {
        refuse(&timed(), &with_timeout(bad));
    }
}

#[test]
fn timeout_minus_one_blocks_and_stays_keyed() {
    let ask = accept(&timed(), &with_timeout(json!(-1)));
    assert_eq!(ask.wait, Wait::Blocking);
    assert_eq!(ask.timeout_arg, Some(-1.0));
    assert!(ask.keyed());
}

#[test]
fn fractional_timeout_passes() {
    let ask = accept(&timed(), &with_timeout(json!(0.25)));
    assert_eq!(ask.wait, Wait::Window(0.25));
}

#[test]
fn timeout_of_the_wrong_type_is_refused() {
    for bad in [json!("30"), json!(null), json!(true), json!({})] {
        let message = refuse(&timed(), &with_timeout(bad.clone()));
        assert!(
            message.starts_with("timeout: expected a positive number"),
            "{bad}: {message}"
        );
    }
}

#[test]
fn omitted_timeout_uses_the_configured_default() {
    let arguments = args(questions(Mode::Timed, 1));
    let ask = accept(&ToolConfig::timed(Timeout::Window(45.0)), &arguments);
    assert_eq!(ask.wait, Wait::Window(45.0));
    assert_eq!(ask.timeout_arg, None);
    let ask = accept(&ToolConfig::timed(Timeout::Blocking), &arguments);
    assert_eq!(ask.wait, Wait::Blocking);
    assert_eq!(ask.timeout_arg, None);
}

#[test]
fn a_given_timeout_overrides_the_configured_default() {
    let ask = accept(&ToolConfig::timed(Timeout::Blocking), &with_timeout(json!(5)));
    assert_eq!(ask.wait, Wait::Window(5.0));
}

#[test]
fn legacy_call_blocks_unkeyed_and_takes_no_timeout() {
    let ask = accept(&legacy(), &args(questions(Mode::Legacy, 1)));
    assert_eq!(ask.schema, Schema::Legacy);
    assert_eq!(ask.wait, Wait::Blocking);
    assert_eq!(ask.timeout_arg, None);
    assert!(!ask.keyed());
    let arguments = json!({"questions": questions(Mode::Legacy, 1), "timeout": 30}).to_string();
    assert_eq!(refuse(&legacy(), &arguments), "timeout: unknown field");
}

#[test]
fn every_timed_call_is_keyed() {
    for timeout in [json!(1), json!(-1)] {
        let ask = accept(&timed(), &with_timeout(timeout));
        assert_eq!(ask.schema, Schema::Timed);
        assert!(ask.keyed());
    }
    assert!(accept(&timed(), &args(questions(Mode::Timed, 1))).keyed());
}

// Shape errors: unknown fields, missing required fields, wrong types.

#[test]
fn unknown_fields_are_refused_with_their_path() {
    for config in both() {
        let mode = config.mode;
        let mut top = json!({"questions": questions(mode, 1)});
        top["extra"] = json!(1);
        assert_eq!(refuse(&config, &top.to_string()), "extra: unknown field");
        assert_eq!(
            refuse(&config, &with_field(mode, "multiselect", json!(true))),
            "questions[0].multiselect: unknown field"
        );
        assert_eq!(
            refuse(&config, &with_option_field(mode, "recommended", json!(true))),
            "questions[0].options[0].recommended: unknown field"
        );
    }
}

#[test]
fn missing_required_fields_are_refused_with_their_path() {
    for config in both() {
        let mode = config.mode;
        assert_eq!(refuse(&config, "{}"), "questions: required field is missing");
        let mut required = vec!["question", "header", "options"];
        if mode == Mode::Timed {
            required.push("id");
        }
        for key in required {
            let mut q = question(mode, 0);
            q.as_object_mut().unwrap().remove(key);
            assert_eq!(
                refuse(&config, &args(vec![q])),
                format!("questions[0].{key}: required field is missing")
            );
        }
        let mut q = question(mode, 0);
        q["options"][1].as_object_mut().unwrap().remove("label");
        assert_eq!(
            refuse(&config, &args(vec![q])),
            "questions[0].options[1].label: required field is missing"
        );
    }
}

#[test]
fn wrong_types_are_refused_with_their_path() {
    for config in both() {
        let mode = config.mode;
        let cases: Vec<(String, &str)> = vec![
            (
                json!({"questions": {}}).to_string(),
                "questions: expected an array, got an object",
            ),
            (
                json!({"questions": ["Go?"]}).to_string(),
                "questions[0]: expected an object, got a string",
            ),
            (
                with_field(mode, "question", json!(1)),
                "questions[0].question: expected a string, got a number",
            ),
            (
                with_field(mode, "header", json!(null)),
                "questions[0].header: expected a string, got null",
            ),
            (
                with_field(mode, "options", json!("A, B")),
                "questions[0].options: expected an array, got a string",
            ),
            (
                with_field(mode, "multiSelect", json!("true")),
                "questions[0].multiSelect: expected a boolean, got a string",
            ),
            (
                with_option_field(mode, "label", json!(["A"])),
                "questions[0].options[0].label: expected a string, got an array",
            ),
            (
                with_option_field(mode, "description", json!(false)),
                "questions[0].options[0].description: expected a string, got a boolean",
            ),
        ];
        for (arguments, expected) in cases {
            assert_eq!(refuse(&config, &arguments), expected, "{arguments}");
        }
        let mut q = question(mode, 0);
        q["options"][1] = json!("B");
        assert_eq!(
            refuse(&config, &args(vec![q])),
            "questions[0].options[1]: expected an object, got a string"
        );
    }
    assert_eq!(
        refuse(&timed(), &with_field(Mode::Timed, "id", json!(7))),
        "questions[0].id: expected a string, got a number"
    );
}

#[test]
fn arguments_that_are_not_an_object_are_refused() {
    for config in both() {
        assert_eq!(
            refuse(&config, "[]"),
            "arguments: expected an object, got an array"
        );
        assert_eq!(refuse(&config, "null"), "arguments: expected an object, got null");
        assert_eq!(
            refuse(&config, r#""{}""#),
            "arguments: expected an object, got a string"
        );
    }
}

#[test]
fn arguments_that_are_not_json_are_refused() {
    for config in both() {
        for text in ["", "{", "{\"questions\":[}", "questions", "{} {}"] {
            let error = config.prepare(text).unwrap_err();
            assert_eq!(error.path, "arguments", "{text:?}");
            assert!(
                error.to_string().starts_with("arguments: not valid JSON: "),
                "{error}"
            );
        }
    }
}

#[test]
fn deeply_nested_arguments_are_refused_not_overflowed() {
    let depth = 100_000;
    let text = format!("{{\"questions\":{}{}}}", "[".repeat(depth), "]".repeat(depth));
    for config in both() {
        assert_eq!(config.prepare(&text).unwrap_err().path, "arguments");
    }
}

#[test]
fn the_first_offending_field_is_reported() {
    for config in both() {
        let mut qs = questions(config.mode, 4);
        qs[1]["header"] = json!(chars('h', 13));
        qs[2]["options"] = json!([opt("only")]);
        qs[3]["extra"] = json!(1);
        assert_eq!(
            refuse(&config, &args(qs)),
            "questions[1].header: expected at most 12 characters, got 13"
        );
    }
}

#[test]
fn real_world_legacy_payload_is_accepted_as_is() {
    let payload = r#"{"questions":[{"question":"Which database should the service use?","header":"Database","options":[{"label":"PostgreSQL (Recommended)","description":"Relational, already used by the billing service."},{"label":"SQLite","description":"Embedded, no server to run."}],"multiSelect":false},{"question":"Which checks should run before merge?","header":"CI","options":[{"label":"Unit tests","description":"Fast."},{"label":"Integration tests","description":"Slow but thorough."},{"label":"Lint","description":"Style only."}],"multiSelect":true}]}"#;
    let ask = accept(&legacy(), payload);
    assert_eq!(ask.questions.len(), 2);
    assert_eq!(ask.questions[0].id(), "Which database should the service use?");
    assert_eq!(ask.questions[0].header(), "Database");
    assert_eq!(
        ask.questions[0].option(0).unwrap().label,
        "PostgreSQL (Recommended)"
    );
    assert!(!ask.questions[0].multi_select());
    assert!(ask.questions[1].multi_select());
    assert_eq!(ask.questions_raw.get(), &payload[13..payload.len() - 1]);
}

#[test]
fn the_contracts_timed_example_is_accepted() {
    let example = r#"{"questions":[{"id":"cleanup","question":"Proceed with the destructive cleanup?","header":"Confirm",
  "options":[{"label":"Yes, delete them (Recommended)","description":"Removes the three stale files."},
             {"label":"No, keep them","description":"Aborts the cleanup."}],
  "multiSelect":false}],
 "timeout":30}"#;
    let ask = accept(&timed(), example);
    assert_eq!(ask.questions[0].id(), "cleanup");
    assert_eq!(ask.wait, Wait::Window(30.0));
}

#[test]
fn questions_raw_is_the_argument_exactly_as_sent() {
    let questions = "[ {\"options\" : [{\"label\":\"B\"} ,\n {\"label\":\"A\",\"description\":\"caf\\u00e9\"}],\t\"header\":\"H\", \"question\":\"Q?\",\"id\":\"q\" } ]";
    let arguments = format!("{{ \"timeout\" : 30 ,  \"questions\":{questions}  }}");
    let ask = accept(&timed(), &arguments);
    assert_eq!(ask.questions_raw.get(), questions);
    assert_eq!(ask.questions[0].option(1).unwrap().description, "café");

    let legacy_questions =
        "[{\"header\":\"H\",\"question\":\"Q?\",\"options\":[{\"label\":\"\\u0041\"},{\"label\":\"B\"}]}]";
    let ask = accept(&legacy(), &format!("{{\"questions\" :  {legacy_questions}}}"));
    assert_eq!(ask.questions_raw.get(), legacy_questions);
    assert_eq!(ask.questions[0].option(0).unwrap().label, "A");
}

#[test]
fn a_repeated_questions_key_is_refused() {
    // serde_json keeps the last of repeated keys; `questions_raw` could not say which
    // text the model meant, so the call is refused rather than guessed.
    for config in both() {
        let one = serde_json::to_string(&questions(config.mode, 1)).unwrap();
        let arguments = format!(r#"{{"questions":{one},"questions":{one}}}"#);
        let error = config.prepare(&arguments).unwrap_err();
        assert_eq!(error.path, "questions", "{error}");
        assert!(error.to_string().contains("duplicate field"), "{error}");
    }
}
