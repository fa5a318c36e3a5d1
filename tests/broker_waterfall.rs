//! SPEC §3.2: the waterfall. Offers go in order, the first accept owns the request,
//! silence past the offer timeout is a decline, none accepting is `NO_ANSWERER`,
//! and an owner's death fails the request over to the rest of the waterfall.

use crate::broker_support;

use asksim::AnswererSlot;
use asksim::event::EventKind;
use asksim::policy::{Accepts, Latency, Policy};
use asksim::protocol::Reply;
use asksim::tool::{Timeout, ToolConfig};
use broker_support::*;

fn blocking() -> ToolConfig {
    ToolConfig::timed(Timeout::Blocking)
}

fn policy(name: &str, policy: Policy) -> AnswererSlot {
    AnswererSlot::Policy {
        name: name.into(),
        policy,
    }
}

fn answerer_of(event: &EventKind) -> &str {
    match event {
        EventKind::Offer { answerer, .. }
        | EventKind::Accept { answerer, .. }
        | EventKind::Decline { answerer, .. }
        | EventKind::Answer { answerer, .. }
        | EventKind::Refused { answerer, .. } => answerer,
        EventKind::Crash { answerer, .. } => answerer,
        _ => "",
    }
}

#[tokio::test(start_paused = true)]
async fn waterfall_offers_in_order_and_first_accept_owns() {
    let (mut a, mut b, mut c) = (
        Script::spawn("a").await,
        Script::spawn("b").await,
        Script::spawn("c").await,
    );
    let runtime = start(blocking(), vec![a.slot(), b.slot(), c.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let call = spawn_ask(&root, &timed_args(None));

    let offer_a = a.offer().await;
    assert!(
        b.drain().is_empty() && c.drain().is_empty(),
        "one offer at a time, a first"
    );
    send(&offer_a, Reply::Decline);
    let offer_b = b.offer().await;
    assert_eq!(
        offer_b.call_id.as_deref(),
        Some("root/1"),
        "keyed: carries its callId"
    );
    assert_eq!(offer_b.agent, "root");
    assert_eq!(offer_b.questions[0].id(), "go");
    send(&offer_b, Reply::Accept);
    quiesce().await;
    assert!(c.drain().is_empty(), "c is never offered once b owns it");
    // Only the owner may answer: a's submit is refused, b's settles.
    send(&offer_a, Reply::Submit(yes_batch().into()));
    send(&offer_b, Reply::Submit(yes_batch().into()));
    let outcome = outcome(call).await;

    assert_eq!(outcome.result.text, YES_RESULT);
    let events = events_of(&runtime, "root/1");
    assert_eq!(
        kinds(&events),
        [
            "Request", "Offer", "Decline", "Offer", "Accept", "Answer", "Refused", "Answer", "Result"
        ]
    );
    let who: Vec<&str> = events.iter().map(|e| answerer_of(&e.kind)).collect();
    assert_eq!(who, ["", "a", "a", "b", "b", "a", "a", "b", ""]);
    match &events[6].kind {
        EventKind::Refused { what, reason, .. } => {
            assert_eq!((what.as_str(), reason.as_str()), ("submit", "not_owner"))
        }
        other => panic!("{other:?}"),
    }
    quiesce().await;
    assert!(matches!(a.next().await, Seen::Refused { ref reason, .. } if reason == "not_owner"));
    assert!(c.drain().is_empty());
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn offer_timeout_counts_as_decline() {
    let silent = Policy {
        offer_latency: Latency::Never,
        ..Policy::recommended_after(0.0)
    };
    let runtime = start(
        blocking(),
        vec![
            policy("silent", silent),
            policy("web", Policy::recommended_after(2.0)),
        ],
    )
    .await;
    let root = runtime.spawn_root("root", None).await.unwrap();

    let outcome = ask(&root, &timed_args(None)).await;

    assert_eq!(outcome.result.text, YES_RESULT);
    let events = events_of(&runtime, "root/1");
    assert_eq!(
        kinds(&events),
        [
            "Request", "Offer", "Decline", "Offer", "Accept", "Answer", "Result"
        ]
    );
    match &events[2].kind {
        EventKind::Decline { answerer, reason, .. } => {
            assert_eq!((answerer.as_str(), reason.as_str()), ("silent", "offer_timeout"))
        }
        other => panic!("{other:?}"),
    }
    let t: Vec<f64> = events.iter().map(|e| e.t).collect();
    assert_eq!(
        t,
        [0.0, 0.0, 1.0, 1.0, 1.0, 3.0, 3.0],
        "the default offer timeout is 1 s"
    );
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn no_answerer_settles_as_no_answerer() {
    let none = Policy {
        accepts: Accepts::None,
        ..Policy::recommended_after(0.0)
    };
    let legacy_only = Policy {
        accepts: Accepts::Legacy,
        ..Policy::recommended_after(0.0)
    };
    let runtime = start(
        blocking(),
        vec![policy("none", none), policy("legacy-only", legacy_only)],
    )
    .await;
    let root = runtime.spawn_root("root", None).await.unwrap();

    let outcome = ask(&root, &timed_args(None)).await;

    assert!(outcome.result.is_error());
    assert_eq!(
        outcome.result.text,
        error_result("NO_ANSWERER", "no answerer accepted the request")
    );
    assert_eq!(
        kinds(&events_of(&runtime, "root/1")),
        ["Request", "Offer", "Decline", "Offer", "Decline", "Result"]
    );
    // An empty waterfall says the same, at once.
    let empty = start(blocking(), vec![]).await;
    let root = empty.spawn_root("root", None).await.unwrap();
    let outcome = ask(&root, &timed_args(None)).await;
    assert_eq!(error_code(&outcome.result.text), "NO_ANSWERER");
    assert_eq!(kinds(&events_of(&empty, "root/1")), ["Request", "Result"]);
    check_contract(&runtime.events().snapshot());
    check_contract(&empty.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn fail_over_when_owner_dies() {
    let fragile = Policy {
        crash_after_accepts: Some(1),
        ..Policy::recommended_after(5.0)
    };
    let runtime = start(
        blocking(),
        vec![
            policy("fragile", fragile),
            policy("web", Policy::recommended_after(2.0)),
        ],
    )
    .await;
    let root = runtime.spawn_root("root", None).await.unwrap();

    let outcome = ask(&root, &timed_args(None)).await;

    assert_eq!(outcome.result.text, YES_RESULT);
    let events = runtime.events().snapshot();
    let about: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e.kind.call_id() == Some("root/1") || matches!(e.kind, EventKind::Crash { .. }))
        .map(|e| (kind_name(&e.kind), answerer_of(&e.kind)))
        .collect();
    assert_eq!(
        about,
        [
            ("Request", ""),
            ("Offer", "fragile"),
            ("Accept", "fragile"),
            ("Crash", "fragile"),
            ("Decline", "fragile"),
            ("Offer", "web"),
            ("Accept", "web"),
            ("Answer", "web"),
            ("Result", ""),
        ]
    );
    assert!(events.iter().any(
        |e| matches!(&e.kind, EventKind::Decline { reason, answerer, .. } if reason == "dead" && answerer == "fragile")
    ));
    check_contract(&events);
}

#[tokio::test(start_paused = true)]
async fn submit_from_dead_owner_is_refused_owner_dead() {
    let (mut a, mut b) = (Script::spawn("a").await, Script::spawn("b").await);
    let runtime = start(blocking(), vec![a.slot(), b.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let call = spawn_ask(&root, &timed_args(None));
    let offer_a = a.offer().await;
    send(&offer_a, Reply::Accept);
    quiesce().await;

    a.actor.stop(None);
    let offer_b = b.offer().await; // fail-over: a's death reached the broker
    // A message a dead owner left behind arrives after its death.
    send(&offer_a, Reply::Submit(yes_batch().into()));
    send(&offer_a, Reply::Hold);
    quiesce().await;
    assert!(runtime.status().await.open.contains_key("root/1"), "still open");
    send(&offer_b, Reply::Accept);
    send(&offer_b, Reply::Submit(yes_batch().into()));
    let outcome = outcome(call).await;

    assert_eq!(outcome.result.text, YES_RESULT);
    let events = events_of(&runtime, "root/1");
    assert_eq!(
        kinds(&events),
        [
            "Request", "Offer", "Accept", "Decline", "Offer", "Answer", "Refused", "Refused", "Accept",
            "Answer", "Result"
        ]
    );
    let refusals: Vec<(&str, &str, &str)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Refused {
                answerer,
                what,
                reason,
                ..
            } => Some((answerer.as_str(), what.as_str(), reason.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        refusals,
        [("a", "submit", "owner_dead"), ("a", "hold", "owner_dead")]
    );
    check_contract(&runtime.events().snapshot());
}
