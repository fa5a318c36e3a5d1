//! SPEC §3.1: identity first (after the arguments), decided by the live agent tree
//! and never by lineage. Also the registration refusals of the agent tree.

use crate::broker_support;

use asksim::AnswererSlot;
use asksim::event::EventKind;
use asksim::limits::AGENTS_PER_TREE_MAX;
use asksim::policy::Policy;
use asksim::protocol::SpawnError;
use asksim::tool::{Timeout, ToolConfig};
use broker_support::*;

fn web() -> AnswererSlot {
    AnswererSlot::Policy {
        name: "web".into(),
        policy: Policy::recommended_after(1.0),
    }
}

fn timed() -> ToolConfig {
    ToolConfig::timed(Timeout::Window(30.0))
}

/// A delegated child with bad arguments learns about its arguments, not about its
/// identity: §2.3 settles the call before the broker ever sees it.
#[tokio::test(start_paused = true)]
async fn invalid_arguments_are_refused_before_identity() {
    let mut answerer = Script::spawn("web").await;
    let runtime = start(timed(), vec![answerer.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let child = root.spawn_child("child").await.unwrap();

    let bad =
        r#"{"questions":[{"id":"go","question":"Proceed?","header":"Confirm","options":[{"label":"Yes"}]}]}"#;
    let outcome = ask(&child, bad).await;

    assert_eq!(outcome.call_id, "child/1");
    assert!(outcome.result.is_error());
    assert_eq!(
        outcome.result.text,
        error_result(
            "INVALID_ARGUMENTS",
            "questions[0].options: expected 2 to 4 options, got 1"
        )
    );
    quiesce().await;
    let events = events_of(&runtime, "child/1");
    assert_eq!(
        kinds(&events),
        ["Result"],
        "no Request: it never reached the broker"
    );
    assert!(answerer.drain().is_empty(), "no answerer saw it");
    // The invalid call still counts: the next one is child/2, and it is delegated.
    let next = ask(&child, &timed_args(None)).await;
    assert_eq!(next.call_id, "child/2");
    assert_eq!(error_code(&next.result.text), "DELEGATED_CALLER");
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn delegated_child_is_rejected_before_any_offer() {
    let mut answerer = Script::spawn("web").await;
    let runtime = start(timed(), vec![answerer.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let child = root.spawn_child("child").await.unwrap();

    let outcome = ask(&child, &timed_args(Some("5"))).await;

    assert_eq!(outcome.call_id, "child/1");
    assert!(outcome.result.is_error());
    assert_eq!(error_code(&outcome.result.text), "DELEGATED_CALLER");
    quiesce().await;
    let events = events_of(&runtime, "child/1");
    assert_eq!(kinds(&events), ["Request", "Result"]);
    assert_eq!(events[0].t, events[1].t, "settled at once, no window");
    match &events[1].kind {
        EventKind::Result {
            agent,
            result,
            is_error,
            ..
        } => {
            assert_eq!(agent, "child");
            assert_eq!(result, &outcome.result.text);
            assert!(is_error);
        }
        other => panic!("{other:?}"),
    }
    assert!(answerer.drain().is_empty(), "no offer reached any answerer");
    assert!(runtime.status().await.open.is_empty(), "nothing queued");
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn child_whose_owner_stopped_asks_normally() {
    let runtime = start(timed(), vec![web()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let child = root.spawn_child("child").await.unwrap();
    root.stop();
    quiesce().await;

    let outcome = ask(&child, &timed_args(Some("5"))).await;

    assert_eq!(outcome.call_id, "child/1");
    assert_eq!(outcome.result.text, YES_RESULT);
    assert!(!outcome.result.is_error());
    let events = events_of(&runtime, "child/1");
    assert_eq!(kinds(&events), ["Request", "Offer", "Accept", "Answer", "Result"]);
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn stopped_agent_gets_not_runtime_root() {
    let mut answerer = Script::spawn("web").await;
    let runtime = start(timed(), vec![answerer.slot()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    root.stop();
    quiesce().await;

    let outcome = ask(&root, &timed_args(Some("5"))).await;

    assert_eq!(outcome.call_id, "root/1");
    assert!(outcome.result.is_error());
    assert_eq!(error_code(&outcome.result.text), "NOT_RUNTIME_ROOT");
    assert_eq!(kinds(&events_of(&runtime, "root/1")), ["Request", "Result"]);
    quiesce().await;
    assert!(answerer.drain().is_empty(), "no offer");
    // A child of the stopped agent cannot be spawned: it has no live owner.
    assert_eq!(
        root.spawn_child("late").await.err(),
        Some(SpawnError::OwnerNotLive)
    );
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn lineage_does_not_decide_identity() {
    let runtime = start(timed(), vec![web()]).await;
    // "parent" is a live root of this runtime: lineage naming it changes nothing.
    let _parent = runtime.spawn_root("parent", None).await.unwrap();
    let resumed = runtime
        .spawn_root("resumed", Some("parent".into()))
        .await
        .unwrap();

    let outcome = ask(&resumed, &timed_args(Some("5"))).await;

    assert_eq!(outcome.call_id, "resumed/1");
    assert_eq!(outcome.result.text, YES_RESULT);
    let spawn = runtime
        .events()
        .snapshot()
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::Spawn {
                agent,
                owner,
                lineage,
            } if agent == "resumed" => Some((owner, lineage)),
            _ => None,
        })
        .unwrap();
    assert_eq!(spawn, (None, Some("parent".into())), "lineage recorded, no owner");
    // A resumed root continues its callIds (SPEC §1, callId).
    let again = runtime
        .resume_root("again", Some("parent".into()), 3)
        .await
        .unwrap();
    let outcome = ask(&again, &timed_args(Some("5"))).await;
    assert_eq!(outcome.call_id, "again/4");
    assert_eq!(outcome.result.text, YES_RESULT);
    check_contract(&runtime.events().snapshot());
}

/// LIMIT_EXCEEDED for agents is [`AGENTS_PER_TREE_MAX`] (100,000) per tree: too
/// many spawns for a unit test. What is practical: the tree refuses what it cannot
/// hold (a second agent with a name, a bad name, an owner that is not live), and
/// nothing is registered for a refused spawn.
#[tokio::test(start_paused = true)]
async fn agent_tree_refuses_duplicate_and_bad_names() {
    assert_eq!(AGENTS_PER_TREE_MAX, 100_000);
    let runtime = start(timed(), vec![web()]).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    assert_eq!(
        runtime.spawn_root("root", None).await.err(),
        Some(SpawnError::DuplicateName("root".into()))
    );
    assert_eq!(
        root.spawn_child("root").await.err(),
        Some(SpawnError::DuplicateName("root".into()))
    );
    assert_eq!(
        runtime.spawn_root("a/b", None).await.err(),
        Some(SpawnError::BadName("a/b".into()))
    );
    assert_eq!(
        runtime.spawn_root("", None).await.err(),
        Some(SpawnError::BadName(String::new()))
    );
    let spawns = runtime
        .events()
        .snapshot()
        .into_iter()
        .filter(|e| matches!(e.kind, EventKind::Spawn { .. }))
        .count();
    assert_eq!(spawns, 1, "refused spawns register nothing");
    // The original is untouched and still asks.
    assert_eq!(ask(&root, &timed_args(Some("5"))).await.result.text, YES_RESULT);
}
