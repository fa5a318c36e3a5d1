//! SPEC §3.8: firing a turn signal settles every unsettled call of that turn and of
//! every descendant turn as `ABORTED` at that instant; a question that already
//! returned `pending` is not part of the turn any more.

use crate::broker_support;

use asksim::event::EventKind;
use asksim::protocol::Reply;
use asksim::tool::{Timeout, ToolConfig};
use broker_support::*;

/// root → child → grandchild. An owned child cannot have a waiting call (it gets
/// `DELEGATED_CALLER`, SPEC §3.1), so the middle agent is stopped after spawning
/// the grandchild: the grandchild then asks as a root, while its turn signal still
/// derives from the child's, which derives from the root's. The child's own turn
/// (level 2) is checked to fire too.
#[tokio::test(start_paused = true)]
async fn turn_cancellation_aborts_calls_of_descendants_three_levels_deep_at_the_same_instant() {
    let mut web = Script::spawn("web").await;
    let runtime = start(ToolConfig::timed(Timeout::Window(30.0)), vec![web.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let child = root.spawn_child("child").await.unwrap();
    let grandchild = child.spawn_child("grandchild").await.unwrap();
    let delegated = ask(&child, &timed_args(Some("5"))).await;
    assert_eq!(error_code(&delegated.result.text), "DELEGATED_CALLER");
    child.stop();
    quiesce().await;

    let root_call = spawn_ask(&root, &timed_args(Some("-1")));
    let offer_root = web.offer().await;
    send(&offer_root, Reply::Accept);
    let grand_call = spawn_ask(&grandchild, WINDOW_60_ARGS);
    let offer_grand = web.offer().await;
    send(&offer_grand, Reply::Accept);
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let (child_turn, grand_turn) = (child.turn().await.unwrap(), grandchild.turn().await.unwrap());

    root.cancel_turn().await;
    let (r, g) = (outcome(root_call).await, outcome(grand_call).await);

    let aborted = error_result("ABORTED", "the turn was cancelled before the call settled");
    assert_eq!(
        (r.call_id.as_str(), r.result.text.as_str()),
        ("root/1", aborted.as_str())
    );
    assert_eq!(
        (g.call_id.as_str(), g.result.text.as_str()),
        ("grandchild/1", aborted.as_str())
    );
    assert!(
        child_turn.is_cancelled() && grand_turn.is_cancelled(),
        "descendant turns fire"
    );
    let events = runtime.events().snapshot();
    let cancel_t = events
        .iter()
        .find(|e| matches!(&e.kind, EventKind::Cancel { agent } if agent == "root"))
        .unwrap()
        .t;
    assert_eq!(cancel_t, 3.0);
    for call_id in ["root/1", "grandchild/1"] {
        let about = events_of(&runtime, call_id);
        assert_eq!(
            kinds(&about),
            ["Request", "Offer", "Accept", "Result"],
            "{call_id}"
        );
        assert_eq!(about[3].t, cancel_t, "{call_id} settles at the cancel's instant");
    }
    // Their answerer is told to withdraw, and a late submit is refused.
    quiesce().await;
    let withdrawn = web.drain();
    assert_eq!(
        withdrawn
            .iter()
            .filter(|s| matches!(s, Seen::Withdraw(_)))
            .count(),
        2
    );
    send(&offer_root, Reply::Submit(yes_batch().into()));
    assert!(matches!(web.next().await, Seen::Refused { ref reason, .. } if reason == "settled"));
    check_contract(&runtime.events().snapshot());
}

/// A timed call with a window long enough to still be waiting at the cancel.
const WINDOW_60_ARGS: &str = r#"{"questions":[{"id":"go","question":"Proceed?","header":"Confirm","options":[{"label":"Yes (Recommended)"},{"label":"No"}]}],"timeout":60}"#;

#[tokio::test(start_paused = true)]
async fn pending_question_survives_turn_cancellation() {
    let mut web = Script::spawn("web").await;
    let runtime = start(ToolConfig::timed(Timeout::Window(30.0)), vec![web.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let call = spawn_ask(&root, &timed_args(Some("5")));
    let offer = web.offer().await;
    send(&offer, Reply::Accept);
    assert_eq!(outcome(call).await.result.text, pending_result("root/1"));

    // A second call of the same turn is still waiting when the turn fires, so the
    // broker does act on this turn's cancellation.
    let waiting = spawn_ask(&root, &timed_args(Some("-1")));
    let offer2 = web.offer().await;
    send(&offer2, Reply::Accept);
    root.cancel_turn().await;
    let aborted = outcome(waiting).await;
    assert_eq!(error_code(&aborted.result.text), "ABORTED");
    tokio::time::sleep(std::time::Duration::from_secs(10)).await;
    assert_eq!(runtime.status().await.open.get("root/1"), Some(&"pending"));
    let seen = web.drain();
    assert!(
        matches!(seen[..], [Seen::Withdraw(t)] if t == offer2.ticket),
        "only the aborted call's owner is told to withdraw: {seen:?}"
    );
    send(&offer, Reply::Submit(yes_batch().into()));
    within(WAIT_S_MAX, root.closed("root/1")).await;

    assert_eq!(root.user_messages().await, [late_yes_message("root/1")]);
    assert_eq!(
        kinds(&events_of(&runtime, "root/1")),
        [
            "Request",
            "Offer",
            "Accept",
            "Result",
            "Answer",
            "LateAnswer",
            "UserMessage"
        ]
    );
    check_contract(&runtime.events().snapshot());
}

/// A call made under a turn that has already fired settles as `ABORTED` on
/// receipt and is never offered: pins the fix for requests that used to be
/// offered first and aborted a moment later.
#[tokio::test(start_paused = true)]
async fn call_under_a_fired_turn_is_aborted_before_any_offer() {
    let web = Script::spawn("web").await;
    let runtime = start(ToolConfig::timed(Timeout::Window(30.0)), vec![web.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    root.cancel_turn().await;
    let outcome = ask(&root, &timed_args(Some("5"))).await;
    let aborted = error_result("ABORTED", "the turn was cancelled before the call settled");
    assert_eq!(outcome.result.text, aborted);
    assert_eq!(kinds(&events_of(&runtime, "root/1")), vec!["Request", "Result"]);
    check_contract(&runtime.events().snapshot());
}
