//! SPEC §3.3–3.6 and the closings of §2.4: legacy calls block unkeyed, timed calls
//! wait their window then go `pending`, `-1` blocks keyed, holds keep the window
//! open, pending questions close once (late answer or withdrawal), and a bad batch
//! leaves the call open.

use crate::broker_support;

use asksim::AnswererSlot;
use asksim::event::EventKind;
use asksim::policy::{Accepts, Latency, Policy};
use asksim::protocol::Reply;
use asksim::tool::{Schema, Timeout, ToolConfig};
use asksim::{Runtime, RuntimeConfig};
use broker_support::*;
use serde_json::json;

fn timed() -> ToolConfig {
    ToolConfig::timed(Timeout::Window(30.0))
}

#[tokio::test(start_paused = true)]
async fn legacy_call_blocks_and_is_unkeyed() {
    let mut web = Script::spawn("web").await;
    let runtime = start(ToolConfig::default(), vec![web.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let call = spawn_ask(&root, LEGACY_ARGS);
    let offer = web.offer().await;
    assert_eq!(offer.call_id, None, "legacy requests are unkeyed");
    assert_eq!(offer.schema, Schema::Legacy);
    send(&offer, Reply::Accept);

    tokio::time::sleep(std::time::Duration::from_secs(86_400 * 10)).await;
    assert!(!call.is_finished(), "a legacy call never returns pending");
    assert_eq!(runtime.status().await.open.get("root/1"), Some(&"waiting"));
    send(
        &offer,
        Reply::Submit(json!([{"id":"Proceed?","selected":["Yes"]}]).into()),
    );
    let outcome = outcome(call).await;

    assert_eq!(outcome.result.text, r#"{"answers":{"Proceed?":"Yes"}}"#);
    let events = events_of(&runtime, "root/1");
    assert_eq!(kinds(&events), ["Request", "Offer", "Accept", "Answer", "Result"]);
    match &events[0].kind {
        EventKind::Request {
            keyed,
            schema,
            window_s,
            ..
        } => {
            assert_eq!((*keyed, *schema, *window_s), (false, Schema::Legacy, None))
        }
        other => panic!("{other:?}"),
    }
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn timed_call_returns_pending_after_window_then_late_answer_arrives_as_user_message() {
    let mut web = Script::spawn("web").await;
    let runtime = start(timed(), vec![web.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let start_t = tokio::time::Instant::now();
    let call = spawn_ask(&root, &timed_args(Some("5")));
    let offer = web.offer().await;
    send(&offer, Reply::Accept);

    let outcome = outcome(call).await;
    assert_eq!(outcome.call_id, "root/1");
    assert!(!outcome.result.is_error());
    assert_eq!(outcome.result.text, pending_result("root/1"));
    assert_eq!(
        outcome.result.text,
        r#"{"pending":true,"callId":"root/1","message":"No answer yet. The questions stay open and the user can still answer them. Continue only with work that does not depend on the answers, and do not assume any answer. The answers will arrive later as a user message with kind \"answer_to_pending_question\" and this callId."}"#
    );
    assert_eq!(runtime.status().await.open.get("root/1"), Some(&"pending"));
    assert!(root.user_messages().await.is_empty());

    until(start_t, 20.0).await;
    send(&offer, Reply::Submit(yes_batch().into()));
    within(WAIT_S_MAX, root.closed("root/1")).await;

    let message = late_yes_message("root/1");
    assert_eq!(root.user_messages().await, vec![message.clone()]);
    let events = events_of(&runtime, "root/1");
    assert_eq!(
        kinds(&events),
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
    let t: Vec<f64> = events.iter().map(|e| e.t).collect();
    assert_eq!(t, [0.0, 0.0, 0.0, 5.0, 20.0, 20.0, 20.0]);
    match &events[5].kind {
        EventKind::LateAnswer {
            message: m, agent, ..
        } => assert_eq!((&**m, agent.as_str()), (message.as_str(), "root")),
        other => panic!("{other:?}"),
    }
    assert!(runtime.status().await.open.is_empty());
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn minus_one_blocks_but_is_keyed() {
    let mut web = Script::spawn("web").await;
    let runtime = start(timed(), vec![web.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let call = spawn_ask(&root, &timed_args(Some("-1")));
    let offer = web.offer().await;
    assert_eq!(offer.call_id.as_deref(), Some("root/1"), "-1 is keyed");
    send(&offer, Reply::Accept);

    tokio::time::sleep(std::time::Duration::from_secs(86_400 * 10)).await;
    assert!(!call.is_finished(), "-1 never returns pending");
    send(&offer, Reply::Submit(yes_batch().into()));
    let outcome = outcome(call).await;

    assert_eq!(outcome.result.text, YES_RESULT);
    let events = events_of(&runtime, "root/1");
    assert_eq!(kinds(&events), ["Request", "Offer", "Accept", "Answer", "Result"]);
    match &events[0].kind {
        EventKind::Request {
            keyed,
            timeout,
            window_s,
            ..
        } => {
            assert_eq!((*keyed, *timeout, *window_s), (true, Some(-1.0), Some(-1.0)))
        }
        other => panic!("{other:?}"),
    }
    // The configured default can be -1 too.
    let runtime = start(
        ToolConfig::timed(Timeout::Blocking),
        vec![AnswererSlot::Policy {
            name: "slow".into(),
            policy: Policy::recommended_after(100_000.0),
        }],
    )
    .await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    assert_eq!(ask(&root, &timed_args(None)).await.result.text, YES_RESULT);
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn hold_keeps_window_open() {
    let mut web = Script::spawn("web").await;
    let runtime = start(timed(), vec![web.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let start_t = tokio::time::Instant::now();
    let call = spawn_ask(&root, &timed_args(Some("5")));
    let offer = web.offer().await;
    send(&offer, Reply::Accept);
    until(start_t, 2.0).await;
    send(&offer, Reply::Hold);

    until(start_t, 100.0).await;
    assert!(!call.is_finished(), "held: no pending at 5 s");
    assert_eq!(runtime.status().await.open.get("root/1"), Some(&"waiting"));
    send(&offer, Reply::Submit(yes_batch().into()));
    let outcome = outcome(call).await;

    assert_eq!(outcome.result.text, YES_RESULT);
    let events = events_of(&runtime, "root/1");
    assert_eq!(
        kinds(&events),
        ["Request", "Offer", "Accept", "Hold", "Answer", "Result"]
    );
    let t: Vec<f64> = events.iter().map(|e| e.t).collect();
    assert_eq!(t, [0.0, 0.0, 0.0, 2.0, 100.0, 100.0]);
    assert!(
        root.user_messages().await.is_empty(),
        "holds are not model context"
    );
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn hold_after_settlement_is_refused() {
    let mut web = Script::spawn("web").await;
    let runtime = start(timed(), vec![web.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let start_t = tokio::time::Instant::now();
    let call = spawn_ask(&root, &timed_args(Some("5")));
    let offer = web.offer().await;
    send(&offer, Reply::Accept);
    assert_eq!(outcome(call).await.result.text, pending_result("root/1"));

    until(start_t, 6.0).await;
    send(&offer, Reply::Hold);
    match web.next().await {
        Seen::Refused { what, reason, ticket } => {
            assert_eq!(
                (what.as_str(), reason.as_str(), ticket),
                ("hold", "settled", offer.ticket)
            )
        }
        other => panic!("{other:?}"),
    }
    // The question stays pending and answerable.
    send(&offer, Reply::Submit(yes_batch().into()));
    within(WAIT_S_MAX, root.closed("root/1")).await;
    // After the late answer too.
    send(&offer, Reply::Hold);
    quiesce().await;

    let events = events_of(&runtime, "root/1");
    assert_eq!(
        kinds(&events),
        [
            "Request",
            "Offer",
            "Accept",
            "Result",
            "Refused",
            "Answer",
            "LateAnswer",
            "UserMessage",
            "Refused"
        ]
    );
    for i in [4, 8] {
        match &events[i].kind {
            EventKind::Refused { what, reason, .. } => {
                assert_eq!((what.as_str(), reason.as_str()), ("hold", "settled"))
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(root.user_messages().await, [late_yes_message("root/1")]);
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn pending_question_withdrawn_when_waterfall_runs_out() {
    // Declines after 10 s: the call is pending by then, and nobody is left.
    let slow_no = Policy {
        accepts: Accepts::None,
        offer_latency: Latency::Fixed(10.0),
        ..Policy::recommended_after(0.0)
    };
    let runtime = start_with_offer_timeout(slow_no, 60.0).await;
    let root = runtime.spawn_root("root", None).await.unwrap();

    let outcome = ask(&root, &timed_args(Some("5"))).await;
    assert_eq!(outcome.result.text, pending_result("root/1"));
    within(WAIT_S_MAX, root.closed("root/1")).await;

    let message = r#"{"kind":"pending_question_withdrawn","tool":"ask_user_question","callId":"root/1","reason":"NO_ANSWERER"}"#;
    assert_eq!(root.user_messages().await, [message]);
    let events = events_of(&runtime, "root/1");
    assert_eq!(
        kinds(&events),
        ["Request", "Offer", "Result", "Decline", "Withdraw", "UserMessage"]
    );
    assert_eq!(events[4].t, 10.0);
    match &events[4].kind {
        EventKind::Withdraw {
            reason, message: m, ..
        } => {
            assert_eq!((reason.as_str(), m.as_deref()), ("NO_ANSWERER", Some(message)))
        }
        other => panic!("{other:?}"),
    }
    assert!(runtime.status().await.open.is_empty());
    check_contract(&runtime.events().snapshot());
}

/// A timed runtime with one policy answerer and this offer timeout.
async fn start_with_offer_timeout(policy: Policy, offer_timeout_s: f64) -> Runtime {
    Runtime::start(RuntimeConfig {
        tool: timed(),
        answerers: vec![AnswererSlot::Policy {
            name: "slow".into(),
            policy,
        }],
        offer_timeout_s,
        ..RuntimeConfig::default()
    })
    .await
    .unwrap()
}

#[tokio::test(start_paused = true)]
async fn cancel_call_withdraws_pending_without_message() {
    let mut web = Script::spawn("web").await;
    let runtime = start(timed(), vec![web.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let call = spawn_ask(&root, &timed_args(Some("5")));
    let offer = web.offer().await;
    send(&offer, Reply::Accept);
    assert_eq!(outcome(call).await.result.text, pending_result("root/1"));

    runtime.cancel_call("root/1");
    within(WAIT_S_MAX, root.closed("root/1")).await;
    assert!(
        matches!(web.next().await, Seen::Withdraw(_)),
        "the owner is told to stop"
    );
    // A submit after the withdrawal is refused back.
    send(&offer, Reply::Submit(yes_batch().into()));
    assert!(matches!(web.next().await, Seen::Refused { ref reason, .. } if reason == "withdrawn"));

    assert!(
        root.user_messages().await.is_empty(),
        "withdrawn without a message"
    );
    let events = events_of(&runtime, "root/1");
    assert_eq!(
        kinds(&events),
        [
            "Request",
            "Offer",
            "Accept",
            "Result",
            "CancelCall",
            "Withdraw",
            "Answer",
            "Refused"
        ]
    );
    match &events[5].kind {
        EventKind::Withdraw { reason, message, .. } => {
            assert_eq!((reason.as_str(), message), ("cancel_call", &None))
        }
        other => panic!("{other:?}"),
    }
    // A waiting call cancelled explicitly settles as ABORTED.
    let call = spawn_ask(&root, &timed_args(Some("-1")));
    let _ = web.offer().await;
    runtime.cancel_call("root/2");
    let outcome = outcome(call).await;
    assert_eq!(
        outcome.result.text,
        error_result("ABORTED", "the call was cancelled")
    );
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn stopped_agent_withdraws_its_open_questions() {
    let mut web = Script::spawn("web").await;
    let runtime = start(timed(), vec![web.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let pending = spawn_ask(&root, &timed_args(Some("5")));
    let offer1 = web.offer().await;
    send(&offer1, Reply::Accept);
    assert_eq!(outcome(pending).await.result.text, pending_result("root/1"));
    let waiting = spawn_ask(&root, &timed_args(Some("-1")));
    let offer2 = web.offer().await;
    send(&offer2, Reply::Accept);
    quiesce().await;

    root.stop();
    let outcome = outcome(waiting).await;
    within(WAIT_S_MAX, root.closed("root/1")).await;

    assert_eq!(
        outcome.result.text,
        error_result("ABORTED", "the calling agent stopped")
    );
    assert!(
        root.user_messages().await.is_empty(),
        "a stop withdraws without a message"
    );
    let e1 = events_of(&runtime, "root/1");
    assert_eq!(kinds(&e1), ["Request", "Offer", "Accept", "Result", "Withdraw"]);
    match &e1[4].kind {
        EventKind::Withdraw { reason, message, .. } => {
            assert_eq!((reason.as_str(), message), ("agent_stopped", &None))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        kinds(&events_of(&runtime, "root/2")),
        ["Request", "Offer", "Accept", "Result"]
    );
    let seen = web.drain();
    assert_eq!(
        seen.iter().filter(|s| matches!(s, Seen::Withdraw(_))).count(),
        2,
        "{seen:?}"
    );
    assert!(runtime.status().await.open.is_empty());
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn bad_batch_is_refused_and_call_stays_open() {
    let mut web = Script::spawn("web").await;
    let runtime = start(timed(), vec![web.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let call = spawn_ask(&root, &timed_args(Some("-1")));
    let offer = web.offer().await;
    send(&offer, Reply::Accept);

    let bad = [
        (
            json!([{"id":"go","selected":["Maybe"]}]),
            r#"batch[0].selected[0]: "Maybe" is not an option of question "go""#,
        ),
        (
            json!([{"id":"go","selected":["Yes (Recommended)","No"]}]),
            r#"batch[0].selected: question "go" is single-select, got 2 labels"#,
        ),
        (json!([]), r#"batch: no item for question "go""#),
        (
            json!([{"id":"go"},{"id":"go"}]),
            r#"batch[1].id: a second item for question "go""#,
        ),
    ];
    for (batch, why) in &bad {
        send(&offer, Reply::Submit(batch.clone().into()));
        match web.next().await {
            Seen::Refused { what, reason, .. } => {
                assert_eq!((what.as_str(), reason.as_str()), ("submit", *why))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(runtime.status().await.open.get("root/1"), Some(&"waiting"));
    }
    assert!(!call.is_finished());
    send(
        &offer,
        Reply::Submit(json!([{"id":"go","selected":[],"custom":"only on Tuesdays"}]).into()),
    );
    let outcome = outcome(call).await;

    assert_eq!(
        outcome.result.text,
        r#"{"answers":[{"id":"go","selected":[],"custom":"only on Tuesdays"}]}"#
    );
    let events = events_of(&runtime, "root/1");
    assert_eq!(
        kinds(&events),
        [
            "Request", "Offer", "Accept", "Answer", "Refused", "Answer", "Refused", "Answer", "Refused",
            "Answer", "Refused", "Answer", "Result"
        ]
    );
    check_contract(&runtime.events().snapshot());
}
