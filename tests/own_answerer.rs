//! A program's own answerer (issue #22): the web client of
//! `examples/own_answerer/client.rs`, a sans-IO [`Answerer`], runs unchanged under
//! `explore --all`, sweeps and `shrink` on the virtual clock, and as an actor of
//! the library's runtime. Before, a user's answerer could only be an actor on the
//! real clock, where no tie order can be chosen.

#[path = "../examples/own_answerer/client.rs"]
mod client;

use std::collections::BTreeSet;
use std::time::Duration;

use asksim::answerer::{Answerer, Answerers};
use asksim::scenario::{self, Clock, Scenario};
use asksim::sim::hunt::explore::{self, ExploreOptions, Replay, parse_schedule};
use asksim::sim::hunt::shrink::{self, ShrinkOptions};
use asksim::sim::hunt::sweep::{self, SweepOptions};
use asksim::sim::{RunOptions, Summary, run_options, run_with, summarise};
use asksim::tool::{Timeout, ToolConfig};
use asksim::{AnswererSlot, Runtime, RuntimeConfig};
use client::WebClient;

/// The race of the example (its `about` says it): the client's click and the
/// root's cancelled turn at one instant.
const SCENARIO: &str = include_str!("../examples/own_answerer/web-client-vs-cancel.json");

const ANSWERED: &str = r#"{"answers":[{"id":"deploy","selected":["Yes (Recommended)"]}]}"#;

fn client() -> Answerers {
    Answerers::new().with("web", |_| {
        Box::new(WebClient::new(Duration::from_secs(3))) as Box<dyn Answerer>
    })
}

fn parsed() -> Scenario {
    scenario::parse("web.json", SCENARIO).expect("a valid scenario")
}

fn run(seed: u64, answerers: Answerers) -> (Summary, String) {
    let scenario = parsed();
    let options = RunOptions {
        answerers,
        ..RunOptions::new(&scenario, seed, Clock::Virtual)
    };
    let output = run_options(&scenario, options).expect("no log");
    let first = output.projection().questions["root/1"]
        .settled
        .as_deref()
        .unwrap_or_default()
        .to_owned();
    (summarise(&scenario, "web.json", &output), first)
}

/// Every order of the tie: the client's batch first (answered, after a hold that
/// kept the 2 s window open past its end) or the cancel first (ABORTED, the
/// batch refused back). The failing order replays with the same answerer.
#[test]
fn explore_all_finds_both_orders_of_the_clients_race() {
    let scenario = parsed();
    let options = ExploreOptions {
        answerers: client(),
        ..ExploreOptions::new(0, 10_000)
    };
    let report = explore::explore(&scenario, "web.json", options, |_| {});
    assert!(report.complete, "{}", explore::render(&report));
    let outcomes: BTreeSet<String> = (report.outcomes.iter())
        .map(|o| format!("{} {}", o.outcome["(verdict)"], o.outcome["root/1"]))
        .collect();
    assert_eq!(
        outcomes,
        BTreeSet::from(["FAIL ABORTED".to_owned(), format!("PASS answers {ANSWERED}")]),
        "{}",
        explore::render(&report)
    );
    let failure = report.first_failure.expect("the cancel wins some order");
    let mut replay = Replay::new(parse_schedule(&failure.schedule).unwrap());
    let options = RunOptions {
        answerers: client(),
        ..RunOptions::new(&scenario, 0, Clock::Virtual)
    };
    let output = run_with(&scenario, options, &mut replay).unwrap();
    assert_eq!(replay.error(), None);
    assert!(!summarise(&scenario, "web.json", &output).passed());

    // Without the client, the stand-in row never accepts: another run entirely.
    let (stand_in, _) = run(0, Answerers::new());
    assert_eq!(stand_in.outcomes.errors.get("NO_ANSWERER"), Some(&1));
}

/// Under seeds, each run is deterministic (the same seed, the same trace), and
/// a sweep sees both winners.
#[test]
fn a_sweep_runs_the_client_under_every_seed() {
    let (a, first) = run(5, client());
    let (b, _) = run(5, client());
    assert_eq!(a.trace_hash, b.trace_hash, "the same seed gives the same log");
    assert!(first == ANSWERED || first.contains("ABORTED"), "{first}");
    let scenario = parsed();
    let options = SweepOptions {
        file: "web.json".into(),
        seeds: "0..40".parse().unwrap(),
        jobs: 2,
        clock: Clock::Virtual,
        strategy: asksim::scenario::Strategy::Random,
        invariants_only: false,
        shard: asksim::sim::hunt::seeds::Shard::WHOLE,
        broker: None,
        answerers: client(),
    };
    let report = sweep::sweep(&scenario, &options, |_| {});
    assert_eq!(report.runs, 40);
    assert!(
        report.passed > 0 && !report.failed.is_empty(),
        "both winners: {}",
        sweep::render(&report)
    );
    assert_eq!(
        report.totals.answered + report.totals.errors.get("ABORTED").copied().unwrap_or(0),
        40
    );
}

/// Shrinking with the client keeps it: the cancel-wins failure needs the root,
/// the client's row and the cancel. The shrunk file names the failing seed.
#[test]
fn shrink_keeps_the_clients_row_and_the_race() {
    let failing = (0..64)
        .find(|&seed| !run(seed, client()).0.passed())
        .expect("a failing seed");
    let options = ShrinkOptions {
        seed: Some(failing),
        answerers: client(),
        ..ShrinkOptions::default()
    };
    let report = shrink::shrink("web.json", SCENARIO, &options, &mut |_| {}).expect("it fails");
    assert!(report.minimal);
    let kept = &report.scenario;
    assert_eq!(kept["answerers"][0]["name"], "web");
    assert_eq!(kept["agents"][0]["name"], "root");
    assert_eq!(kept["events"][0]["cancel_turn"], "root");
    // A name that is no answerer of the scenario is refused, not ignored.
    let typo = ShrinkOptions {
        answerers: Answerers::new().with("wbe", |_| Box::new(WebClient::new(Duration::ZERO))),
        ..ShrinkOptions::default()
    };
    let error = shrink::shrink("web.json", SCENARIO, &typo, &mut |_| {}).unwrap_err();
    assert!(error.to_string().contains("no answerer \"wbe\""), "{error}");
}

/// The same client as an actor of the library's runtime: it holds the 2 s
/// window at 1 s and answers at 3 s, so the call gets its answers, not
/// `pending`.
#[tokio::test(start_paused = true)]
async fn the_runtime_runs_the_same_client_as_an_actor() {
    let runtime = Runtime::start(RuntimeConfig {
        tool: ToolConfig::timed(Timeout::Window(2.0)),
        answerers: vec![AnswererSlot::Machine {
            name: "web".into(),
            machine: Box::new(WebClient::new(Duration::from_secs(3))),
        }],
        ..RuntimeConfig::default()
    })
    .await
    .unwrap();
    let root = runtime.spawn_root("root", None).await.unwrap();
    let start = tokio::time::Instant::now();
    let outcome = root
        .ask(
            r#"{"questions":[{"id":"deploy","question":"Deploy the build?","header":"Deploy",
                "options":[{"label":"No"},{"label":"Yes (Recommended)"}]}]}"#,
        )
        .await;
    assert_eq!(outcome.result.text, ANSWERED);
    assert_eq!(start.elapsed(), Duration::from_secs(3), "virtual time: the click");
    let kinds: Vec<&str> = (runtime.events().snapshot().iter())
        .filter_map(|e| match &e.kind {
            asksim::event::EventKind::Hold { .. } => Some("hold"),
            asksim::event::EventKind::Answer { .. } => Some("answer"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["hold", "answer"]);
    runtime.shutdown().await;
}
