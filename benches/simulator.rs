//! The simulator's own costs: what the controlled scheduler costs per strategy
//! (a sweep under `random` and `pct:3` against `fifo`, today's order), and how
//! many seeds per second a sweep of the quickstart runs on one core (SPEC §8:
//! at least 20,000), and how many schedules per second `explore --all` runs.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use asksim::scenario::{self, Clock, Strategy};
use asksim::sim::hunt::seeds::Shard;
use asksim::sim::hunt::sweep::{SweepOptions, sweep};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// Seeds per measured sweep.
const SEEDS: u64 = 500;

fn options(strategy: Strategy) -> SweepOptions {
    SweepOptions {
        file: "bench".into(),
        seeds: format!("0..{SEEDS}").parse().expect("a seed range"),
        jobs: 1,
        clock: Clock::Virtual,
        strategy,
        invariants_only: true,
        shard: Shard::WHOLE,
        answerers: Default::default(),
    }
}

fn load(name: &str) -> scenario::Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name);
    scenario::load(&path).expect("a repo scenario loads")
}

fn sweep_by_strategy(c: &mut Criterion) {
    let mut group = c.benchmark_group("sweep_strategy");
    group.throughput(Throughput::Elements(SEEDS));
    group.sample_size(10);
    let scenario = load("race-two-answerers-tie.json");
    for strategy in [Strategy::Fifo, Strategy::Random, Strategy::Pct { depth: 3 }] {
        let options = options(strategy);
        group.bench_with_input(BenchmarkId::from_parameter(strategy), &options, |b, options| {
            b.iter(|| black_box(sweep(&scenario, options, |_| {})))
        });
    }
    group.finish();
}

fn sweep_quickstart(c: &mut Criterion) {
    let mut group = c.benchmark_group("sweep_quickstart");
    group.throughput(Throughput::Elements(SEEDS));
    group.sample_size(10);
    let scenario = load("quickstart.json");
    let options = options(Strategy::Random);
    group.bench_function("one_core", |b| {
        b.iter(|| black_box(sweep(&scenario, &options, |_| {})))
    });
    group.finish();
}

/// `explore --all` over a small space (the request-vs-cancel tie, 44 schedules)
/// and a larger one (cancel-tree, 3,652 schedules and 2,908 pruned).
fn explore_all(c: &mut Criterion) {
    use asksim::sim::hunt::explore::{ExploreOptions, explore};
    let mut group = c.benchmark_group("explore_all");
    group.sample_size(10);
    for name in ["race-request-vs-cancel-tie.json", "cancel-tree.json"] {
        let scenario = load(name);
        let options = ExploreOptions::new(scenario.seed, 100_000);
        let schedules = explore(&scenario, name, options.clone(), |_| {}).schedules;
        group.throughput(Throughput::Elements(schedules));
        group.bench_function(name.trim_end_matches(".json"), |b| {
            b.iter(|| black_box(explore(&scenario, name, options.clone(), |_| {})))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    targets = sweep_by_strategy, sweep_quickstart, explore_all
}
criterion_main!(benches);
