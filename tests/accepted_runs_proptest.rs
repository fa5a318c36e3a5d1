//! Whatever `validate` accepts, `run` runs (issue #9, "Bounded inputs"): scenarios
//! built with extreme but accepted values (times at their bounds, counts at their
//! limits, zero and huge jitter, every strategy) run on the virtual clock without a
//! panic and without a hang, and their report is built.

use asksim::scenario::{self, Clock};
use asksim::sim::summarise;
use asksim::sim::{RunOptions, run_options};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Times that stress the engine: zero, tiny, ordinary, and the bound itself.
fn time(bound: f64) -> impl Strategy<Value = f64> + Clone {
    prop_oneof![Just(0.0), Just(1e-9), Just(0.5), Just(3.0), Just(bound)]
}

fn latency(bound: f64) -> impl Strategy<Value = Value> {
    prop_oneof![
        time(bound).prop_map(|s| json!(s)),
        (time(bound), time(bound)).prop_map(|(a, b)| json!({"uniform": [a.min(b), a.max(b)]})),
        prop_oneof![Just(1e-9), Just(2.0), Just(bound)].prop_map(|m| json!({"exp": m})),
        Just(json!("never")),
    ]
}

fn question() -> Value {
    json!({"id": "q", "question": "Go?", "header": "Go", "options": [{"label": "Yes"}, {"label": "No"}]})
}

fn answerer(index: usize, bound: f64) -> impl Strategy<Value = Value> {
    (
        prop_oneof![Just("all"), Just("keyed"), Just("legacy"), Just("none")],
        latency(bound),
        latency(bound),
        prop_oneof![
            Just(json!("recommended")),
            Just(json!({"option": 7})),
            Just(json!({"batch": [{"id": "zz"}]})),
            Just(json!("skip"))
        ],
        proptest::option::of(time(bound)),
        proptest::option::of(prop_oneof![Just(0.0), Just(2.0), Just(1e9)]),
        proptest::option::of(Just(1u64)),
    )
        .prop_map(
            move |(accepts, offer_latency, latency, answer, hold, crash_at, crash_after)| {
                let mut a = json!({"name": format!("a{index}"), "accepts": accepts,
                               "offer_latency": offer_latency, "latency": latency, "answer": answer});
                if let Some(after) = hold {
                    a["hold"] = json!({"after": after});
                }
                let mut faults = serde_json::Map::new();
                if let Some(at) = crash_at {
                    faults.insert("crash_at".into(), json!(at));
                }
                if let Some(n) = crash_after {
                    faults.insert("crash_after_accepts".into(), json!(n));
                }
                if !faults.is_empty() {
                    a["faults"] = Value::Object(faults);
                }
                a
            },
        )
}

fn step(agent: usize, bound: f64) -> impl Strategy<Value = Value> {
    prop_oneof![
        prop_oneof![
            Just(json!(-1)),
            Just(json!(1e-9)),
            Just(json!(86400)),
            Just(Value::Null)
        ]
        .prop_map(|t| {
            let mut ask = json!({"questions": [question()]});
            if !t.is_null() {
                ask["timeout"] = t;
            }
            json!({"ask": ask})
        }),
        Just(json!({"ask_raw": {"questions": "nope"}})),
        time(bound).prop_map(|s| json!({"work": s})),
        Just(json!({"await_answer": format!("r{agent}/1")})),
        Just(
            json!({"spawn": {"name": format!("c{agent}"), "script": [{"ask": {"questions": [question()]}}]}})
        ),
    ]
}

fn event(bound: f64, agents: usize) -> impl Strategy<Value = Value> {
    let at = prop_oneof![Just(0.0), Just(1.0), Just(bound), Just(1e9)];
    (at, 0..agents, 0..4usize).prop_map(move |(at, agent, kind)| match kind {
        0 => json!({"at": at, "cancel_turn": format!("r{agent}")}),
        1 => json!({"at": at, "cancel_call": format!("r{agent}/1")}),
        2 => json!({"at": at, "stop_agent": format!("r{agent}")}),
        _ => json!({"at": at, "process_loss": {"restart_after": at.min(bound)}}),
    })
}

fn scenario() -> impl Strategy<Value = Value> {
    let bound = prop_oneof![Just(1e-3), Just(10.0), Just(86_400.0), Just(1e9)];
    bound.prop_flat_map(|bound| {
        (
            prop_oneof![
                Just(json!({"mode": "timed", "timeout": -1})),
                Just(json!({"mode": "timed"})),
                Just(json!({}))
            ],
            proptest::collection::vec(0usize..1, 0..3).prop_flat_map(move |n| {
                n.into_iter()
                    .enumerate()
                    .map(|(i, _)| answerer(i, bound))
                    .collect::<Vec<_>>()
            }),
            (1usize..3).prop_flat_map(move |agents| {
                let scripts: Vec<_> = (0..agents)
                    .map(|i| proptest::collection::vec(step(i, bound), 0..4))
                    .collect();
                (scripts, proptest::collection::vec(event(bound, agents), 0..3))
            }),
            prop_oneof![Just(0.0), Just(bound)],
            prop_oneof![Just(1u64), Just(50), Just(10_000_000)],
            prop_oneof![Just("random"), Just("fifo"), Just("pct:64")],
            prop_oneof![
                Just(json!({})),
                Just(json!({"offer_timeout": bound, "open_calls_max": 1, "agents_per_tree_max": 1}))
            ],
        )
            .prop_map(
                move |(tool, answerers, (scripts, events), jitter, events_max, explore, broker)| {
                    let agents: Vec<Value> = scripts
                        .into_iter()
                        .enumerate()
                        .map(|(i, mut script)| {
                            // One call at least, so `cancel_call` of r{i}/1 names a call
                            // the agent can make (one it never could is a bad file).
                            script.push(json!({"ask_raw": {"questions": "nope"}}));
                            json!({"name": format!("r{i}"), "script": script})
                        })
                        .collect();
                    json!({
                        "name": "extreme", "tool": tool, "broker": broker, "answerers": answerers,
                        "agents": agents, "events": events, "jitter": {"max": jitter},
                        "limits": {"virtual_s_max": bound, "events_max": events_max}, "explore": explore
                    })
                },
            )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_accepted_scenario_runs_without_a_panic(file in scenario(), seed in 0u64..4) {
        let text = file.to_string();
        let Ok(scenario) = scenario::parse("extreme.json", &text) else {
            // Refused files are the bad-input tests' business; most are accepted.
            return Ok(());
        };
        let options = RunOptions::new(&scenario, seed, Clock::Virtual);
        let output = run_options(&scenario, options).expect("no log to write");
        prop_assert!(output.crashed.is_none(), "{}: {:?}", text, output.crashed);
        let summary = summarise(&scenario, "extreme.json", &output);
        prop_assert!(summary.crashed.is_none(), "{}: {:?}", text, summary.crashed);
    }
}

#[test]
fn the_generator_mostly_builds_accepted_scenarios() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let accepted = (0..200)
        .filter(|_| {
            let file = scenario().new_tree(&mut runner).unwrap().current();
            scenario::parse("x.json", &file.to_string()).is_ok()
        })
        .count();
    assert!(
        accepted > 150,
        "only {accepted} of 200 generated scenarios are valid"
    );
}
