//! SPEC §2.3 "never panic", and what an accepted call guarantees, over arbitrary
//! input: arbitrary JSON values and strings, and near-valid arguments that reach
//! every check. Also §3.6: any batch is either refused or normalised.

use asksim::tool::limits::*;
use asksim::tool::{
    Ask, Mode, Question, QuestionOption, Timeout, ToolConfig, Wait, legacy, timed, validate_batch,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Keys the tool knows, so arbitrary objects often hit real fields.
const KEYS: &[&str] = &[
    "questions",
    "id",
    "question",
    "header",
    "options",
    "label",
    "description",
    "multiSelect",
    "timeout",
    "selected",
    "custom",
    "mode",
];

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(KEYS).prop_map(str::to_owned),
        1 => ".{0,8}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from), // NaN and infinities become null
        prop::sample::select(vec![-2.0, -1.0, 0.0, 0.5, 30.0, 86_400.0, 86_400.5]).prop_map(Value::from),
        ".{0,16}".prop_map(Value::String),
        prop::sample::select(vec!["timed", "legacy", "A", "B", "q0", ""]).prop_map(Value::from),
    ]
}

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A field that is mostly valid, sometimes absent, sometimes anything.
fn field(valid: BoxedStrategy<Value>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        30 => valid.prop_map(Some),
        1 => Just(None),
        1 => json_value().prop_map(Some),
    ]
}

/// A field the tool of `mode` does not take: mostly absent.
fn foreign_field(valid: BoxedStrategy<Value>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![30 => Just(None), 1 => valid.prop_map(Some)]
}

/// Mostly a small valid count, sometimes one past either bound.
fn count(min: usize, max: usize) -> BoxedStrategy<usize> {
    prop_oneof![12 => min..=max, 1 => Just(min - 1), 1 => Just(max + 1)].boxed()
}

/// Text of 1 to `max` characters, sometimes at or past the limit, sometimes empty.
fn text(max: usize) -> BoxedStrategy<Value> {
    prop_oneof![
        20 => "[a-zé😀 ?]{1,12}".prop_map(Value::String),
        1 => (max..=max + 1, prop::sample::select(vec!['a', 'é', '😀']))
            .prop_map(|(n, c)| Value::String(std::iter::repeat_n(c, n).collect())),
        1 => Just(json!("")),
    ]
    .boxed()
}

fn near_option() -> impl Strategy<Value = Value> {
    let label = prop_oneof![20 => "[A-Z][a-z]{0,3}".prop_map(Value::String), 1 => Just(json!("A"))];
    (field(label.boxed()), field(text(DESCRIPTION_CHARS_MAX)))
        .prop_map(|(label, description)| object(&[("label", label), ("description", description)]))
}

fn near_question(mode: Mode) -> impl Strategy<Value = Value> {
    let id = prop_oneof![20 => "[A-Za-z0-9_-]{1,6}", 1 => ".{0,70}"]
        .prop_map(Value::String)
        .boxed();
    let id = match mode {
        Mode::Timed => field(id).boxed(),
        Mode::Legacy => foreign_field(id).boxed(),
    };
    let options = count(OPTIONS_PER_QUESTION_MIN, OPTIONS_PER_QUESTION_MAX)
        .prop_flat_map(|n| prop::collection::vec(near_option(), n))
        .prop_map(Value::Array);
    (
        id,
        field(text(QUESTION_CHARS_MAX)),
        field(text(HEADER_CHARS_MAX)),
        field(options.boxed()),
        field(any::<bool>().prop_map(Value::Bool).boxed()),
    )
        .prop_map(|(id, question, header, options, multi)| {
            object(&[
                ("id", id),
                ("question", question),
                ("header", header),
                ("options", options),
                ("multiSelect", multi),
            ])
        })
}

/// Arguments shaped like a call to the tool of `mode`, broken in a few random places.
fn near_arguments(mode: Mode) -> impl Strategy<Value = Value> {
    let questions = count(QUESTIONS_PER_CALL_MIN, QUESTIONS_PER_CALL_MAX)
        .prop_flat_map(move |n| prop::collection::vec(near_question(mode), n))
        .prop_map(Value::Array);
    let timeout = prop_oneof![
        4 => prop::sample::select(vec![-1.0, 0.5, 30.0, 86_400.0]).prop_map(Value::from),
        1 => leaf(),
    ]
    .boxed();
    let timeout = match mode {
        Mode::Timed => prop_oneof![Just(None), timeout.prop_map(Some)].boxed(),
        Mode::Legacy => foreign_field(timeout).boxed(),
    };
    (field(questions.boxed()), timeout)
        .prop_map(|(questions, timeout)| object(&[("questions", questions), ("timeout", timeout)]))
}

/// Near-valid arguments for either tool.
fn any_near_arguments() -> impl Strategy<Value = Value> {
    prop_oneof![near_arguments(Mode::Legacy), near_arguments(Mode::Timed)]
}

fn object(fields: &[(&str, Option<Value>)]) -> Value {
    Value::Object(
        fields
            .iter()
            .filter_map(|(k, v)| v.clone().map(|v| (k.to_string(), v)))
            .collect(),
    )
}

fn configs() -> [ToolConfig; 3] {
    [
        ToolConfig::default(),
        ToolConfig::timed(Timeout::Window(120.0)),
        ToolConfig::timed(Timeout::Blocking),
    ]
}

/// Everything an accepted call promises the broker (SPEC §2.3).
fn assert_within_limits(config: &ToolConfig, arguments: &Value, ask: &Ask) {
    let n = ask.questions.len();
    assert!((QUESTIONS_PER_CALL_MIN..=QUESTIONS_PER_CALL_MAX).contains(&n));
    for (i, q) in ask.questions.iter().enumerate() {
        assert!((1..=HEADER_CHARS_MAX).contains(&q.header().chars().count()));
        assert!((1..=QUESTION_CHARS_MAX).contains(&q.question().chars().count()));
        assert!((OPTIONS_PER_QUESTION_MIN..=OPTIONS_PER_QUESTION_MAX).contains(&q.option_count()));
        for (j, o) in q.options().enumerate() {
            assert!((1..=LABEL_CHARS_MAX).contains(&o.label.chars().count()));
            assert!(o.description.chars().count() <= DESCRIPTION_CHARS_MAX);
            assert!(q.options().take(j).all(|p| p.label != o.label));
        }
        assert!(ask.questions[..i].iter().all(|p| p.id() != q.id()));
        match config.mode {
            Mode::Legacy => assert_eq!(q.id(), q.question()),
            Mode::Timed => {
                assert!((1..=ID_CHARS_MAX).contains(&q.id().chars().count()));
                assert!(
                    q.id()
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                );
            }
        }
    }
    match ask.wait {
        Wait::Blocking => {}
        Wait::Window(s) => assert!(s > 0.0 && s <= TIMEOUT_S_MAX),
    }
    let raw: Value = serde_json::from_str(ask.questions_raw.get()).unwrap();
    assert_eq!(&raw, &arguments["questions"]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn prepare_never_panics_on_any_json_value(value in json_value()) {
        let text = value.to_string();
        for config in configs() {
            if let Ok(ask) = config.prepare(&text) {
                assert_within_limits(&config, &value, &ask);
            }
        }
    }

    #[test]
    fn prepare_never_panics_on_any_string(text in ".{0,64}") {
        for config in configs() {
            let _ = config.prepare(&text);
        }
    }

    #[test]
    fn prepare_never_panics_on_any_bytes_as_text(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let text = String::from_utf8_lossy(&bytes);
        for config in configs() {
            let _ = config.prepare(&text);
        }
    }

    #[test]
    fn accepted_near_valid_arguments_are_within_limits_and_refusals_name_a_path(value in any_near_arguments()) {
        let text = value.to_string();
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        for config in configs() {
            let compact = config.prepare(&text);
            match &compact {
                Ok(ask) => assert_within_limits(&config, &value, ask),
                Err(e) => {
                    prop_assert!(!e.path.is_empty());
                    let prefix = format!("{}: ", e.path);
                    prop_assert!(e.to_string().starts_with(&prefix));
                    prop_assert!(e.path == "arguments" || e.path.starts_with("questions") || e.path == "timeout");
                }
            }
            // Whitespace never changes the verdict.
            let spaced = config.prepare(&pretty);
            prop_assert_eq!(compact.is_ok(), spaced.is_ok());
            if let (Err(a), Err(b)) = (&compact, &spaced) {
                prop_assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn config_from_json_never_panics(value in json_value()) {
        if let Ok(config) = ToolConfig::from_json(Some(&value)) {
            match config.timeout {
                Timeout::Blocking => {}
                Timeout::Window(s) => prop_assert!(s > 0.0 && s <= TIMEOUT_S_MAX),
            }
        }
    }

    #[test]
    fn config_from_near_valid_rows_never_panics(mode in field(prop::sample::select(vec!["legacy", "timed"]).prop_map(Value::from).boxed()), timeout in prop_oneof![Just(None), leaf().prop_map(Some)]) {
        let row = object(&[("mode", mode), ("timeout", timeout)]);
        let _ = ToolConfig::from_json(Some(&row));
    }

    #[test]
    fn any_batch_is_refused_or_normalised_in_question_order(
        arguments in any_near_arguments(),
        batch in json_value(),
        picks in prop::collection::vec((any::<bool>(), prop::collection::vec(any::<prop::sample::Index>(), 0..3), prop::option::of("[a-z]{0,3}")), 4),
    ) {
        for config in configs() {
            let Ok(ask) = config.prepare(&arguments.to_string()) else { continue };
            let _ = validate_batch(&ask.questions, &batch);
            // A batch built from the call's own options always settles it.
            let mut built = Vec::new();
            for (q, (skip, labels, custom)) in ask.questions.iter().zip(&picks).rev() {
                let mut selected: Vec<&str> = Vec::new();
                if !skip {
                    for pick in labels {
                        let label = q.option(pick.index(q.option_count())).unwrap().label;
                        if !selected.contains(&label) && (q.multi_select() || selected.is_empty()) {
                            selected.push(label);
                        }
                    }
                }
                built.push(json!({"id": q.id(), "selected": selected, "custom": custom}));
            }
            let items = validate_batch(&ask.questions, &Value::Array(built)).unwrap();
            prop_assert_eq!(items.len(), ask.questions.len());
            for (item, q) in items.iter().zip(ask.questions.iter()) {
                prop_assert_eq!(item.id.as_str(), q.id());
                prop_assert!(item.selected.iter().all(|l| q.options().any(|o| o.label == l)));
                prop_assert!(q.multi_select() || item.selected.len() <= 1);
                prop_assert!(item.custom.as_deref() != Some(""));
                if item.custom.is_some() && !q.multi_select() {
                    prop_assert!(item.selected.is_empty());
                }
            }
            // Both renderings are JSON.
            let rendered = match config.mode {
                Mode::Legacy => legacy::render_answers(&ask.questions, &items),
                Mode::Timed => timed::render_answers(&items),
            };
            let parsed: Value = serde_json::from_str(&rendered).unwrap();
            prop_assert!(parsed.get("answers").is_some());
        }
    }
}

/// Questions built directly (not through `prepare`), from small pools of ids and
/// labels, so that arbitrary batches name them often.
fn pooled_questions() -> impl Strategy<Value = Vec<Question>> {
    let label = prop::sample::select(vec!["A", "B", "C", "D"]);
    let id = prop_oneof![
        6 => Just(None),
        1 => prop::sample::select(vec!["q0", "q1", "q2", "q3"]).prop_map(Some),
    ];
    let question = (id, prop::collection::vec(label, 0..5), any::<bool>());
    // Mostly ids q0, q1, … in order; sometimes a pooled id, maybe a duplicate.
    prop::collection::vec(question, 0..5).prop_map(|questions| {
        (questions.into_iter().enumerate())
            .map(|(i, (id, labels, multi_select))| {
                let id = id.map_or_else(|| format!("q{i}"), str::to_owned);
                let options = labels.into_iter().map(|label| QuestionOption {
                    label,
                    description: "",
                });
                Question::new(&id, "", "", options, multi_select)
            })
            .collect()
    })
}

/// A batch aimed at `questions`: one item per question (labels picked from its
/// options), then shuffled, and now and then broken (a label too many, a foreign
/// label, an item dropped or repeated).
fn aimed_batch(questions: Vec<Question>) -> impl Strategy<Value = (Vec<Question>, Value)> {
    let n = questions.len();
    let item = (
        prop::collection::vec(any::<prop::sample::Index>(), 0..3),
        prop_oneof![Just(None), Just(Some("")), Just(Some("own"))],
        prop_oneof![12 => Just(None), 1 => Just(Some("Z"))],
    );
    (
        prop::collection::vec(item, n),
        Just(questions),
        any::<prop::sample::Index>(),
        prop_oneof![10 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)],
        any::<prop::sample::Index>(),
    )
        .prop_map(|(picks, questions, rotation, damage, victim)| {
            let mut items: Vec<Value> = questions
                .iter()
                .zip(&picks)
                .map(|(q, (labels, custom, foreign))| {
                    let mut selected: Vec<&str> = Vec::new();
                    if q.option_count() > 0 {
                        for pick in labels {
                            let label = q.option(pick.index(q.option_count())).unwrap().label;
                            if !selected.contains(&label) {
                                selected.push(label);
                            }
                        }
                    }
                    selected.extend(foreign.iter());
                    object(&[
                        ("id", Some(json!(q.id()))),
                        ("selected", Some(json!(selected))),
                        ("custom", custom.map(Value::from)),
                    ])
                })
                .collect();
            if !items.is_empty() {
                let k = rotation.index(items.len());
                items.rotate_left(k);
                let v = victim.index(items.len());
                match damage {
                    1 => drop(items.remove(v)),
                    2 => items.push(items[v].clone()),
                    _ => {}
                }
            }
            (questions, Value::Array(items))
        })
}

/// Batches that name the pooled ids and labels, with now and then a wrong type.
fn pooled_batch() -> impl Strategy<Value = Value> {
    let id = prop_oneof![
        8 => prop::sample::select(vec!["q0", "q1", "q2", "q3", "q9"]).prop_map(Value::from),
        1 => leaf(),
    ];
    let label = prop_oneof![
        8 => prop::sample::select(vec!["A", "B", "C", "D", "Z"]).prop_map(Value::from),
        1 => leaf(),
    ];
    let selected = prop_oneof![
        8 => prop::collection::vec(label, 0..4).prop_map(Value::Array),
        1 => leaf(),
    ];
    let custom = prop_oneof![leaf(), "[a-z]{0,3}".prop_map(Value::from)];
    let item = (
        field(id.boxed()),
        field(selected.boxed()),
        prop::option::of(custom),
    )
        .prop_map(|(id, selected, custom)| object(&[("id", id), ("selected", selected), ("custom", custom)]));
    prop_oneof![
        8 => prop::collection::vec(item, 0..6).prop_map(Value::Array),
        1 => json_value(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn validate_batch_never_panics_and_accepts_only_what_section_3_6_allows(
        (questions, batch) in prop_oneof![
            3 => pooled_questions().prop_flat_map(aimed_batch),
            1 => (pooled_questions(), pooled_batch()),
        ],
    ) {
        if let Ok(items) = validate_batch(&questions, &batch) {
            prop_assert_eq!(items.len(), questions.len());
            for (item, q) in items.iter().zip(&questions) {
                prop_assert_eq!(item.id.as_str(), q.id());
                prop_assert!(item.selected.iter().all(|l| q.options().any(|o| o.label == l)));
                prop_assert!(q.multi_select() || item.selected.len() <= 1);
                if item.custom.is_some() && !q.multi_select() {
                    prop_assert!(item.selected.is_empty());
                }
            }
            // Every batch item was used exactly once.
            prop_assert_eq!(batch.as_array().map(Vec::len), Some(questions.len()));
        }
    }
}
