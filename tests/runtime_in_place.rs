//! Library agents stepped in place (`src/actors/passive.rs`, issue #23): no
//! actor of their own, their state under a lock that every sender takes. These
//! tests hold what an actor gave and the lock must keep: each call numbered
//! once and settled once when many tasks on several threads ask at once, and
//! a pending call's close reaching its waiter whether it waits before or after.
//!
//! The broker is stepped in place too (`src/actors/broker/seat.rs`): its mail waits
//! in one inbox and whoever sends it takes the inbox. Here: no mail lost or
//! taken twice when many agents on two threads send at once (a thread that
//! finds the broker taken leaves its mail to the holder); a library agent's
//! mail sent under its lock is taken once the lock is let go (taken under
//! it, a result delivered at once to that agent would wait for the lock its
//! own thread holds: the round trips here never return); and with a user's
//! answerer actor, which replies to the broker's mailbox, every piece of mail
//! goes through that mailbox.

use std::collections::BTreeSet;

use asksim::policy::{Accepts, AnswerPolicy, Latency, Policy};
use asksim::tool::{Timeout, ToolConfig};
use asksim::{AnswererSlot, Runtime, RuntimeConfig};

use crate::broker_support::{Script, YES_RESULT, send, yes_batch};

const ARGS_5S: &str = r#"{"questions":[{"id":"go","question":"Proceed?","header":"Confirm","options":[{"label":"Yes (Recommended)"},{"label":"No"}]}],"timeout":5}"#;
const ARGS_1S: &str = r#"{"questions":[{"id":"go","question":"Proceed?","header":"Confirm","options":[{"label":"Yes (Recommended)"},{"label":"No"}]}],"timeout":1}"#;

/// Tasks asking at once, and calls each.
const TASKS: u64 = 8;
const CALLS: u64 = 50;

fn answering_after(latency: Latency) -> RuntimeConfig {
    let policy = Policy::new(Accepts::All, latency, AnswerPolicy::Recommended);
    RuntimeConfig {
        tool: ToolConfig::timed(Timeout::Window(30.0)),
        answerers: vec![AnswererSlot::Policy {
            name: "yes".into(),
            policy,
        }],
        ..RuntimeConfig::default()
    }
}

/// Many tasks on two worker threads ask one agent at once (each call answered
/// at once, so no clock is read): every callId is given exactly once, and every
/// call settles with its answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_on_one_library_agent_are_numbered_and_settled_once() {
    let runtime = Runtime::start(answering_after(Latency::Fixed(0.0)))
        .await
        .expect("a runtime");
    let root = runtime.spawn_root("root", None).await.expect("a root");
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let root = root.clone();
            tokio::spawn(async move {
                let mut ids = Vec::new();
                for _ in 0..CALLS {
                    let outcome = root.ask(ARGS_5S).await;
                    assert!(outcome.result.text.contains("answers"), "{}", outcome.result.text);
                    ids.push(outcome.call_id);
                }
                ids
            })
        })
        .collect();
    let mut ids = BTreeSet::new();
    for task in tasks {
        for id in task.await.expect("a task") {
            assert!(ids.insert(id.clone()), "{id} given twice");
        }
    }
    let want: BTreeSet<String> = (1..=TASKS * CALLS).map(|n| format!("root/{n}")).collect();
    assert_eq!(ids, want);
    assert_eq!(runtime.status().await.open.len(), 0, "every call settled");
    runtime.shutdown().await;
}

/// A runtime whose root has one call pending (window 1 s, answered at 2 s),
/// and that call's id.
async fn pending_call() -> (Runtime, asksim::AgentHandle, String) {
    let runtime = Runtime::start(answering_after(Latency::Fixed(2.0)))
        .await
        .expect("a runtime");
    let root = runtime.spawn_root("root", None).await.expect("a root");
    let outcome = root.ask(ARGS_1S).await;
    assert!(outcome.result.text.contains("pending"), "{}", outcome.result.text);
    (runtime, root, outcome.call_id)
}

/// A task awaiting the close of `call_id`.
fn close_waiter(root: &asksim::AgentHandle, call_id: &str) -> tokio::task::JoinHandle<()> {
    let (root, call_id) = (root.clone(), call_id.to_owned());
    tokio::spawn(async move { root.closed(&call_id).await })
}

/// A pending call's close reaches a waiter that began waiting before the late
/// answer and one that begins after it, and the late answer is the agent's
/// user message once.
#[tokio::test(start_paused = true)]
async fn a_close_reaches_waiters_before_and_after_it() {
    let (runtime, root, call_id) = pending_call().await;
    let early = close_waiter(&root, &call_id);
    early.await.expect("the early waiter");
    root.closed(&call_id).await;
    let messages = root.user_messages().await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(messages[0].contains("Yes"), "{messages:?}");
    runtime.shutdown().await;
}

/// Several callers awaiting one pending call's close at once: none returns
/// before the late answer closes it, and every one returns once it has.
#[tokio::test(start_paused = true)]
async fn a_close_reaches_every_waiter_of_the_call_and_none_before() {
    let (runtime, root, call_id) = pending_call().await;
    let waiters: Vec<_> = (0..3).map(|_| close_waiter(&root, &call_id)).collect();
    // Virtual time: the window passed at 1 s, the answer comes at 2 s.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(root.user_messages().await.is_empty(), "not closed yet");
    let early = waiters.iter().filter(|w| w.is_finished()).count();
    assert_eq!(early, 0, "a waiter returned before the call closed");
    for waiter in waiters {
        waiter.await.expect("a waiter");
    }
    assert_eq!(root.user_messages().await.len(), 1);
    runtime.shutdown().await;
}

/// A call still waiting when the runtime shuts down (its answerer accepted
/// and never answers) settles as `ABORTED` with its callId, as it did when the
/// agent was an actor whose state was dropped.
#[tokio::test(start_paused = true)]
async fn a_call_waiting_at_shutdown_is_aborted() {
    let runtime = Runtime::start(answering_after(Latency::Never))
        .await
        .expect("a runtime");
    let root = runtime.spawn_root("root", None).await.expect("a root");
    let args = ARGS_1S.replace("\"timeout\":1", "\"timeout\":-1");
    let call = {
        let root = root.clone();
        tokio::spawn(async move { root.ask(&args).await })
    };
    while runtime.status().await.open.is_empty() {
        tokio::task::yield_now().await;
    }
    runtime.shutdown().await;
    let outcome = call.await.expect("the call");
    assert_eq!(outcome.call_id, "root/1");
    assert!(outcome.result.text.contains("ABORTED"), "{}", outcome.result.text);
}

/// Roots asking at once from two worker threads, and calls each.
const ROOTS: u64 = 16;

/// Many roots on two worker threads, each asking round trips at once: the
/// broker is stepped by whichever caller finds it free, the others leave
/// their mail in its inbox. Every call is answered once, none stays open, and
/// no mail went through the broker actor's mailbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_agents_on_two_threads_step_the_broker_in_place_and_lose_nothing() {
    let runtime = Runtime::start(answering_after(Latency::Fixed(0.0)))
        .await
        .expect("a runtime");
    let mut tasks = Vec::new();
    for r in 0..ROOTS {
        let root = runtime
            .spawn_root(&format!("root{r}"), None)
            .await
            .expect("a root");
        tasks.push(tokio::spawn(async move {
            for n in 1..=CALLS {
                let outcome = root.ask(ARGS_5S).await;
                assert!(outcome.result.text.contains("answers"), "{}", outcome.result.text);
                assert_eq!(outcome.call_id, format!("root{r}/{n}"));
            }
        }));
    }
    for task in tasks {
        task.await.expect("a task");
    }
    assert_eq!(runtime.status().await.open.len(), 0, "every call settled");
    let counts = runtime.counts();
    let mailed: Vec<_> = counts
        .messages
        .keys()
        .filter(|k| k.starts_with("broker:"))
        .collect();
    assert!(
        mailed.is_empty(),
        "mail through the broker's mailbox: {counts:#?}"
    );
    assert_eq!(
        counts.in_place.get("broker:Request"),
        Some(&(ROOTS * CALLS)),
        "{counts:#?}"
    );
    runtime.shutdown().await;
}

/// A burst of pending calls from many roots at one instant: each gets its
/// pending result at the window and its late answer once, all through the
/// broker's inbox (the wheel's wake-ups too).
#[tokio::test(start_paused = true)]
async fn a_burst_of_pending_calls_is_taken_in_place_each_closed_once() {
    let runtime = Runtime::start(answering_after(Latency::Fixed(2.0)))
        .await
        .expect("a runtime");
    let mut roots = Vec::new();
    for r in 0..ROOTS * 4 {
        roots.push(
            runtime
                .spawn_root(&format!("root{r}"), None)
                .await
                .expect("a root"),
        );
    }
    let calls: Vec<_> = (roots.iter().cloned())
        .map(|root| tokio::spawn(async move { (root.ask(ARGS_1S).await, root) }))
        .collect();
    for call in calls {
        let (outcome, root) = call.await.expect("a call");
        assert!(outcome.result.text.contains("pending"), "{}", outcome.result.text);
        root.closed(&outcome.call_id).await;
        let messages = root.user_messages().await;
        assert_eq!(messages.len(), 1, "{messages:?}");
    }
    let counts = runtime.counts();
    assert!(counts.messages.is_empty(), "mail through a mailbox: {counts:#?}");
    assert!(counts.in_place.contains_key("broker:Wake"), "{counts:#?}");
    runtime.shutdown().await;
}

/// A user's answerer actor replies to the broker's address: with one in the
/// waterfall, every piece of the broker's mail goes through its actor's
/// mailbox (one order for all of it), none through the inbox.
#[tokio::test(start_paused = true)]
async fn with_a_users_answerer_actor_the_broker_takes_its_mailbox() {
    let mut script = Script::spawn("scripted").await;
    let runtime = Runtime::start(RuntimeConfig {
        tool: ToolConfig::timed(Timeout::Window(30.0)),
        answerers: vec![script.slot()],
        ..RuntimeConfig::default()
    })
    .await
    .expect("a runtime");
    let root = runtime.spawn_root("root", None).await.expect("a root");
    let call = {
        let root = root.clone();
        tokio::spawn(async move { root.ask(ARGS_5S).await })
    };
    let offer = script.offer().await;
    send(&offer, asksim::protocol::Reply::Accept);
    send(&offer, asksim::protocol::Reply::Submit(yes_batch().into()));
    let outcome = call.await.expect("the call");
    assert_eq!(outcome.result.text, YES_RESULT);
    let counts = runtime.counts();
    assert_eq!(counts.messages.get("broker:Request"), Some(&1), "{counts:#?}");
    let in_place: Vec<_> = counts
        .in_place
        .keys()
        .filter(|k| k.starts_with("broker:"))
        .collect();
    assert!(in_place.is_empty(), "mail taken in place: {counts:#?}");
    runtime.shutdown().await;
}
