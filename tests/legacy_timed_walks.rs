//! SPEC §2.2: the frozen legacy tool "shares no schema or mapping code with the timed
//! tool", and SPEC §2.3 states the limits and argument errors once, for both tools.
//! So each tool walks its arguments with its own code (`src/tool/legacy.rs`,
//! `src/tool/walk.rs`), and the two share only the checks of `src/tool/limits.rs`.
//!
//! These properties keep the two walks from drifting apart by accident: the same
//! defect in a field both tools take gets the same path and the same message from
//! both; with several defects, both name the same first one; and a call both accept
//! gives the same questions (the legacy id being the question text).

use asksim::tool::limits::{
    DESCRIPTION_CHARS_MAX, HEADER_CHARS_MAX, LABEL_CHARS_MAX, OPTIONS_PER_QUESTION_MAX,
    OPTIONS_PER_QUESTION_MIN, QUESTION_CHARS_MAX, QUESTIONS_PER_CALL_MAX, QUESTIONS_PER_CALL_MIN,
};
use asksim::tool::{ArgumentError, Mode, Question, Timeout, ToolConfig};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value, json};

/// One valid question, as both tools take it (the timed id is added per tool).
#[derive(Clone, Debug)]
struct Q {
    question: String,
    header: String,
    options: Vec<(String, Option<String>)>,
    multi_select: Option<bool>,
}

fn some_text(chars_max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!['a', 'Z', 'é', '😀', ' ', '?', '(']),
        1..=chars_max,
    )
    .prop_map(|cs| cs.into_iter().collect())
}

fn question() -> impl Strategy<Value = Q> {
    let option = (some_text(20), prop::option::of(some_text(30)));
    (
        some_text(30),
        some_text(HEADER_CHARS_MAX),
        prop::collection::vec(option, OPTIONS_PER_QUESTION_MIN..=OPTIONS_PER_QUESTION_MAX),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(question, header, options, multi_select)| Q {
            question,
            header,
            // Labels unique within the question, whatever was drawn.
            options: options
                .into_iter()
                .enumerate()
                .map(|(j, (label, description))| (format!("{j} {label}"), description))
                .collect(),
            multi_select,
        })
}

/// A valid call: 1 to 4 questions, their texts unique within the call (a legacy
/// rule the timed tool does not have).
fn call() -> impl Strategy<Value = Vec<Q>> {
    prop::collection::vec(question(), QUESTIONS_PER_CALL_MIN..=QUESTIONS_PER_CALL_MAX).prop_map(|mut qs| {
        for (i, q) in qs.iter_mut().enumerate() {
            q.question = format!("{i}. {}", q.question);
        }
        qs
    })
}

/// The call as the tool of `mode` takes it.
fn arguments(qs: &[Q], mode: Mode) -> Value {
    let questions: Vec<Value> = qs
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let mut map = Map::new();
            if mode == Mode::Timed {
                map.insert("id".into(), json!(format!("q{i}")));
            }
            map.insert("question".into(), json!(q.question));
            map.insert("header".into(), json!(q.header));
            let options: Vec<Value> = q
                .options
                .iter()
                .map(|(label, description)| match description {
                    Some(d) => json!({"label": label, "description": d}),
                    None => json!({"label": label}),
                })
                .collect();
            map.insert("options".into(), Value::Array(options));
            if let Some(multi) = q.multi_select {
                map.insert("multiSelect".into(), json!(multi));
            }
            Value::Object(map)
        })
        .collect();
    json!({ "questions": questions })
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Object,
    Array,
    String,
    Bool,
}

/// A JSON value that is not of `kind`.
fn other_than(kind: Kind) -> impl Strategy<Value = Value> {
    let values = vec![
        json!(null),
        json!(true),
        json!(7),
        json!(0.5),
        json!("A"),
        json!([]),
        json!(["A"]),
        json!({}),
        json!({"label": "A"}),
    ];
    prop::sample::select(values).prop_filter("another type", move |v| {
        !matches!(
            (kind, v),
            (Kind::Object, Value::Object(_))
                | (Kind::Array, Value::Array(_))
                | (Kind::String, Value::String(_))
                | (Kind::Bool, Value::Bool(_))
        )
    })
}

/// A key neither tool knows at any level.
fn unknown_key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["extra", "multiselect", "Question", "recommended", "note"])
        .prop_map(str::to_owned)
}

/// A text field both tools take.
#[derive(Clone, Copy, Debug)]
enum TextField {
    Question,
    Header,
    Label,
    Description,
}

impl TextField {
    fn key(self) -> &'static str {
        match self {
            TextField::Question => "question",
            TextField::Header => "header",
            TextField::Label => "label",
            TextField::Description => "description",
        }
    }

    fn chars_max(self) -> usize {
        match self {
            TextField::Question => QUESTION_CHARS_MAX,
            TextField::Header => HEADER_CHARS_MAX,
            TextField::Label => LABEL_CHARS_MAX,
            TextField::Description => DESCRIPTION_CHARS_MAX,
        }
    }
}

/// One defect in a field both tools take.
#[derive(Clone, Debug)]
enum Defect {
    ArgumentsNotAnObject(Value),
    UnknownTopKey(String),
    QuestionsMissing,
    QuestionsNotAnArray(Value),
    QuestionCount(usize),
    QuestionNotAnObject(Value),
    UnknownQuestionKey(String),
    TextMissing(TextField),
    TextNotAString(TextField, Value),
    TextEmpty(TextField),
    TextTooLong(TextField, char),
    OptionsMissing,
    OptionsNotAnArray(Value),
    OptionCount(usize),
    OptionNotAnObject(Value),
    UnknownOptionKey(String),
    DuplicateLabel,
    MultiSelectNotABool(Value),
}

fn defect() -> impl Strategy<Value = Defect> {
    use Defect::*;
    let required = prop::sample::select(vec![TextField::Question, TextField::Header, TextField::Label]);
    let any_text = prop::sample::select(vec![
        TextField::Question,
        TextField::Header,
        TextField::Label,
        TextField::Description,
    ]);
    prop_oneof![
        other_than(Kind::Object).prop_map(ArgumentsNotAnObject),
        unknown_key().prop_map(UnknownTopKey),
        Just(QuestionsMissing),
        other_than(Kind::Array).prop_map(QuestionsNotAnArray),
        prop::sample::select(vec![QUESTIONS_PER_CALL_MIN - 1, QUESTIONS_PER_CALL_MAX + 1])
            .prop_map(QuestionCount),
        other_than(Kind::Object).prop_map(QuestionNotAnObject),
        unknown_key().prop_map(UnknownQuestionKey),
        required.clone().prop_map(TextMissing),
        (any_text.clone(), other_than(Kind::String)).prop_map(|(f, v)| TextNotAString(f, v)),
        required.prop_map(TextEmpty),
        (any_text, prop::sample::select(vec!['a', 'é', '😀'])).prop_map(|(f, c)| TextTooLong(f, c)),
        Just(OptionsMissing),
        other_than(Kind::Array).prop_map(OptionsNotAnArray),
        prop::sample::select(vec![OPTIONS_PER_QUESTION_MIN - 1, OPTIONS_PER_QUESTION_MAX + 1])
            .prop_map(OptionCount),
        other_than(Kind::Object).prop_map(OptionNotAnObject),
        unknown_key().prop_map(UnknownOptionKey),
        Just(DuplicateLabel),
        other_than(Kind::Bool).prop_map(MultiSelectNotABool),
    ]
}

/// `list` resized to `n` items (copies of its first one when it grows); `None` when
/// it is not a list with a first item.
fn resize(list: &mut Value, n: usize) -> Option<()> {
    let items = list.as_array_mut()?;
    let first = items.first()?.clone();
    items.resize(n, first);
    Some(())
}

/// Puts `defect` into `args` at question `qi`, option `oj`, and returns the path
/// both tools must name; `None` when an earlier defect removed that place.
fn apply(args: &mut Value, defect: &Defect, qi: usize, oj: usize) -> Option<String> {
    use Defect::*;
    if let ArgumentsNotAnObject(v) = defect {
        *args = v.clone();
        return Some("arguments".into());
    }
    let top = args.as_object_mut()?;
    match defect {
        UnknownTopKey(key) => {
            top.insert(key.clone(), json!(1));
            return Some(key.clone());
        }
        QuestionsMissing => {
            top.remove("questions");
            return Some("questions".into());
        }
        QuestionsNotAnArray(v) => {
            top.insert("questions".into(), v.clone());
            return Some("questions".into());
        }
        QuestionCount(n) => {
            resize(top.get_mut("questions")?, *n)?;
            return Some("questions".into());
        }
        _ => {}
    }
    let qpath = format!("questions[{qi}]");
    let slot = top.get_mut("questions")?.as_array_mut()?.get_mut(qi)?;
    if let QuestionNotAnObject(v) = defect {
        *slot = v.clone();
        return Some(qpath);
    }
    let question = slot.as_object_mut()?;
    let field = |f: TextField| match f {
        TextField::Question | TextField::Header => format!("{qpath}.{}", f.key()),
        TextField::Label | TextField::Description => format!("{qpath}.options[{oj}].{}", f.key()),
    };
    match defect {
        UnknownQuestionKey(key) => {
            question.insert(key.clone(), json!(1));
            return Some(format!("{qpath}.{key}"));
        }
        OptionsMissing => {
            question.remove("options");
            return Some(format!("{qpath}.options"));
        }
        OptionsNotAnArray(v) => {
            question.insert("options".into(), v.clone());
            return Some(format!("{qpath}.options"));
        }
        OptionCount(n) => {
            resize(question.get_mut("options")?, *n)?;
            return Some(format!("{qpath}.options"));
        }
        MultiSelectNotABool(v) => {
            question.insert("multiSelect".into(), v.clone());
            return Some(format!("{qpath}.multiSelect"));
        }
        TextMissing(f @ (TextField::Question | TextField::Header)) => {
            question.remove(f.key());
            return Some(field(*f));
        }
        TextNotAString(f @ (TextField::Question | TextField::Header), v) => {
            question.insert(f.key().into(), v.clone());
            return Some(field(*f));
        }
        TextEmpty(f @ (TextField::Question | TextField::Header)) => {
            question.insert(f.key().into(), json!(""));
            return Some(field(*f));
        }
        TextTooLong(f @ (TextField::Question | TextField::Header), c) => {
            question.insert(
                f.key().into(),
                json!(std::iter::repeat_n(*c, f.chars_max() + 1).collect::<String>()),
            );
            return Some(field(*f));
        }
        _ => {}
    }
    let options = question.get_mut("options")?.as_array_mut()?;
    let earlier_label = oj
        .checked_sub(1)
        .and_then(|k| options.get(k)?.get("label").cloned());
    let slot = options.get_mut(oj)?;
    let opath = format!("{qpath}.options[{oj}]");
    if let OptionNotAnObject(v) = defect {
        *slot = v.clone();
        return Some(opath);
    }
    let option = slot.as_object_mut()?;
    match defect {
        UnknownOptionKey(key) => {
            option.insert(key.clone(), json!(1));
            Some(format!("{opath}.{key}"))
        }
        DuplicateLabel => {
            option.insert("label".into(), earlier_label?);
            Some(format!("{opath}.label"))
        }
        TextMissing(f) => {
            option.remove(f.key());
            Some(field(*f))
        }
        TextNotAString(f, v) => {
            option.insert(f.key().into(), v.clone());
            Some(field(*f))
        }
        TextEmpty(f) => {
            option.insert(f.key().into(), json!(""));
            Some(field(*f))
        }
        TextTooLong(f, c) => {
            option.insert(
                f.key().into(),
                json!(std::iter::repeat_n(*c, f.chars_max() + 1).collect::<String>()),
            );
            Some(field(*f))
        }
        _ => unreachable!("every defect is placed above: {defect:?}"),
    }
}

fn refusal(mode: Mode, arguments: &Value) -> Result<ArgumentError, String> {
    let config = match mode {
        Mode::Legacy => ToolConfig::default(),
        Mode::Timed => ToolConfig::timed(Timeout::Window(120.0)),
    };
    match config.prepare(&arguments.to_string()) {
        Err(error) => Ok(error),
        Ok(_) => Err(format!("{mode:?} accepted {arguments}")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn the_same_defect_in_a_shared_field_gets_the_same_path_and_message_from_both_tools(
        qs in call(),
        defect in defect(),
        qi in any::<Index>(),
        oj in any::<Index>(),
    ) {
        let qi = qi.index(qs.len());
        let mut oj = oj.index(qs[qi].options.len());
        if matches!(defect, Defect::DuplicateLabel) {
            oj = oj.max(1);
        }
        let mut legacy = arguments(&qs, Mode::Legacy);
        let mut timed = arguments(&qs, Mode::Timed);
        let path = apply(&mut legacy, &defect, qi, oj).expect("a valid call has every place");
        let timed_path = apply(&mut timed, &defect, qi, oj);
        prop_assert_eq!(timed_path.as_ref(), Some(&path));
        let legacy_error = refusal(Mode::Legacy, &legacy).map_err(TestCaseError::fail)?;
        let timed_error = refusal(Mode::Timed, &timed).map_err(TestCaseError::fail)?;
        prop_assert_eq!(&legacy_error.path, &path, "{}", legacy_error);
        prop_assert_eq!(&legacy_error, &timed_error);
    }

    #[test]
    fn with_several_defects_both_tools_name_the_same_first_one(
        qs in call(),
        defects in prop::collection::vec((defect(), any::<Index>(), any::<Index>()), 2..5),
    ) {
        let mut legacy = arguments(&qs, Mode::Legacy);
        let mut timed = arguments(&qs, Mode::Timed);
        let mut placed = 0;
        for (defect, qi, oj) in &defects {
            let qi = qi.index(qs.len());
            let oj = oj.index(qs[qi].options.len());
            let here = apply(&mut legacy, defect, qi, oj);
            prop_assert_eq!(&apply(&mut timed, defect, qi, oj), &here);
            placed += usize::from(here.is_some());
        }
        prop_assume!(placed > 0);
        let legacy_error = refusal(Mode::Legacy, &legacy).map_err(TestCaseError::fail)?;
        let timed_error = refusal(Mode::Timed, &timed).map_err(TestCaseError::fail)?;
        prop_assert_eq!(legacy_error, timed_error);
    }

    #[test]
    fn a_call_both_tools_accept_gives_the_same_questions(qs in call()) {
        let legacy = ToolConfig::default().prepare(&arguments(&qs, Mode::Legacy).to_string());
        let timed = ToolConfig::timed(Timeout::Window(120.0)).prepare(&arguments(&qs, Mode::Timed).to_string());
        let (legacy, timed) = (legacy.expect("legacy accepts"), timed.expect("timed accepts"));
        prop_assert_eq!(legacy.questions.len(), timed.questions.len());
        for (l, t) in legacy.questions.iter().zip(timed.questions.iter()) {
            prop_assert_eq!(l.id(), l.question());
            let t = Question::new(l.id(), t.question(), t.header(), t.options(), t.multi_select());
            prop_assert_eq!(l, &t);
        }
    }
}
