//! SPEC §3.7, exactly once, over mixed runs: many roots and calls, slow, fast,
//! silent, declining, holding and crashing answerers, windows, `-1`, cancel_call,
//! turn cancellation and agent stops, under seeded latencies. Whatever the
//! interleaving, every call settles exactly once, closes late at most once, and no
//! answer is lost.

use crate::broker_support;

use std::collections::BTreeMap;
use std::time::Duration;

use asksim::AnswererSlot;
use asksim::event::EventKind;
use asksim::policy::{Accepts, AnswerPolicy, Latency, Policy};
use asksim::tool::{Timeout, ToolConfig};
use asksim::{Runtime, RuntimeConfig};
use broker_support::*;
use serde_json::json;

/// Seeds per run of the test.
const SEEDS: u64 = 12;
/// Roots per run.
const ROOTS: usize = 6;

fn waterfall() -> Vec<AnswererSlot> {
    let base = Policy::recommended_after(0.0);
    let slots = [
        (
            "silent",
            Policy {
                offer_latency: Latency::Never,
                ..base.clone()
            },
        ),
        (
            "picky",
            Policy {
                accepts: Accepts::Agents(vec!["r1*".into(), "r3*".into()]),
                latency: Latency::Uniform(1.0, 8.0),
                ..base.clone()
            },
        ),
        (
            "fragile",
            Policy {
                crash_after_accepts: Some(3),
                latency: Latency::Fixed(4.0),
                ..base.clone()
            },
        ),
        (
            "holder",
            Policy {
                hold_after_s: Some(1.0),
                latency: Latency::Exp(6.0),
                ..base.clone()
            },
        ),
        (
            "bad",
            Policy {
                answer: AnswerPolicy::Batch(json!([{"id":"nope"}])),
                latency: Latency::Fixed(0.5),
                ..base.clone()
            },
        ),
    ];
    slots
        .into_iter()
        .map(|(name, policy)| AnswererSlot::Policy {
            name: name.into(),
            policy,
        })
        .collect()
}

async fn mixed_run(seed: u64) -> Vec<asksim::event::Event> {
    let runtime = Runtime::start(RuntimeConfig {
        tool: ToolConfig::timed(Timeout::Window(3.0)),
        answerers: waterfall(),
        seed,
        ..RuntimeConfig::default()
    })
    .await
    .unwrap();
    let mut calls = Vec::new();
    let mut roots = Vec::new();
    for i in 0..ROOTS {
        let root = runtime.spawn_root(&format!("r{i}"), None).await.unwrap();
        for timeout in ["2", "-1", "7"] {
            calls.push(spawn_ask(&root, &timed_args(Some(timeout))));
        }
        calls.push(spawn_ask(&root, &timed_args(None)));
        roots.push(root);
    }
    tokio::time::sleep(Duration::from_secs_f64(2.5)).await;
    runtime.cancel_call("r0/1");
    runtime.cancel_call("r2/2");
    roots[1].cancel_turn().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    roots[4].stop();
    runtime.cancel_call("r5/3");
    for call in calls {
        let _ = outcome(call).await;
    }
    // Let every late answer and withdrawal that can still come, come.
    tokio::time::sleep(Duration::from_secs(10_000)).await;
    quiesce().await;
    let events = runtime.events().snapshot();
    runtime.shutdown().await;
    events
}

#[tokio::test(start_paused = true)]
async fn exactly_once_settlement() {
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    for seed in 0..SEEDS {
        let events = mixed_run(seed).await;
        check_contract(&events);
        let mut per_call: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for event in &events {
            match &event.kind {
                EventKind::Result { call_id, .. } => per_call.entry(call_id.as_str()).or_default().0 += 1,
                EventKind::LateAnswer { call_id, .. } | EventKind::Withdraw { call_id, .. } => {
                    per_call.entry(call_id.as_str()).or_default().1 += 1
                }
                _ => {}
            }
        }
        assert_eq!(per_call.len(), ROOTS * 4, "seed {seed}: every call has a result");
        for (call_id, (results, late)) in &per_call {
            assert_eq!(*results, 1, "seed {seed}: {call_id}");
            assert!(*late <= 1, "seed {seed}: {call_id}");
        }
        for event in &events {
            let name = match &event.kind {
                EventKind::Result { result, .. } if result.starts_with(r#"{"pending""#) => "pending",
                EventKind::Result {
                    result,
                    is_error: true,
                    ..
                } => {
                    if result.contains("ABORTED") {
                        "aborted"
                    } else {
                        "errored"
                    }
                }
                EventKind::Result { .. } => "answered",
                EventKind::LateAnswer { .. } => "late_answered",
                EventKind::Withdraw { .. } => "withdrawn",
                EventKind::Refused { .. } => "refused",
                _ => continue,
            };
            *outcomes.entry(name).or_default() += 1;
        }
    }
    // The mix really is mixed: every kind of closing happened somewhere.
    for name in [
        "pending",
        "aborted",
        "answered",
        "late_answered",
        "withdrawn",
        "refused",
    ] {
        assert!(
            outcomes.get(name).copied().unwrap_or(0) > 0,
            "no {name} in {outcomes:?}"
        );
    }
}
