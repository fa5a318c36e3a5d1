//! What the outside route costs (SPEC §10, issue #24: at most 10x the in-process
//! run on `load-small`): the same run with asksim's broker in process, through
//! the wire's lines without a pipe (`Endpoint::Loopback`: serialising and
//! parsing alone), through a pipe to `asksim actor broker` (a process), and to
//! the Python broker of `examples/external/`. Throughput is in lines exchanged
//! with the broker (one line out, one back), counted once from the trace.

use std::hint::black_box;
use std::path::Path;
use std::process::Command;

use asksim::scenario::{self, Clock, Strategy};
use asksim::sim::{self, RunOptions};
use asksim::wire::Endpoint;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn scenario_file() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/load-small.json")
        .display()
        .to_string()
}

fn actor_broker() -> Vec<String> {
    vec![
        env!("CARGO_BIN_EXE_asksim").to_owned(),
        "actor".into(),
        "broker".into(),
    ]
}

/// Lines asksim writes to the broker in one run (each gets one back).
fn lines_per_run() -> u64 {
    let broker = Endpoint::Process(actor_broker()).shell_text();
    let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(["run", &scenario_file(), "--broker-cmd", &broker])
        .env("RUST_LOG", "asksim::wire=trace")
        .output()
        .expect("asksim runs");
    let lines = String::from_utf8_lossy(&out.stderr).matches("broker > ").count() as u64;
    assert!(lines > 0, "the trace shows the lines");
    lines
}

fn outside_route(c: &mut Criterion) {
    let scenario = scenario::load(Path::new(&scenario_file())).expect("load-small loads");
    let mut group = c.benchmark_group("outside_load_small");
    group.throughput(Throughput::Elements(lines_per_run()));
    group.sample_size(10);
    let python = vec!["python3".to_owned(), "examples/external/broker.py".to_owned()];
    let routes = [
        ("in_process", None),
        ("wire_loopback", Some(Endpoint::Loopback)),
        (
            "pipe_asksim_actor_broker",
            Some(Endpoint::Process(actor_broker())),
        ),
        ("pipe_python_broker", Some(Endpoint::Process(python))),
    ];
    for (name, broker) in routes {
        group.bench_with_input(BenchmarkId::from_parameter(name), &broker, |b, broker| {
            b.iter(|| {
                let options = RunOptions {
                    strategy: Strategy::Random,
                    keep_events: false,
                    broker: broker.clone(),
                    ..RunOptions::new(&scenario, scenario.seed, Clock::Virtual)
                };
                let output = sim::run_options(&scenario, options).expect("no log");
                assert!(output.process_failed.is_none());
                black_box(output.recording.trace_hash)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, outside_route);
criterion_main!(benches);
