//! serde's messages in the scenario format's words: `expected f64`, `expected
//! u64` and `expected unit` are Rust's names for a number, a whole number and "no
//! value"; a person writing a scenario file needs what the field takes.
//!
//! [`plain`] rewrites the type names serde_json uses (for numbers, lists, objects
//! and unit variants) and, for a field with several forms (`answer`, `accepts`),
//! appends every form it takes. It only rewords: the position and the JSON path
//! stay serde's, and a message it does not know passes through unchanged.

/// serde's words, and the format's.
const WORDS: [(&str, &str); 9] = [
    ("expected f64", "expected a number of seconds"),
    ("expected u64", "expected a whole number, 0 or more"),
    ("expected u32", "expected a whole number, 0 or more"),
    (
        "expected usize",
        "expected an option index, a whole number from 0",
    ),
    (
        "expected a tuple of size 2",
        "expected a list of two numbers [a, b]",
    ),
    ("expected a sequence", "expected a list"),
    ("expected a map", "expected an object"),
    ("invalid type: sequence", "invalid type: a list"),
    ("invalid type: map", "invalid type: an object"),
];

/// The whole-number fields whose least value is 1.
const FROM_ONE: [&str; 5] = [
    "count",
    "crash_after_accepts",
    "open_calls_max",
    "agents_per_tree_max",
    "events_max",
];

/// A script's steps, each an object with one key.
const STEPS: &str = r#"{"ask": {…}}, {"ask_raw": …}, {"ask_unresolved": {"timeout": t}}, {"work": s}, {"spawn": {…}}, {"join": "child"}, {"await_answer": "agent/n"} or {"repeat": {"times": n, "script": […]}}"#;

/// The fields with several forms, and every form each takes.
const FORMS: [(&str, &str); 4] = [
    (
        "answer",
        r#""recommended", "skip", {"option": i}, {"options": [i, j]}, {"custom": "text"} or {"batch": [items]}"#,
    ),
    (
        "accepts",
        r#""all", "keyed", "legacy", "none" or {"agents": ["glob*"]}"#,
    ),
    ("script", STEPS),
    ("on_resume", STEPS),
];

/// The forms of the innermost field of `path` that has several, with its name.
fn forms_of(path: &str) -> Option<(&'static str, &'static str)> {
    (path.rsplit('.'))
        .map(|s| s.split('[').next().unwrap_or(s))
        .find_map(|s| FORMS.iter().find(|(name, _)| *name == s).copied())
}

/// Whether the path segment `segment` (`answer`, `script[2]`) is a field with
/// several forms.
pub(super) fn has_forms(segment: &str) -> bool {
    let name = segment.split('[').next().unwrap_or(segment);
    FORMS.iter().any(|(field, _)| *field == name)
}

/// What a value at `path` that is none of its field's forms (a number or a list
/// where a form is a string or an object with one key) should have been.
pub(super) fn not_a_form(path: &str) -> String {
    match forms_of(path) {
        Some((name, forms)) => format!("not one of its forms: \"{name}\" is {forms}"),
        None => "expected a string or an object with exactly one key".to_owned(),
    }
}

/// `message`, about the value at JSON `path`, in the format's words.
pub(super) fn plain(path: &str, message: &str) -> String {
    let segments: Vec<&str> = path.split('.').collect();
    let field_at = |k: usize| segments.get(k).map(|s| s.split('[').next().unwrap_or(s));
    // `answer.recommended: … expected unit`: a form that takes no value, given one.
    if message.ends_with("expected unit")
        && let (Some(form), Some(field)) = (
            field_at(segments.len() - 1),
            segments.len().checked_sub(2).and_then(field_at),
        )
    {
        let mut text = format!("\"{form}\" takes no value: write \"{field}\": \"{form}\"");
        if let Some((_, forms)) = FORMS.iter().find(|(name, _)| *name == field) {
            text.push_str(&format!(" (\"{field}\" is {forms})"));
        }
        return text;
    }
    // `"work"` as a step, `"option"` as an answer: a form that takes a value.
    if message == "invalid type: unit variant, expected newtype variant" {
        let forms = forms_of(path).map(|(name, forms)| format!(" (\"{name}\" is {forms})"));
        return format!(
            "this form takes a value: write it as {{\"form\": value}}{}",
            forms.unwrap_or_default()
        );
    }
    // A seed past 2^64 - 1 reads as a float: say how large a seed may be.
    if path == "seed" && message.ends_with("expected u64") {
        let head = message.trim_end_matches("expected u64");
        return format!("{head}expected a whole number from 0 to {}", u64::MAX);
    }
    // Whole numbers that start at 1: "0 or more" would send the writer to a 0
    // refused next.
    if message.ends_with("expected u64")
        && field_at(segments.len() - 1).is_some_and(|field| FROM_ONE.contains(&field))
    {
        let head = message.trim_end_matches("expected u64");
        return format!("{head}expected a whole number, 1 or more");
    }
    let mut text = message.to_owned();
    for (rust, format) in WORDS {
        text = text.replace(rust, format);
    }
    // The field's forms when the value is the field's or one of its forms'
    // (`answer`, `answer.option`), not a key deeper in (`script[0].repeat.times`).
    let near: Vec<&str> = segments.iter().rev().take(2).rev().copied().collect();
    if let Some((name, forms)) = forms_of(&near.join("."))
        && (text.starts_with("invalid type") || text.starts_with("invalid value"))
    {
        text.push_str(&format!("; \"{name}\" is {forms}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::plain;

    #[test]
    fn rust_type_names_become_what_the_field_takes() {
        assert_eq!(
            plain(
                "answerers[0].answer.recommended",
                "invalid type: integer `1`, expected unit"
            ),
            r#""recommended" takes no value: write "answer": "recommended" ("answer" is "recommended", "skip", {"option": i}, {"options": [i, j]}, {"custom": "text"} or {"batch": [items]})"#
        );
        assert_eq!(
            plain("events[0].at", "invalid type: string \"x\", expected f64"),
            "invalid type: string \"x\", expected a number of seconds"
        );
        assert_eq!(
            plain(
                "answerers[0].answer.option",
                "invalid value: integer `-1`, expected usize"
            ),
            "invalid value: integer `-1`, expected an option index, a whole number from 0; \"answer\" is \
             \"recommended\", \"skip\", {\"option\": i}, {\"options\": [i, j]}, {\"custom\": \"text\"} or {\"batch\": [items]}"
        );
        assert_eq!(
            plain("count", "invalid type: floating point `1.5`, expected u64"),
            "invalid type: floating point `1.5`, expected a whole number, 1 or more"
        );
        assert_eq!(
            plain(
                "agents[0].script[0].repeat.times",
                "invalid value: integer `-1`, expected u64"
            ),
            "invalid value: integer `-1`, expected a whole number, 0 or more",
            "a key inside a step is not the step: no list of the step's forms"
        );
        // 2^64, one past the largest seed, reads as a float.
        assert_eq!(
            plain(
                "seed",
                "invalid type: floating point `1.8446744073709552e19`, expected u64"
            ),
            "invalid type: floating point `1.8446744073709552e19`, expected a whole number from 0 to 18446744073709551615"
        );
        let unknown = "unknown field `agnets`, expected one of `agents`";
        assert_eq!(plain("", unknown), unknown, "other messages pass through");
    }
}
