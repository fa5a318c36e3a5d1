//! SPEC §2.5 `LIMIT_EXCEEDED` and the broker's named limits: a request over a
//! limit settles at once and nothing is queued.

use crate::broker_support;

use asksim::limits::BrokerLimits;
use asksim::protocol::Reply;
use asksim::protocol::SpawnError;
use asksim::tool::{Timeout, ToolConfig};
use asksim::{Runtime, RuntimeConfig};
use broker_support::*;

async fn limited(limits: BrokerLimits, web: &Script) -> Runtime {
    let config = RuntimeConfig {
        tool: ToolConfig::timed(Timeout::Window(30.0)),
        answerers: vec![web.slot()],
        limits,
        ..RuntimeConfig::default()
    };
    Runtime::start(config).await.unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_call_over_the_open_calls_limit_settles_as_limit_exceeded_and_is_not_queued() {
    let mut web = Script::spawn("web").await;
    let limits = BrokerLimits {
        open_calls_max: 1,
        ..BrokerLimits::default()
    };
    let runtime = limited(limits, &web).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let first = spawn_ask(&root, &timed_args(Some("-1")));
    let offer = web.offer().await;
    let second = ask(&root, &timed_args(Some("5"))).await;
    assert_eq!(second.call_id, "root/2");
    assert_eq!(
        second.result.text,
        error_result("LIMIT_EXCEEDED", "too many open questions; nothing was queued")
    );
    assert_eq!(kinds(&events_of(&runtime, "root/2")), vec!["Request", "Result"]);
    send(&offer, Reply::Accept);
    send(&offer, Reply::Submit(yes_batch().into()));
    assert_eq!(outcome(first).await.result.text, YES_RESULT);
    // The slot is free again.
    let third = spawn_ask(&root, &timed_args(Some("5")));
    let offer = web.offer().await;
    send(&offer, Reply::Accept);
    send(&offer, Reply::Submit(yes_batch().into()));
    assert_eq!(outcome(third).await.result.text, YES_RESULT);
    check_contract(&runtime.events().snapshot());
}

#[tokio::test(start_paused = true)]
async fn a_spawn_over_the_agents_per_tree_limit_is_refused() {
    let web = Script::spawn("web").await;
    let limits = BrokerLimits {
        agents_per_tree_max: 2,
        ..BrokerLimits::default()
    };
    let runtime = limited(limits, &web).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let child = root.spawn_child("child").await.unwrap();
    let refused = child.spawn_child("grandchild").await.err();
    assert_eq!(refused, Some(SpawnError::LimitExceeded(2)));
    assert_eq!(
        refused.unwrap().to_string(),
        "LIMIT_EXCEEDED: more than 2 agents in one tree"
    );
    // Another tree has its own count.
    assert!(runtime.spawn_root("other", None).await.is_ok());
}
