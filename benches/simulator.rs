//! The simulator's own costs: what the controlled scheduler costs per strategy
//! (a sweep under `random` and `pct:3` against `fifo`, today's order), and how
//! many seeds per second a sweep of the quickstart runs on one core (SPEC §8:
//! at least 20,000), and how many schedules per second `explore --all` runs.
//!
//! The process is set up as the `asksim` binary's is (mimalloc, its purge delay,
//! no transparent huge pages: `asksim::cli::process`), so the figures are the
//! ones a user of `asksim run` gets, not the system allocator's.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use asksim::scenario::{self, Clock, Strategy};
use asksim::sim::hunt::seeds::Shard;
use asksim::sim::hunt::sweep::{SweepOptions, sweep};
use asksim::sim::{self, RunOptions};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};

mod families;

/// The binary's allocator (`src/main.rs`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use families::Family;

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
        broker: None,
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

/// The sizes the scaling group runs at: 10^3, 10^4, 10^5 (`ASKSIM_SCALING_MAX`
/// lowers or raises the largest, e.g. 1000000 where it fits in memory).
fn scaling_sizes() -> Vec<usize> {
    let max: usize = std::env::var("ASKSIM_SCALING_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    [1_000, 10_000, 100_000, 1_000_000]
        .into_iter()
        .filter(|n| *n <= max)
        .collect()
}

/// The families the scaling group runs, and whether it times `replay_events`:
/// all, or those `ASKSIM_SCALING_FAMILIES` names (comma-separated, e.g.
/// `children,cancel_tree` or `replay_events`). A filter on the command line only
/// picks what criterion times; this also skips the other families' set-up runs,
/// so a family measured alone runs in a heap no other family's 10^5 run has
/// used, as a user's `asksim run` does.
fn scaling_families() -> (Vec<Family>, bool) {
    let Ok(names) = std::env::var("ASKSIM_SCALING_FAMILIES") else {
        return (Family::ALL.to_vec(), true);
    };
    let mut replay = false;
    let mut families = Vec::new();
    for name in names.split(',').map(str::trim) {
        match Family::named(name) {
            Some(family) => families.push(family),
            None if name == "replay_events" => replay = true,
            None => panic!("ASKSIM_SCALING_FAMILIES: no family {name:?}"),
        }
    }
    (families, replay)
}

/// Issue #19: the cost of one unit of N (a root's calls, or an agent of a tree)
/// for every scaling family at each size. Linear is a flat line: the same time
/// per element at 10^5 as at 10^3 (target within 1.5x). A run keeps no events
/// (as `asksim run` does without `--timeline` or `--chrome-trace`); `replay`
/// folds and re-checks the log of the tie family at N.
fn scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("scaling");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.warm_up_time(Duration::from_millis(100));
    let (families, replay) = scaling_families();
    for n in scaling_sizes() {
        group.throughput(Throughput::Elements(n as u64));
        for &family in &families {
            let text = family.scenario(n);
            let scenario = scenario::parse("family.json", &text).expect("a family scenario parses");
            let run = |scenario: &scenario::Scenario| {
                let mut options = RunOptions::new(scenario, scenario.seed, Clock::Virtual);
                options.keep_events = false;
                sim::run_options(scenario, options).expect("a run")
            };
            // A run cut at a limit does less than the family's work: it must end.
            let limit = run(&scenario).limit;
            assert!(limit.is_none(), "{} at {n} hit {limit:?}", family.name());
            group.bench_with_input(BenchmarkId::new(family.name(), n), &scenario, |b, scenario| {
                b.iter(|| black_box(run(scenario)))
            });
        }
        if !replay {
            continue;
        }
        let scenario = scenario::parse("tie.json", &Family::Tie.scenario(n)).expect("parses");
        let output = sim::run(&scenario, scenario.seed, Clock::Virtual).expect("a run");
        let header = asksim::log::LogHeader::new(&scenario.name, scenario.seed);
        let mut log = Vec::new();
        asksim::log::write_lines(&mut log, &header, output.events()).expect("in memory");
        let text = String::from_utf8(log).expect("UTF-8");
        group.throughput(Throughput::Elements(output.events().len() as u64));
        group.bench_with_input(BenchmarkId::new("replay_events", n), &text, |b, text| {
            b.iter(|| {
                let (header, events) = asksim::log::parse(text).expect("a log");
                let projection = asksim::projection::Projection::fold(&events);
                black_box(asksim::sim::hunt::replay::replay(&header, &events, &projection))
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    targets = sweep_by_strategy, sweep_quickstart, explore_all, scaling
}
/// `criterion_main!`, with the process set up as the binary's first.
fn main() {
    asksim::cli::process::tune();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
