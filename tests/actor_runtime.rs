//! The actor runtime's account of what is in flight (SPEC §6: tokio gives no
//! signal for "nothing is due any more"): every message the runtime's actors send
//! counts until its receiver has handled it, and every timer until it fires or is
//! cancelled. A real-clock run ends only when both are zero.

use crate::broker_support;

use asksim::policy::Policy;
use asksim::{AnswererSlot, Runtime, RuntimeConfig};
use broker_support::*;

#[tokio::test(start_paused = true)]
async fn a_message_counts_in_flight_until_its_receiver_handled_it() {
    let runtime = Runtime::start(RuntimeConfig {
        tool: asksim::ToolConfig::timed(asksim::Timeout::Window(30.0)),
        answerers: vec![AnswererSlot::Policy {
            name: "web".into(),
            policy: Policy::recommended_after(5.0),
        }],
        ..RuntimeConfig::default()
    })
    .await
    .unwrap();
    assert_eq!(runtime.in_flight(), (0, 0));
    let root = runtime.spawn_root("root", None).await.unwrap();
    quiesce().await;
    assert_eq!(runtime.in_flight(), (0, 0), "registered: nothing in flight");
    let call = spawn_ask(&root, &timed_args(Some("30")));
    // The request, the offer and the accept travelled and were handled: every one
    // counted once and discounted once (a missed count goes negative, a missed
    // discount stays positive).
    quiesce().await;
    let (in_flight, due) = runtime.in_flight();
    assert_eq!(in_flight, 0, "all handled");
    assert_eq!(due, 2, "the window and the answerer's 5 s latency are due");
    let outcome = outcome(call).await;
    assert_eq!(outcome.result.text, YES_RESULT);
    quiesce().await;
    assert_eq!(
        runtime.in_flight(),
        (0, 0),
        "settled: nothing in flight, nothing due"
    );
    runtime.shutdown().await;
}
