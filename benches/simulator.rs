//! The simulator's own costs: what the controlled scheduler costs per strategy
//! (a sweep under `random` and `pct:3` against `fifo`, today's order), and how
//! many seeds per second a sweep of the quickstart runs on one core (SPEC §8:
//! at least 20,000).

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use asksim::scenario::{self, Clock, Strategy};
use asksim::sim::shard::Shard;
use asksim::sim::sweep::{SweepOptions, sweep};
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

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    targets = sweep_by_strategy, sweep_quickstart
}
criterion_main!(benches);
