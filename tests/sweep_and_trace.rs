//! `asksim sweep` (many seeds, failing seeds with reproduce commands, totals) and
//! `--chrome-trace` (Trace Event JSON that Perfetto opens).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use asksim::scenario;
use asksim::sim::hunt::seeds::SeedRange;
use asksim::sim::hunt::sweep::{SweepOptions, sweep};
use serde_json::Value;

fn scenario_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name)
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
        shard: asksim::sim::hunt::seeds::Shard::WHOLE,
        answerers: Default::default(),
        broker: None,
    };
    let report = sweep(&scenario, &options, |_| {});
    assert_eq!(report.runs, 40);
    assert_eq!(report.passed, 40, "{:?}", report.failed);
    let t = &report.totals;
    // Every call of every run is counted once, whichever side won its race.
    let calls_per_run = asksim::sim::summarise(
        &scenario,
        "x",
        &asksim::sim::run(&scenario, 0, scenario.clock).unwrap(),
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
    // Every range prints as one `--seeds` takes back, the last seed included.
    for text in ["3..7", "0..1", "18446744073709551614..=18446744073709551615"] {
        let range: SeedRange = text.parse().unwrap();
        assert_eq!(range.to_string(), text);
        assert_eq!(range.to_string().parse::<SeedRange>().unwrap(), range);
    }
    assert_eq!("3..=7".parse::<SeedRange>().unwrap().to_string(), "3..8");
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
    let dir = tempfile::tempdir().unwrap();
    let trace_path = dir.path().join("trace.json");
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
    let events = trace["traceEvents"].as_array().unwrap();
    for e in events {
        let ph = e["ph"].as_str().unwrap();
        assert!(["M", "X", "i", "s", "t", "f"].contains(&ph), "{e}");
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

/// The trace of a run of the scenario `name`, as `--chrome-trace` writes it.
fn trace_of(name: &str) -> (Vec<Value>, Vec<asksim::event::Event>) {
    let scenario = scenario::load(&scenario_path(name)).unwrap();
    let output = asksim::sim::run(&scenario, scenario.seed, scenario.clock).unwrap();
    let trace = asksim::sim::show::chrome_trace::chrome_trace(output.events());
    (
        trace["traceEvents"].as_array().unwrap().clone(),
        output.events().to_vec(),
    )
}

/// Which slice or instant each flow event binds to, the way Perfetto's JSON
/// importer decides (src/trace_processor/importers/json and common/flow_tracker):
/// it reads events in timestamp order (at one timestamp, slices with a duration
/// first, longest first, then the rest in file order), keeps a stack of slices
/// per thread (popping those that ended before a new one begins) and binds `s`,
/// `t` and `f` with `"bp":"e"` to the slice on top of the stack. Returns flow
/// event index → bound event index, both in file order.
fn perfetto_bindings(events: &[Value]) -> BTreeMap<usize, usize> {
    let key = |e: &Value| match (e["ph"].as_str(), e["dur"].as_i64()) {
        (Some("X"), Some(dur)) => i64::MAX - dur,
        _ => i64::MAX,
    };
    let mut order: Vec<usize> = (0..events.len()).filter(|&i| events[i]["ph"] != "M").collect();
    order.sort_by_key(|&i| (events[i]["ts"].as_f64().unwrap() as i64, key(&events[i]), i));
    let mut stacks: BTreeMap<(u64, u64), Vec<usize>> = BTreeMap::new();
    let mut bound = BTreeMap::new();
    for i in order {
        let e = &events[i];
        let track = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let ts = e["ts"].as_f64().unwrap();
        match e["ph"].as_str().unwrap() {
            "X" | "i" if e["s"] != "g" => {
                let stack = stacks.entry(track).or_default();
                let end =
                    |j: usize| events[j]["ts"].as_f64().unwrap() + events[j]["dur"].as_f64().unwrap_or(0.0);
                while stack.last().is_some_and(|&j| end(j) < ts) {
                    stack.pop();
                }
                stack.push(i);
            }
            "s" | "t" | "f" => {
                if let Some(&top) = stacks.get(&track).and_then(|s| s.last()) {
                    bound.insert(i, top);
                }
            }
            _ => {}
        }
    }
    bound
}

/// A flow's phases and the names of their tracks.
type FlowPath = &'static [(&'static str, &'static str)];

/// Flow arrows follow each question (issue #14): one flow per offer, from the
/// caller's track at the offer to the answerer's at its accept and answer, and
/// back to the caller's at the result, or ending on the answerer's track at a
/// decline or a process loss. Each flow has one start and one finish with its
/// id, in time order, and every flow event binds, as Perfetto binds it, to the
/// instant just before it on its own track.
#[test]
fn chrome_trace_flows_follow_each_question_from_offer_to_result() {
    let cases: [(&str, &[FlowPath]); 3] = [
        (
            "quickstart.json",
            &[&[("s", "root"), ("t", "web"), ("t", "web"), ("f", "root")]],
        ),
        (
            "race-submit-vs-owner-death.json",
            &[
                &[("s", "root"), ("t", "web"), ("f", "web")],
                &[("s", "root"), ("t", "terminal"), ("t", "terminal"), ("f", "root")],
            ],
        ),
        (
            "loss-during-window.json",
            &[
                &[("s", "root"), ("t", "web"), ("f", "web")],
                &[("s", "root"), ("t", "web"), ("t", "web"), ("f", "root")],
            ],
        ),
    ];
    for (name, paths) in cases {
        let (events, _) = trace_of(name);
        let flows = flows_of(name, &events);
        let seen: Vec<Vec<(&str, &str)>> = flows
            .values()
            .map(|flow| flow.iter().map(|(ph, track, _)| (*ph, track.as_str())).collect())
            .collect();
        assert_eq!(seen, paths, "{name}");
    }
    // The loss finishes the first flow at 3 s; the re-offer starts a new one at 4 s.
    let (events, _) = trace_of("loss-during-window.json");
    let flows = flows_of("loss-during-window.json", &events);
    let times: Vec<Vec<f64>> = flows.values().map(|f| f.iter().map(|p| p.2).collect()).collect();
    assert_eq!(times, [vec![0.0, 0.0, 3e6], vec![4e6, 4e6, 9e6, 9e6]]);
}

/// Every scenario: one flow per offer in the log; each one `s`, then `t`s, then
/// `f` with `"bp":"e"`, one id, category and name, in time order; `s` on the
/// caller's track, `t` on answerers', each flow event bound (as Perfetto binds
/// it) to the instant just before it, at its time, on its track.
#[test]
fn chrome_trace_flows_are_well_formed_and_bound_in_every_scenario() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") && !common::is_big_load(Path::new(n)))
        .collect();
    names.sort();
    for name in names {
        let (events, log) = trace_of(&name);
        let offers = log
            .iter()
            .filter(|e| matches!(e.kind, asksim::event::EventKind::Offer { .. }))
            .count();
        let flows = flows_of(&name, &events);
        assert_eq!(flows.len(), offers, "{name}: one flow per offer");
    }
}

/// One flow event: its phase, the name of its track, its time in µs.
type FlowPoint = (&'static str, String, f64);

/// The flows of a trace by id: each flow event in file order, after checking
/// the rules every flow keeps.
fn flows_of(name: &str, events: &[Value]) -> BTreeMap<u64, Vec<FlowPoint>> {
    let names: BTreeMap<(u64, u64), String> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| {
            let track = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            (track, e["args"]["name"].as_str().unwrap().to_owned())
        })
        .collect();
    let bound = perfetto_bindings(events);
    let mut flows: BTreeMap<u64, Vec<FlowPoint>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        let ph = match e["ph"].as_str().unwrap() {
            "s" => "s",
            "t" => "t",
            "f" => "f",
            _ => continue,
        };
        let track = check_flow_event(name, events, &bound, i);
        let id = e["id"].as_u64().unwrap();
        flows
            .entry(id)
            .or_default()
            .push((ph, names[&track].clone(), e["ts"].as_f64().unwrap()));
    }
    for (id, flow) in &flows {
        let phases: String = flow.iter().map(|p| p.0).collect();
        assert!(
            phases.starts_with('s')
                && phases.ends_with('f')
                && phases[1..phases.len() - 1].chars().all(|c| c == 't'),
            "{name}: flow {id} is s t… f: {flow:?}"
        );
        assert!(
            flow.windows(2).all(|w| w[0].2 <= w[1].2),
            "{name}: flow {id} in time order: {flow:?}"
        );
    }
    flows
}

/// Checks the flow event at `i`: its category and name, `"bp":"e"` on a
/// finish, its binding (as Perfetto binds it) to the thread-scoped instant just
/// before it at its time on its track, and its process (a start on the agents',
/// a step on the answerers'). Returns its track.
fn check_flow_event(name: &str, events: &[Value], bound: &BTreeMap<usize, usize>, i: usize) -> (u64, u64) {
    let e = &events[i];
    let ph = e["ph"].as_str().unwrap();
    let question = Value::from("question");
    assert_eq!((&e["cat"], &e["name"]), (&question, &question), "{name}: {e}");
    assert_eq!(
        e["bp"] == "e",
        ph == "f",
        "{name}: a finish binds to its enclosing slice: {e}"
    );
    let track = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
    let before = &events[i - 1];
    assert_eq!(
        bound.get(&i),
        Some(&(i - 1)),
        "{name}: {e} binds to the event before it, {before}"
    );
    assert_eq!(
        (before["ph"].as_str(), before["s"].as_str()),
        (Some("i"), Some("t")),
        "{name}: {before}"
    );
    assert_eq!(
        (before["pid"].as_u64(), before["tid"].as_u64(), &before["ts"]),
        (Some(track.0), Some(track.1), &e["ts"])
    );
    let pid = match ph {
        "s" => 1,
        "t" => 2,
        _ => track.0,
    };
    assert_eq!(
        track.0, pid,
        "{name}: a start on the caller's track, steps on the answerer's: {e}"
    );
    track
}

/// The trace's bytes as `--chrome-trace` writes them, pinned: every kind of
/// trace event (metadata, instants on a track and global, slices with and
/// without `args`, flow start, step and bound finish) with its keys in their
/// order. The other trace tests compare parsed JSON, where key order does not
/// show.
#[test]
fn chrome_trace_bytes_are_pinned_key_by_key() {
    let bytes = |name: &str| {
        let scenario = scenario::load(&scenario_path(name)).unwrap();
        let output = asksim::sim::run(&scenario, scenario.seed, scenario.clock).unwrap();
        let mut trace = asksim::sim::show::chrome_trace::ChromeTrace::new(Vec::new());
        for event in output.events() {
            asksim::record::Observer::event(&mut trace, event);
        }
        String::from_utf8(trace.finish().unwrap()).unwrap()
    };
    let quickstart = concat!(
        r#"{"traceEvents":[{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"agents"}},"#,
        r#"{"ph":"M","name":"process_name","pid":2,"tid":0,"args":{"name":"answerers"}},"#,
        r#"{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"root"}},"#,
        r#"{"ph":"M","name":"thread_name","pid":2,"tid":2,"args":{"name":"web"}},"#,
        r#"{"ph":"i","s":"t","name":"offer root/1 to web","pid":1,"tid":1,"ts":0.0},"#,
        r#"{"ph":"s","cat":"question","name":"question","id":1,"pid":1,"tid":1,"ts":0.0},"#,
        r#"{"ph":"i","s":"t","name":"accept root/1","pid":2,"tid":2,"ts":0.0},"#,
        r#"{"ph":"t","cat":"question","name":"question","id":1,"pid":2,"tid":2,"ts":0.0},"#,
        r#"{"ph":"X","name":"root/1 answering","pid":2,"tid":2,"ts":0.0,"dur":2000000.0,"args":{}},"#,
        r#"{"ph":"i","s":"t","name":"answer root/1","pid":2,"tid":2,"ts":2000000.0},"#,
        r#"{"ph":"t","cat":"question","name":"question","id":1,"pid":2,"tid":2,"ts":2000000.0},"#,
        r#"{"ph":"X","name":"root/1 answered","pid":1,"tid":1,"ts":0.0,"dur":2000000.0,"args":{"result":"{\"answers\":[{\"id\":\"cleanup\",\"selected\":[\"Yes, delete them (Recommended)\"]}]}"}},"#,
        r#"{"ph":"i","s":"t","name":"root/1 → answers","pid":1,"tid":1,"ts":2000000.0},"#,
        r#"{"ph":"f","cat":"question","name":"question","id":1,"pid":1,"tid":1,"ts":2000000.0,"bp":"e"}],"#,
        r#""displayTimeUnit":"ms"}"#
    );
    assert_eq!(bytes("quickstart.json"), quickstart);
    let loss =
        r#"{"ph":"i","s":"g","name":"process loss (restart after 1 s)","pid":1,"tid":0,"ts":4000000.0}"#;
    assert!(bytes("loss-twice.json").contains(loss), "a global instant");
}
