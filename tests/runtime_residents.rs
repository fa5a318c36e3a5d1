//! The built-in answerers run inside the broker's actor (issue #23,
//! `src/actors/broker/resident.rs`); SPEC §3.2's supervision holds for them as it did
//! for answerers in actors of their own: a resident that dies (killed, or of
//! its own fault) fails its calls over to the rest of the waterfall, its
//! death reaches the broker behind what it sent, nothing reaches it after,
//! and its timers die with it. Paused time: no wall clock is read.

use asksim::policy::{Accepts, AnswerPolicy, Latency, Policy};
use asksim::tool::{Timeout, ToolConfig};
use asksim::{AnswererSlot, Runtime, RuntimeConfig};

const ARGS: &str = r#"{"questions":[{"id":"go","question":"Proceed with the cleanup?","header":"Confirm","options":[{"label":"Yes (Recommended)"},{"label":"No"}]}],"timeout":30}"#;

const ANSWERED: &str = r#"{"answers":[{"id":"go","selected":["Yes (Recommended)"]}]}"#;

fn answering_after(latency_s: f64) -> Policy {
    Policy::new(Accepts::All, Latency::Fixed(latency_s), AnswerPolicy::Recommended)
}

async fn start(slow: Policy) -> Runtime {
    Runtime::start(RuntimeConfig {
        tool: ToolConfig::timed(Timeout::Window(30.0)),
        answerers: vec![
            AnswererSlot::Policy {
                name: "slow".into(),
                policy: slow,
            },
            AnswererSlot::Policy {
                name: "web".into(),
                policy: answering_after(1.0),
            },
        ],
        ..RuntimeConfig::default()
    })
    .await
    .expect("a runtime")
}

/// The log as `event answerer` words, in order, with the time of each.
fn story(runtime: &Runtime) -> Vec<(f64, String)> {
    let events = runtime.events().snapshot();
    let word = |event: &asksim::event::Event| {
        let line = serde_json::to_value(event).expect("an event serialises");
        let name = line["event"].as_str().unwrap_or("?").to_owned();
        match line["answerer"].as_str() {
            Some(answerer) => format!("{name} {answerer}"),
            None => name,
        }
    };
    events.iter().map(|e| (e.t, word(e))).collect()
}

/// The log of a call whose first owner, `slow`, dies after its accept, up to
/// the second owner's accept: the death behind the accept, then fail-over.
const FAILED_OVER: [&str; 8] = [
    "spawn",
    "request",
    "offer slow",
    "accept slow",
    "crash slow",
    "decline slow",
    "offer web",
    "accept web",
];

fn words(story: &[(f64, String)]) -> Vec<&str> {
    story.iter().map(|(_, w)| w.as_str()).collect()
}

/// A resident killed while it owns a call (`crash_answerer`) is offered
/// nothing more; the call fails over to the next answerer, and the dead one's
/// answer, due at 100 s, neither arrives nor keeps a timer running.
#[tokio::test(start_paused = true)]
async fn a_killed_resident_fails_its_call_over_and_its_timers_die_with_it() {
    let runtime = start(answering_after(100.0)).await;
    let root = runtime.spawn_root("root", None).await.expect("a root");
    let ask = tokio::spawn({
        let root = root.clone();
        async move { root.ask(ARGS).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    runtime.crash_answerer("slow");
    let outcome = ask.await.expect("the call");
    assert_eq!(outcome.result.text, ANSWERED);
    let story = story(&runtime);
    let expected = [&FAILED_OVER[..], &["answer web", "result"]].concat();
    assert_eq!(words(&story), expected, "{story:?}");
    assert_eq!(
        story.last().map(|(t, _)| *t),
        Some(1.5),
        "web answers 1 s after the crash"
    );
    assert_eq!(
        runtime.in_flight(),
        (0, 0),
        "no timer of the dead answerer runs on"
    );
    runtime.shutdown().await;
}

/// A resident that dies of its own fault right after its accept: the accept
/// it sent before dying is handled first (it owned the call), then its death
/// fails the call over; killing it again changes nothing.
#[tokio::test(start_paused = true)]
async fn a_resident_dead_of_its_own_fault_is_heard_of_behind_its_accept() {
    let runtime = start(answering_after(0.0).with_crash_after_accepts(1)).await;
    let root = runtime.spawn_root("root", None).await.expect("a root");
    let outcome = root.ask(ARGS).await;
    assert_eq!(outcome.result.text, ANSWERED);
    runtime.crash_answerer("slow");
    let again = root.ask(ARGS).await;
    assert_eq!(again.result.text, ANSWERED);
    let story = story(&runtime);
    let words = words(&story);
    assert_eq!(words[..8], FAILED_OVER, "{story:?}");
    assert_eq!(
        words.iter().filter(|w| **w == "crash slow").count(),
        1,
        "{story:?}"
    );
    assert!(
        !words[8..].contains(&"offer slow"),
        "nothing is offered to a dead answerer: {story:?}"
    );
    runtime.shutdown().await;
}
