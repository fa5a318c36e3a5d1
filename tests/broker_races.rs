//! SPEC §3.7: every race has one winner, decided by the broker's message order, and
//! the loser is never silently dropped. Each race is scripted at an exact virtual
//! instant with a test-owned answerer.

use crate::broker_support;

use asksim::event::EventKind;
use asksim::protocol::Reply;
use asksim::tool::{Timeout, ToolConfig};
use broker_support::*;

fn timed() -> ToolConfig {
    ToolConfig::timed(Timeout::Window(30.0))
}

#[tokio::test(start_paused = true)]
async fn answer_and_window_expiry_at_the_same_instant() {
    let mut web = Script::spawn("web").await;
    let runtime = start(timed(), vec![web.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let start_t = tokio::time::Instant::now();
    let call = spawn_ask(&root, &timed_args(Some("5")));
    let offer = web.offer().await;
    send(&offer, Reply::Accept);

    until(start_t, 5.0).await;
    send(&offer, Reply::Submit(yes_batch().into()));
    let outcome = outcome(call).await;

    let events = events_of(&runtime, "root/1");
    if outcome.result.text == YES_RESULT {
        // The answer won: no pending, no user message.
        assert_eq!(kinds(&events), ["Request", "Offer", "Accept", "Answer", "Result"]);
        quiesce().await;
        assert!(root.user_messages().await.is_empty());
    } else {
        // The window won: the answer becomes the late answer.
        assert_eq!(outcome.result.text, pending_result("root/1"));
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
    }
    assert!(events_of(&runtime, "root/1").iter().skip(3).all(|e| e.t == 5.0));
    assert!(runtime.status().await.open.is_empty());
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn answer_against_turn_cancellation() {
    let mut web = Script::spawn("web").await;
    let runtime = start(timed(), vec![web.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let call = spawn_ask(&root, &timed_args(Some("-1")));
    let offer = web.offer().await;
    send(&offer, Reply::Accept);
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;

    // Same instant: the turn fires, then the submit is sent from a task queued
    // behind the broker's turn watcher, so the cancellation reaches the broker first.
    let turn = root.turn().await.unwrap();
    turn.cancel();
    let submit = Reply::Submit(yes_batch().into());
    let from_task = offer.clone();
    tokio::spawn(async move {
        from_task
            .reply(submit)
            .expect("an actor runtime's offer has its broker")
    });
    let outcome = outcome(call).await;

    assert_eq!(
        outcome.result.text,
        error_result("ABORTED", "the turn was cancelled before the call settled")
    );
    quiesce().await;
    let events = events_of(&runtime, "root/1");
    assert_eq!(
        kinds(&events),
        ["Request", "Offer", "Accept", "Result", "Answer", "Refused"]
    );
    assert!(events.iter().skip(3).all(|e| e.t == 2.0), "one instant");
    match &events[5].kind {
        EventKind::Refused {
            answerer,
            what,
            reason,
            ..
        } => {
            assert_eq!(
                (answerer.as_str(), what.as_str(), reason.as_str()),
                ("web", "submit", "settled")
            )
        }
        other => panic!("{other:?}"),
    }
    let seen = web.drain();
    assert!(matches!(seen[0], Seen::Withdraw(_)), "{seen:?}");
    assert!(
        matches!(&seen[1], Seen::Refused { reason, .. } if reason == "settled"),
        "{seen:?}"
    );
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn two_submits_for_one_call() {
    let (mut a, mut b) = (Script::spawn("a").await, Script::spawn("b").await);
    let runtime = start(timed(), vec![a.slot(), b.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let call = spawn_ask(&root, &timed_args(Some("-1")));
    let offer_a = a.offer().await;
    send(&offer_a, Reply::Accept);

    // Same instant: the owner submits twice.
    send(&offer_a, Reply::Submit(yes_batch().into()));
    send(
        &offer_a,
        Reply::Submit(serde_json::json!([{"id":"go","selected":["No"]}]).into()),
    );
    let outcome = outcome(call).await;

    assert_eq!(outcome.result.text, YES_RESULT, "the first submit wins");
    match a.next().await {
        Seen::Refused { what, reason, .. } => {
            assert_eq!((what.as_str(), reason.as_str()), ("submit", "settled"))
        }
        other => panic!("{other:?}"),
    }
    assert!(b.drain().is_empty());
    let events = events_of(&runtime, "root/1");
    assert_eq!(
        kinds(&events),
        [
            "Request", "Offer", "Accept", "Answer", "Result", "Answer", "Refused"
        ]
    );
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn hold_arriving_as_window_expires() {
    let mut web = Script::spawn("web").await;
    let runtime = start(timed(), vec![web.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let start_t = tokio::time::Instant::now();
    let call = spawn_ask(&root, &timed_args(Some("5")));
    let offer = web.offer().await;
    send(&offer, Reply::Accept);

    until(start_t, 5.0).await;
    send(&offer, Reply::Hold);
    quiesce().await;

    if call.is_finished() {
        // The window won: the hold is refused back, the question is pending.
        assert_eq!(outcome(call).await.result.text, pending_result("root/1"));
        match web.next().await {
            Seen::Refused { what, reason, .. } => {
                assert_eq!((what.as_str(), reason.as_str()), ("hold", "settled"))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            kinds(&events_of(&runtime, "root/1")),
            ["Request", "Offer", "Accept", "Result", "Refused"]
        );
        send(&offer, Reply::Submit(yes_batch().into()));
        within(WAIT_S_MAX, root.closed("root/1")).await;
        assert_eq!(root.user_messages().await, [late_yes_message("root/1")]);
    } else {
        // The hold won: the window no longer counts.
        tokio::time::sleep(std::time::Duration::from_secs(1000)).await;
        assert!(!call.is_finished());
        send(&offer, Reply::Submit(yes_batch().into()));
        assert_eq!(outcome(call).await.result.text, YES_RESULT);
        assert_eq!(
            kinds(&events_of(&runtime, "root/1")),
            ["Request", "Offer", "Accept", "Hold", "Answer", "Result"]
        );
    }
    check_contract(&runtime.events().snapshot());
}

/// Pins the fix that queues an answerer's death behind its earlier messages: the
/// owner sends its submit and dies in the same handler, so the broker holds both
/// the submit (in its mailbox) and the death notice when it next runs. The submit
/// reached the broker first and wins (SPEC §3.2); the death then fails nothing over.
#[tokio::test(start_paused = true)]
async fn owner_crashing_while_its_submit_is_in_flight() {
    let (mut a, mut b) = (Script::spawn("a").await, Script::spawn("b").await);
    let runtime = start(timed(), vec![a.slot(), b.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let call = spawn_ask(&root, &timed_args(Some("-1")));
    let offer = a.offer().await;
    send(&offer, Reply::Accept);
    quiesce().await;

    a.crash_after_sending(&offer, vec![Reply::Submit(yes_batch().into())]);
    let outcome = outcome(call).await;
    quiesce().await;

    assert_eq!(outcome.result.text, YES_RESULT);
    assert!(b.drain().is_empty(), "nothing to fail over");
    let events = runtime.events().snapshot();
    let order: Vec<&str> = events
        .iter()
        .filter(|e| e.kind.call_id() == Some("root/1") || matches!(e.kind, EventKind::Crash { .. }))
        .map(|e| kind_name(&e.kind))
        .collect();
    assert_eq!(order, ["Request", "Offer", "Accept", "Answer", "Result", "Crash"]);
    check_contract(&events);
}
