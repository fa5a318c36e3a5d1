//! `asksim sweep` (many seeds, failing seeds with reproduce commands, totals) and
//! `--chrome-trace` (Trace Event JSON that Perfetto opens).

use std::path::{Path, PathBuf};
use std::process::Command;

use asksim::scenario;
use asksim::sim::sweep::{SeedRange, SweepOptions, sweep};
use serde_json::Value;

fn scenario_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name)
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("asksim-{}-{name}", std::process::id()))
}

#[test]
fn sweep_runs_every_seed_and_totals_the_outcomes() {
    let file = scenario_path("race-answer-vs-expiry.json");
    let scenario = scenario::load(&file).unwrap();
    let options = SweepOptions {
        file: file.display().to_string(),
        seeds: "0..40".parse().unwrap(),
        jobs: 2,
        clock: scenario.clock,
        strategy: asksim::scenario::Strategy::Random,
        invariants_only: true,
        shard: asksim::sim::shard::Shard::WHOLE,
    };
    let report = sweep(&scenario, &options, |_| {});
    assert_eq!(report.runs, 40);
    assert_eq!(report.passed, 40, "{:?}", report.failed);
    let t = &report.totals;
    // Every call of every run is counted once, whichever side won its race.
    let calls_per_run = asksim::sim::report::summarise(
        &scenario,
        "x",
        &asksim::sim::driver::run(&scenario, 0, scenario.clock).unwrap(),
    )
    .calls;
    let errors: u64 = t.errors.values().sum();
    assert_eq!(
        t.answered + t.pending + errors + t.open + t.lost_on_restart,
        40 * calls_per_run
    );
    assert!(report.distinct_traces >= 2, "jitter explores interleavings");
}

#[test]
fn sweep_lists_each_failing_seed_with_its_reproduce_command_and_exits_1() {
    // The scenario's exact expectations hold for its own seed only, so a sweep
    // that checks them fails on other seeds; each failure names its command.
    let file = scenario_path("race-answer-vs-expiry.json");
    let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args([
            "sweep",
            file.to_str().unwrap(),
            "--seeds",
            "0..30",
            "--jobs",
            "2",
            "--json",
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let failed = report["failed"].as_array().unwrap();
    assert_eq!(out.status.code(), Some(if failed.is_empty() { 0 } else { 1 }));
    assert!(!failed.is_empty(), "some seed loses the race the other way");
    for failure in failed {
        let seed = failure["seed"].as_u64().unwrap();
        let expected = format!(
            "asksim run {} --seed {seed} --clock virtual --explore random",
            file.display()
        );
        assert_eq!(failure["reproduce"].as_str().unwrap(), expected);
    }
    let seeds: Vec<u64> = failed.iter().map(|f| f["seed"].as_u64().unwrap()).collect();
    assert!(
        seeds.windows(2).all(|w| w[0] < w[1]),
        "failures come in seed order"
    );
}

#[test]
fn seed_ranges_parse_half_open_and_inclusive_and_refuse_empty_ones() {
    assert_eq!("3..7".parse::<SeedRange>().unwrap(), SeedRange { from: 3, to: 7 });
    assert_eq!(
        "3..=7".parse::<SeedRange>().unwrap(),
        SeedRange { from: 3, to: 8 }
    );
    assert!("7..7".parse::<SeedRange>().is_err());
    assert!("x..7".parse::<SeedRange>().is_err());
    assert!("0..99999999999".parse::<SeedRange>().is_err());
    let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args([
            "sweep",
            scenario_path("quickstart.json").to_str().unwrap(),
            "--seeds",
            "5..5",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn chrome_trace_has_a_track_per_agent_and_answerer_slices_per_call_and_instants() {
    let trace_path = temp_path("trace.json");
    let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args([
            "run",
            scenario_path("loss-after-pending.json").to_str().unwrap(),
            "--chrome-trace",
        ])
        .arg(&trace_path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&trace_path).unwrap()).unwrap();
    let _ = std::fs::remove_file(&trace_path);
    let events = trace["traceEvents"].as_array().unwrap();
    for e in events {
        let ph = e["ph"].as_str().unwrap();
        assert!(["M", "X", "i"].contains(&ph), "{e}");
        assert!(
            e["pid"].is_u64() && e["tid"].is_u64() && e["name"].is_string(),
            "{e}"
        );
        if ph != "M" {
            assert!(e["ts"].as_f64().unwrap() >= 0.0, "{e}");
        }
        if ph == "X" {
            assert!(e["dur"].as_f64().unwrap() >= 0.0, "{e}");
        }
    }
    let named = |ph: &str, name: &str| events.iter().any(|e| e["ph"] == ph && e["name"] == name);
    let thread = |name: &str| {
        events
            .iter()
            .any(|e| e["name"] == "thread_name" && e["args"]["name"] == name)
    };
    assert!(named("M", "process_name"));
    assert!(
        thread("root") && thread("terminal"),
        "a track per agent and per answerer"
    );
    assert!(
        named("X", "root/1 pending"),
        "a slice per call, named by callId and outcome"
    );
    assert!(
        named("X", "root/1 pending → late_answered"),
        "the time it spent pending"
    );
    assert!(named("X", "root/2 answered"));
    assert!(named("i", "process loss (restart after 2 s)") && named("i", "restart"));
    let slice = events.iter().find(|e| e["name"] == "root/1 pending").unwrap();
    assert_eq!(
        (slice["ts"].as_f64(), slice["dur"].as_f64()),
        (Some(0.0), Some(5_000_000.0))
    );
}
