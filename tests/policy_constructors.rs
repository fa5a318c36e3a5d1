//! `Policy` has a constructor for every form of a scenario's answerer row
//! (issue #22): each built policy equals the one the scenario format reads from
//! the row, so a library user can say in Rust whatever a scenario file says.

use asksim::scenario;
use asksim::{Accepts, AnswerPolicy, Latency, Policy};
use serde_json::json;

#[test]
fn every_form_of_an_answerer_row_has_a_constructor() {
    let all = |latency: Latency| Policy::new(Accepts::All, latency, AnswerPolicy::Recommended);
    let cases = [
        (
            json!({"accepts": "all", "latency": 2, "answer": "recommended"}),
            Policy::recommended_after(2.0),
        ),
        (json!({"accepts": "none"}), Policy::declining()),
        (
            json!({"accepts": "keyed", "latency": {"fixed": 1}, "answer": "skip"}),
            Policy::new(Accepts::Keyed, Latency::fixed(1.0), AnswerPolicy::Skip),
        ),
        (
            json!({"accepts": "legacy", "latency": "never", "answer": {"option": 1}}),
            Policy::new(Accepts::Legacy, Latency::Never, AnswerPolicy::Option(1)),
        ),
        (
            json!({"accepts": {"agents": ["worker*", "lead"]}, "latency": {"uniform": [1, 5]}, "answer": {"options": [0, 1]}}),
            Policy::new(
                Accepts::agents(["worker*", "lead"]),
                Latency::uniform(1.0, 5.0),
                AnswerPolicy::Options(vec![0, 1]),
            ),
        ),
        (
            json!({"accepts": "all", "latency": {"exp": 3}, "answer": {"custom": "later"}}),
            Policy::new(
                Accepts::All,
                Latency::exp(3.0),
                AnswerPolicy::Custom("later".into()),
            ),
        ),
        (
            json!({"accepts": "all", "latency": 1, "answer": {"batch": [{"id": "x"}]}}),
            Policy::new(
                Accepts::All,
                Latency::fixed(1.0),
                AnswerPolicy::Batch(json!([{"id": "x"}])),
            ),
        ),
        (
            json!({"accepts": "all", "offer_latency": {"uniform": [0.5, 1.5]}, "latency": 1, "answer": "recommended"}),
            all(Latency::fixed(1.0)).with_offer_latency(Latency::uniform(0.5, 1.5)),
        ),
        (
            json!({"accepts": "all", "latency": 1, "answer": "recommended", "hold": {"after": 0.5}}),
            all(Latency::fixed(1.0)).with_hold_after(0.5),
        ),
        (
            json!({"accepts": "all", "latency": 1, "answer": "recommended", "faults": {"crash_at": 9, "crash_after_accepts": 2}}),
            all(Latency::fixed(1.0))
                .with_crash_at(9.0)
                .with_crash_after_accepts(2),
        ),
    ];
    for (row, built) in cases {
        let read = scenario::policy(&row).unwrap_or_else(|e| panic!("{row}: {e}"));
        assert_eq!(read, built, "{row}");
    }
}

/// A row is checked as a file's row is, its messages naming the key.
#[test]
fn a_bad_row_says_what_is_wrong_with_it() {
    for (row, says) in [
        (
            json!({"accepts": "all", "latency": -2, "answer": "skip"}),
            "latency: expected a non-negative",
        ),
        (json!({"accepts": "all"}), "latency"),
        (
            json!({"accepts": "sometimes", "latency": 1, "answer": "skip"}),
            "accepts: unknown variant",
        ),
        (
            json!({"accepts": "all", "latency": 1, "answer": "skip", "count": 2}),
            "count: `count` copies a row of a scenario; a policy is one answerer",
        ),
        // Not a declining answerer, as it silently became.
        (
            json!({"process": ["python3", "bot.py"]}),
            "process: a process answerer is a program, not a policy",
        ),
    ] {
        let error = scenario::policy(&row).expect_err("a bad row");
        assert!(error.contains(says), "{row}: {error}");
    }
}
