//! SPEC §8 benches of the actor runtime, each beside the plain-tokio baseline of
//! `baseline/` doing the same work in the same run. Runtimes are built outside
//! the measured closures.

/// The `asksim` binary's allocator for both sides of every bench: with glibc's
/// malloc, malloc and free were a quarter of the actors' thread (BENCHMARKS.md,
/// issue #23), a cost of the allocator, not of the runtime, that a host picks.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod baseline;
mod floor;

use std::hint::black_box;
use std::time::{Duration, Instant};

use asksim::AnswererSlot;
use asksim::policy::{Accepts, AnswerPolicy, Latency, Policy};
use asksim::tool::{Timeout, ToolConfig};
use asksim::{LogConfig, Runtime, RuntimeConfig, SyncPolicy};
use baseline::{Answerer, Baseline};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const ARGS_5S: &str = r#"{"questions":[{"id":"go","question":"Proceed with the cleanup?","header":"Confirm","options":[{"label":"Yes (Recommended)"},{"label":"No"}]}],"timeout":5}"#;
const ARGS_1S: &str = r#"{"questions":[{"id":"go","question":"Proceed with the cleanup?","header":"Confirm","options":[{"label":"Yes (Recommended)"},{"label":"No"}]}],"timeout":1}"#;

fn tool() -> ToolConfig {
    ToolConfig::timed(Timeout::Window(30.0))
}

fn policy(accepts: Accepts, latency: Latency) -> Policy {
    Policy {
        accepts,
        offer_latency: Latency::Fixed(0.0),
        latency,
        answer: AnswerPolicy::Recommended,
        hold_after_s: None,
        crash_at_s: None,
        crash_after_accepts: None,
    }
}

/// `declining` answerers that decline, then one that answers at once.
fn waterfall(declining: usize, latency: Latency) -> Vec<AnswererSlot> {
    let mut slots: Vec<AnswererSlot> = (0..declining)
        .map(|i| AnswererSlot::Policy {
            name: format!("no-{i}"),
            policy: policy(Accepts::None, Latency::Never),
        })
        .collect();
    slots.push(AnswererSlot::Policy {
        name: "yes".into(),
        policy: policy(Accepts::All, latency),
    });
    slots
}

fn baseline_waterfall(declining: usize, latency: Option<Duration>) -> Vec<Answerer> {
    let mut answerers = vec![
        Answerer {
            accepts: false,
            latency: None
        };
        declining
    ];
    answerers.push(Answerer {
        accepts: true,
        latency,
    });
    answerers
}

/// What an iteration's time is: the wall clock, or the CPU time of every
/// thread of the process (issue #23: on a shared machine the wall clock
/// swings with everyone else's work, the CPU a call takes does not).
#[derive(Clone, Copy)]
enum Clock {
    Wall,
    Cpu,
}

impl Clock {
    /// A reading to measure from.
    fn start(self) -> (Instant, Duration) {
        (Instant::now(), self.cpu())
    }

    /// What passed since `start`, on this clock.
    fn since(self, (wall, cpu): (Instant, Duration)) -> Duration {
        match self {
            Clock::Wall => wall.elapsed(),
            Clock::Cpu => self.cpu().saturating_sub(cpu),
        }
    }

    /// The CPU time every thread of the process has run so far
    /// (`CLOCK_PROCESS_CPUTIME_ID`, which counts the running thread up to
    /// now; `/proc`'s per-thread figures lag by up to a scheduler tick, and
    /// std has no process CPU clock). Zero on the wall clock, or if the clock
    /// cannot be read.
    fn cpu(self) -> Duration {
        if let Clock::Wall = self {
            return Duration::ZERO;
        }
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `clock_gettime` writes one `timespec` through the pointer,
        // which points to a live, writable local of that type; on a clock the
        // system does not have it writes nothing and returns -1, read below.
        let read = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
        if read != 0 {
            return Duration::ZERO;
        }
        Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
    }
}

fn current_thread(paused: bool) -> tokio::runtime::Runtime {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_all();
    if paused {
        builder.start_paused(true);
    }
    builder.build().expect("a tokio runtime")
}

fn start_asksim(rt: &tokio::runtime::Runtime, answerers: Vec<AnswererSlot>) -> Runtime {
    rt.block_on(Runtime::start(RuntimeConfig {
        tool: tool(),
        answerers,
        ..RuntimeConfig::default()
    }))
    .expect("a runtime")
}

fn round_trip(c: &mut Criterion) {
    let mut group = c.benchmark_group("round_trip");
    let rt = current_thread(false);
    let runtime = start_asksim(&rt, waterfall(0, Latency::Fixed(0.0)));
    let root = rt.block_on(runtime.spawn_root("root", None)).expect("a root");
    group.bench_function("asksim", |b| {
        b.iter(|| rt.block_on(async { black_box(root.ask(ARGS_5S).await) }))
    });
    let base = rt.block_on(async { Baseline::start(tool(), &baseline_waterfall(0, Some(Duration::ZERO))) });
    group.bench_function("baseline", |b| {
        b.iter(|| rt.block_on(async { black_box(base.ask(ARGS_5S).await.0) }))
    });
    group.finish();
}

fn waterfall_depth(c: &mut Criterion) {
    let mut group = c.benchmark_group("waterfall_depth");
    for depth in [1usize, 8, 64] {
        let rt = current_thread(false);
        let runtime = start_asksim(&rt, waterfall(depth, Latency::Fixed(0.0)));
        let root = rt.block_on(runtime.spawn_root("root", None)).expect("a root");
        group.bench_with_input(BenchmarkId::new("asksim", depth), &depth, |b, _| {
            b.iter(|| rt.block_on(async { black_box(root.ask(ARGS_5S).await) }))
        });
        let base =
            rt.block_on(async { Baseline::start(tool(), &baseline_waterfall(depth, Some(Duration::ZERO))) });
        group.bench_with_input(BenchmarkId::new("baseline", depth), &depth, |b, _| {
            b.iter(|| rt.block_on(async { black_box(base.ask(ARGS_5S).await.0) }))
        });
    }
    group.finish();
}

/// Messages per burst of the floor's one-way benches.
const FLOOR_BURST: u64 = 1_000;

/// The floor (issue #23): a bare ractor request/reply and one-way send beside
/// the same on plain tokio, on the runtime flavour of `round_trip`.
fn floor(c: &mut Criterion) {
    let mut group = c.benchmark_group("floor");
    let rt = current_thread(false);
    let actor = rt.block_on(floor::start_actor());
    let task = rt.block_on(async { floor::FloorTask::start() });
    group.bench_function("ractor_call", |b| {
        b.iter(|| rt.block_on(async { black_box(floor::actor_call(&actor).await) }))
    });
    group.bench_function("tokio_call", |b| {
        b.iter(|| rt.block_on(async { black_box(task.call().await) }))
    });
    group.throughput(Throughput::Elements(FLOOR_BURST));
    group.bench_function("ractor_cast", |b| {
        b.iter(|| rt.block_on(async { black_box(floor::actor_casts(&actor, FLOOR_BURST).await) }))
    });
    group.bench_function("tokio_cast", |b| {
        b.iter(|| rt.block_on(async { black_box(task.casts(FLOOR_BURST).await) }))
    });
    group.finish();
    actor.stop(None);
}

/// Calls per iteration of the throughput bench.
const PENDING_CALLS: u64 = 2_000;

/// How the throughput bench's runtime keeps its log.
#[derive(Clone, Copy)]
enum Keeping {
    /// Every event in memory.
    Events,
    /// No event kept ([`Runtime::start_without_events`]).
    Nothing,
    /// A durable log file under this policy (and every event in memory).
    File(SyncPolicy),
}

/// `iters` rounds of `calls` pending calls on a fresh runtime each, keeping its
/// log as `keeping` says. Building the runtime (and creating its log file) is
/// not timed; the last late answer's line being durable is.
fn pending_asksim(iters: u64, calls: u64, keeping: Keeping, clock: Clock) -> Duration {
    // A scratch log file for the durable bench, removed before each use.
    let scratch = tempfile::tempdir().expect("a temp dir");
    let path = scratch.path().join("bench-durable.jsonl");
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let rt = current_thread(true);
        let config = RuntimeConfig {
            tool: tool(),
            answerers: waterfall(0, Latency::Fixed(2.0)),
            ..RuntimeConfig::default()
        };
        let runtime = rt
            .block_on(async {
                match keeping {
                    Keeping::Events => Runtime::start(config).await,
                    Keeping::Nothing => Runtime::start_without_events(config).await,
                    Keeping::File(sync) => {
                        let _ = std::fs::remove_file(&path);
                        let log = Some(LogConfig::new(&path).sync(sync));
                        Runtime::start(RuntimeConfig { log, ..config }).await
                    }
                }
            })
            .expect("a runtime");
        let root = rt.block_on(runtime.spawn_root("root", None)).expect("a root");
        let start = clock.start();
        rt.block_on(async {
            spawn_all(calls, || {
                let root = root.clone();
                async move {
                    let outcome = root.ask(ARGS_1S).await;
                    root.closed(&outcome.call_id).await;
                }
            })
            .await;
        });
        total += clock.since(start);
        rt.block_on(runtime.shutdown());
    }
    total
}

/// Spawns `n` tasks, each the future `call` makes, and awaits them all: every
/// throughput bench's burst of concurrent calls.
async fn spawn_all<F>(n: u64, call: impl Fn() -> F)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let calls: Vec<_> = (0..n).map(|_| tokio::spawn(call())).collect();
    for call in calls {
        call.await.expect("a call");
    }
}

/// N timed calls with a 1 s window against an answerer that takes 2 s: every call
/// returns `pending` and then gets its late answer. Paused time, so the windows
/// cost nothing but the work; a fresh runtime per iteration, built untimed.
fn pending_throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("pending_throughput");
    group.throughput(Throughput::Elements(PENDING_CALLS));
    group.sample_size(10);
    group.bench_function("asksim", |b| {
        b.iter_custom(|iters| pending_asksim(iters, PENDING_CALLS, Keeping::Events, Clock::Wall))
    });
    group.bench_function("asksim_without_events", |b| {
        b.iter_custom(|iters| pending_asksim(iters, PENDING_CALLS, Keeping::Nothing, Clock::Wall))
    });
    // SPEC §8 "durable log": a log file under the default policy (group commit;
    // ASKSIM_BENCH_SYNC=group:MS measures another window).
    let sync: SyncPolicy = std::env::var("ASKSIM_BENCH_SYNC")
        .map(|s| {
            s.parse()
                .expect("ASKSIM_BENCH_SYNC: group, group:MS, every or none")
        })
        .unwrap_or_default();
    group.bench_function("asksim_durable_log", |b| {
        b.iter_custom(|iters| pending_asksim(iters, PENDING_CALLS, Keeping::File(sync), Clock::Wall))
    });
    group.bench_function("asksim_durable_log_none", |b| {
        b.iter_custom(|iters| {
            pending_asksim(iters, PENDING_CALLS, Keeping::File(SyncPolicy::None), Clock::Wall)
        })
    });
    group.bench_function("baseline", |b| {
        b.iter_custom(|iters| pending_baseline(iters, Clock::Wall))
    });
    group.finish();
}

/// `iters` rounds of [`PENDING_CALLS`] pending calls through the baseline, on a
/// fresh broker each (built untimed).
fn pending_baseline(iters: u64, clock: Clock) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let rt = current_thread(true);
        let base = rt.block_on(async {
            Baseline::start(tool(), &baseline_waterfall(0, Some(Duration::from_secs(2))))
        });
        let start = clock.start();
        rt.block_on(async {
            spawn_all(PENDING_CALLS, || {
                let base = base.clone();
                async move {
                    let (_, mut late) = base.ask(ARGS_1S).await;
                    late.recv().await;
                }
            })
            .await;
        });
        total += clock.since(start);
    }
    total
}

/// `pending_throughput` and `round_trip` in CPU time, every thread of the
/// process counted (the journal's too): their ratios to the baseline's are
/// the issue's, read off a clock that the machine's other work does not move.
/// Criterion reports these "times" as CPU time per iteration.
fn cpu(c: &mut Criterion) {
    let mut group = c.benchmark_group("cpu_pending");
    group.throughput(Throughput::Elements(PENDING_CALLS));
    group.sample_size(10);
    group.bench_function("asksim", |b| {
        b.iter_custom(|iters| pending_asksim(iters, PENDING_CALLS, Keeping::Events, Clock::Cpu))
    });
    group.bench_function("asksim_durable_log", |b| {
        b.iter_custom(|iters| {
            let sync = SyncPolicy::default();
            pending_asksim(iters, PENDING_CALLS, Keeping::File(sync), Clock::Cpu)
        })
    });
    group.bench_function("baseline", |b| {
        b.iter_custom(|iters| pending_baseline(iters, Clock::Cpu))
    });
    group.finish();
    let mut group = c.benchmark_group("cpu_round_trip");
    let rt = current_thread(false);
    let runtime = start_asksim(&rt, waterfall(0, Latency::Fixed(0.0)));
    let root = rt.block_on(runtime.spawn_root("root", None)).expect("a root");
    group.bench_function("asksim", |b| {
        b.iter_custom(|iters| {
            let start = Clock::Cpu.start();
            for _ in 0..iters {
                rt.block_on(async { black_box(root.ask(ARGS_5S).await) });
            }
            Clock::Cpu.since(start)
        })
    });
    let base = rt.block_on(async { Baseline::start(tool(), &baseline_waterfall(0, Some(Duration::ZERO))) });
    group.bench_function("baseline", |b| {
        b.iter_custom(|iters| {
            let start = Clock::Cpu.start();
            for _ in 0..iters {
                rt.block_on(async { black_box(base.ask(ARGS_5S).await.0) });
            }
            Clock::Cpu.since(start)
        })
    });
    group.finish();
}

/// Calls per iteration of the `every` policy's throughput bench: a sync per
/// event makes an iteration of [`PENDING_CALLS`] take seconds.
const EVERY_CALLS: u64 = 200;

/// `pending_throughput` under the `every` policy, on fewer calls per iteration
/// (its figure is per call all the same).
fn pending_throughput_every(c: &mut Criterion) {
    let mut group = c.benchmark_group("pending_throughput");
    group.throughput(Throughput::Elements(EVERY_CALLS));
    group.sample_size(10);
    group.bench_function("asksim_durable_log_every", |b| {
        b.iter_custom(|iters| {
            pending_asksim(iters, EVERY_CALLS, Keeping::File(SyncPolicy::Every), Clock::Wall)
        })
    });
    group.finish();
}

/// The `load-10k` scenario on the virtual clock, beside a baseline that runs the
/// same 10,000 calls (same window, answer latencies drawn the same way) through
/// the baseline broker on paused time.
fn virtual_speed(c: &mut Criterion) {
    let mut group = c.benchmark_group("virtual_speed");
    group.sample_size(10);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/load-10k.json");
    let scenario = asksim::scenario::load(&path).expect("load-10k parses");
    group.bench_function("asksim_load_10k", |b| {
        b.iter(|| black_box(asksim::sim::run(&scenario, scenario.seed, scenario.clock).expect("a run")))
    });
    group.bench_function("baseline_10k", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let rt = current_thread(true);
                let start = Instant::now();
                rt.block_on(async {
                    let base = Baseline::start(
                        ToolConfig::timed(Timeout::Window(15.0)),
                        &baseline_waterfall(0, Some(Duration::from_secs(45))),
                    );
                    spawn_all(10_000, || {
                        let base = base.clone();
                        async move {
                            let (result, mut late) = base.ask(ARGS_1S).await;
                            if result.starts_with("{\"pending\"") {
                                late.recv().await;
                            }
                        }
                    })
                    .await;
                });
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    targets = floor, round_trip, waterfall_depth, pending_throughput, pending_throughput_every, virtual_speed, cpu
}
criterion_main!(benches);
