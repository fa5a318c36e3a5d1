//! Measures the two runtime targets of SPEC §8 that criterion cannot: **scale**
//! (many concurrent pending questions) and **window accuracy** (how late a
//! `pending` result comes on the real clock).
//!
//! Run with
//!
//! ```text
//! cargo run --release --example scale -- [--pending N] [--lateness N] [--only scale|lateness]
//! ```
//!
//! (`--help` lists the rest: `--compare`, `--reps`, `--roots`, `--scale-window`,
//! `--window`). It prints plain `key: value` lines and, last, one JSON line with
//! every figure.
//!
//! # Scale (`--pending N`, default 1,000,000; compared with `--compare`, default 1,000)
//!
//! On a current-thread tokio runtime with paused time (windows elapse without
//! waiting): one asksim runtime with the timed tool, one answerer that accepts
//! every offer at once and never answers (`Latency::Never`), and `--roots` root
//! agents (default 4). N concurrent `ask` calls (one tokio task each, spread over
//! the roots; an agent can have many calls in flight), each with a
//! `--scale-window` window (default 1 s), all return `pending`. Reported:
//!
//! - **per-call cost**: wall time from the first `ask` to the last `pending`
//!   result, divided by N, at N and at the comparison size (median of `--reps`
//!   runs, each on a fresh runtime), and their ratio (target ≤ 1.5);
//! - **bytes per pending question**: live heap bytes (counted exactly by this
//!   program's global allocator) and resident memory (`VmRSS`), after minus
//!   before, divided by N (target ≤ 1 KiB). The runtime is started with
//!   [`Runtime::start_without_events`] (events counted, not kept); with
//!   `--keep-events` it keeps every event in memory instead, and the program
//!   moves them out and drops them: the heap freed by that is the event log's
//!   share. What is left is what the broker, the answerer, the agents and the
//!   recorder's projection hold per open question.
//!
//! Runtimes and agents are built before the measured section; the tokio tasks
//! of the `ask` calls are all finished (and freed) before "after" is read.
//!
//! # Window accuracy (`--lateness N`, default 100,000)
//!
//! On a multi-thread tokio runtime (one worker per core) on the real clock: the
//! same runtime and answerer, N concurrent calls with a `--window` window
//! (default 2 s) fired at once. For every call, the lateness of its `pending`
//! result = (time its `Result` event was recorded) − (time of its `Request`
//! event + the request's `window_s`), read from the runtime's events; and the
//! caller's lateness = (time the `ask` returned to its task, on the same clock)
//! − (request time + window). p50, p99 and max (target: p99 ≤ 5 ms) come from an
//! `hdrhistogram` in microseconds.
//!
//! The program runs on the binary's allocator (mimalloc) and process set-up
//! ([`asksim::cli::process::tune`]), as the `asksim` binary and the benches do.
//! Its global allocator counts live bytes for the scale measurement with one
//! relaxed atomic per allocation, and stops counting when the lateness
//! measurement starts: on the multi-thread run that atomic was a cache line
//! both cores wrote at every allocation and free, a cost no host pays.

use std::alloc::{GlobalAlloc, Layout};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use asksim::AnswererSlot;
use asksim::event::{Event, EventKind};
use asksim::policy::{Accepts, AnswerPolicy, Latency, Policy};
use asksim::tool::{Timeout, ToolConfig};
use asksim::{Runtime, RuntimeConfig};
use clap::{Parser, ValueEnum};
use hdrhistogram::Histogram;
use serde_json::{Value, json};

/// Counts live heap bytes while [`COUNTING`]; everything else is mimalloc's.
struct Counting;

/// The allocator everything is forwarded to: the binary's.
static INNER: mimalloc::MiMalloc = mimalloc::MiMalloc;

static LIVE: AtomicI64 = AtomicI64::new(0);

/// Whether [`LIVE`] is kept: from the start, until [`stop_counting`]. Only the
/// scale measurement reads it, and it runs first.
static COUNTING: AtomicBool = AtomicBool::new(true);

/// Stops counting live bytes for the rest of the process: [`heap`] is not
/// read again after it.
fn stop_counting() {
    COUNTING.store(false, Ordering::Relaxed);
}

fn count(bytes: i64) {
    if COUNTING.load(Ordering::Relaxed) {
        LIVE.fetch_add(bytes, Ordering::Relaxed);
    }
}

// SAFETY: every call forwards to mimalloc with the caller's arguments; the
// counter only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { INNER.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { INNER.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is.
        unsafe { INNER.dealloc(ptr, layout) };
        count(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { INNER.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Live heap bytes now.
fn heap() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

/// A field of /proc/self/status in bytes (`VmRSS`, `VmHWM`), or 0 if unreadable.
fn proc_status_bytes(field: &str) -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
        .map_or(0, |kib| kib * 1024)
}

fn rss() -> i64 {
    proc_status_bytes("VmRSS")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Only {
    Scale,
    Lateness,
}

/// Scale and window-accuracy figures of the asksim runtime (SPEC §8).
#[derive(Parser, Debug)]
struct Args {
    /// Concurrent pending questions of the scale measurement.
    #[arg(long, default_value_t = 1_000_000)]
    pending: usize,
    /// The smaller size the scale measurement compares against.
    #[arg(long, default_value_t = 1_000)]
    compare: usize,
    /// Runs at the comparison size (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Concurrent timed calls of the window-accuracy measurement.
    #[arg(long, default_value_t = 100_000)]
    lateness: usize,
    /// Root agents the calls are spread over.
    #[arg(long, default_value_t = 4)]
    roots: usize,
    /// Window of the scale calls, seconds (virtual).
    #[arg(long, default_value_t = 1.0)]
    scale_window: f64,
    /// Window of the window-accuracy calls, seconds (real).
    #[arg(long, default_value_t = 2.0)]
    window: f64,
    /// Run only one of the two measurements.
    #[arg(long, value_enum)]
    only: Option<Only>,
    /// The scale runs keep every event in memory (as `Runtime::start` does).
    #[arg(long)]
    keep_events: bool,
}

/// A valid timed call with one two-option question and the given window.
fn arguments(window_s: f64) -> Arc<str> {
    json!({
        "questions": [{
            "id": "go",
            "question": "Proceed with the change?",
            "header": "Confirm",
            "options": [{"label": "Yes (Recommended)"}, {"label": "No"}]
        }],
        "timeout": window_s
    })
    .to_string()
    .into()
}

/// An answerer that accepts every offer at once and never answers.
fn never_answers() -> AnswererSlot {
    AnswererSlot::Policy {
        name: "never".into(),
        policy: Policy {
            accepts: Accepts::All,
            offer_latency: Latency::Fixed(0.0),
            latency: Latency::Never,
            answer: AnswerPolicy::Recommended,
            hold_after_s: None,
            crash_at_s: None,
            crash_after_accepts: None,
        },
    }
}

fn config(window_s: f64) -> RuntimeConfig {
    RuntimeConfig {
        tool: ToolConfig::timed(Timeout::Window(window_s)),
        answerers: vec![never_answers()],
        ..RuntimeConfig::default()
    }
}

fn is_pending(text: &str) -> bool {
    text.starts_with(r#"{"pending":true"#)
}

/// Events by kind name.
fn count_kinds(events: &[Event]) -> std::collections::BTreeMap<&'static str, u64> {
    let mut counts = std::collections::BTreeMap::new();
    for e in events {
        let kind = match e.kind {
            EventKind::Spawn { .. } => "spawn",
            EventKind::Request { .. } => "request",
            EventKind::Result { .. } => "result",
            EventKind::Offer { .. } => "offer",
            EventKind::Accept { .. } => "accept",
            EventKind::Decline { .. } => "decline",
            _ => "other",
        };
        *counts.entry(kind).or_insert(0) += 1;
    }
    counts
}

struct ScaleRun {
    n: usize,
    pending: usize,
    other: usize,
    wall: Duration,
    /// From the first `ask` to the first `pending` result: every request reached
    /// the broker and was accepted (virtual time stands still until then).
    submit: Duration,
    virtual_s: f64,
    heap_bytes: i64,
    rss_bytes: i64,
    events: usize,
    event_kinds: std::collections::BTreeMap<&'static str, u64>,
    event_log_heap_bytes: i64,
    shutdown: Duration,
}

impl ScaleRun {
    fn per_call_us(&self) -> f64 {
        self.wall.as_secs_f64() * 1e6 / self.n as f64
    }
}

fn scale_run(n: usize, roots: usize, window_s: f64, keep_events: bool) -> ScaleRun {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    rt.block_on(async move {
        let runtime = if keep_events {
            Runtime::start(config(window_s)).await
        } else {
            Runtime::start_without_events(config(window_s)).await
        }
        .expect("the runtime starts");
        let mut agents = Vec::with_capacity(roots);
        for i in 0..roots {
            agents.push(runtime.spawn_root(&format!("r{i}"), None).await.expect("a root"));
        }
        let args = arguments(window_s);
        tokio::task::yield_now().await;
        let events_before = runtime.events().len();

        let heap0 = heap();
        let rss0 = rss();
        let t0 = Instant::now();
        let mut joins = Vec::with_capacity(n);
        for i in 0..n {
            let agent = agents[i % roots].clone();
            let args = args.clone();
            joins.push(tokio::spawn(async move {
                let outcome = agent.ask(&args).await;
                (is_pending(&outcome.result.text), Instant::now())
            }));
        }
        let (mut pending, mut other) = (0, 0);
        let mut first: Option<Instant> = None;
        for join in joins {
            let (p, at) = join.await.expect("an ask task");
            if p {
                pending += 1;
            } else {
                other += 1;
            }
            first = Some(first.map_or(at, |f| f.min(at)));
        }
        let wall = t0.elapsed();
        let submit = first.map_or(Duration::ZERO, |f| f - t0);
        let virtual_s = runtime.now_s();
        let heap1 = heap();
        let rss1 = rss();

        let event_count = (runtime.events().len() - events_before) as usize;
        let events = runtime.events().take();
        let event_kinds = count_kinds(&events);
        let before_drop = heap();
        drop(events);
        let event_log_heap_bytes = before_drop - heap();

        let t1 = Instant::now();
        runtime.shutdown().await;
        let shutdown = t1.elapsed();
        ScaleRun {
            n,
            pending,
            other,
            wall,
            submit,
            virtual_s,
            heap_bytes: heap1 - heap0,
            rss_bytes: rss1 - rss0,
            events: event_count,
            event_kinds,
            event_log_heap_bytes,
            shutdown,
        }
    })
}

fn print_scale_run(label: &str, run: &ScaleRun) {
    let n = run.n as f64;
    println!(
        "{label}: N={} pending={} other={} wall={:.3}s submit={:.3}s per_call={:.3}us virtual={:.1}s",
        run.n,
        run.pending,
        run.other,
        run.wall.as_secs_f64(),
        run.submit.as_secs_f64(),
        run.per_call_us(),
        run.virtual_s,
    );
    println!(
        "{label}: heap_per_pending={:.0}B rss_per_pending={:.0}B event_log_per_pending={:.0}B \
         runtime_excl_log_per_pending={:.0}B events={} ({:.2}/call) kinds={:?} shutdown={:.3}s",
        run.heap_bytes as f64 / n,
        run.rss_bytes as f64 / n,
        run.event_log_heap_bytes as f64 / n,
        (run.heap_bytes - run.event_log_heap_bytes) as f64 / n,
        run.events,
        run.events as f64 / n,
        run.event_kinds,
        run.shutdown.as_secs_f64(),
    );
}

fn scale(args: &Args) -> Value {
    println!(
        "scale: current-thread tokio, paused clock, window {} s, {} roots, answerer accepts and never answers, events kept: {}",
        args.scale_window, args.roots, args.keep_events
    );
    // A warm-up, then the comparison size a few times.
    let _ = scale_run(args.compare, args.roots, args.scale_window, args.keep_events);
    let mut small: Vec<ScaleRun> = (0..args.reps.max(1))
        .map(|_| scale_run(args.compare, args.roots, args.scale_window, args.keep_events))
        .collect();
    small.sort_by(|a, b| a.per_call_us().total_cmp(&b.per_call_us()));
    let per_call_runs: Vec<f64> = small.iter().map(ScaleRun::per_call_us).collect();
    let small = small.swap_remove(small.len() / 2);
    print_scale_run("scale small (median)", &small);
    println!("scale small: per_call runs (us, sorted) = {per_call_runs:.3?}");

    let big = scale_run(args.pending, args.roots, args.scale_window, args.keep_events);
    print_scale_run("scale big", &big);
    let ratio = big.per_call_us() / small.per_call_us();
    let n = big.n as f64;
    let heap_per = big.heap_bytes as f64 / n;
    let rss_per = big.rss_bytes as f64 / n;
    println!(
        "scale: per_call {:.3}us at {} vs {:.3}us at {}: ratio {:.2} (target <= 1.5)",
        big.per_call_us(),
        big.n,
        small.per_call_us(),
        small.n,
        ratio
    );
    println!(
        "scale: {:.0} B heap / {:.0} B RSS per pending question at {} (target <= 1024); event log {:.0} B of it; size_of::<Event>() = {} B",
        heap_per,
        rss_per,
        big.n,
        big.event_log_heap_bytes as f64 / n,
        std::mem::size_of::<Event>()
    );
    println!(
        "scale: peak RSS of the process {} MiB",
        proc_status_bytes("VmHWM") >> 20
    );
    let run_json = |r: &ScaleRun| {
        json!({
            "n": r.n,
            "pending": r.pending,
            "other": r.other,
            "wall_s": r.wall.as_secs_f64(),
            "submit_s": r.submit.as_secs_f64(),
            "per_call_us": r.per_call_us(),
            "heap_bytes_per_pending": r.heap_bytes as f64 / r.n as f64,
            "rss_bytes_per_pending": r.rss_bytes as f64 / r.n as f64,
            "event_log_bytes_per_pending": r.event_log_heap_bytes as f64 / r.n as f64,
            "runtime_excl_log_bytes_per_pending": (r.heap_bytes - r.event_log_heap_bytes) as f64 / r.n as f64,
            "events": r.events,
            "shutdown_s": r.shutdown.as_secs_f64(),
        })
    };
    json!({
        "small": run_json(&small),
        "small_per_call_us_runs": per_call_runs,
        "big": run_json(&big),
        "per_call_ratio": ratio,
        "target_bytes_per_pending": 1024,
        "target_ratio": 1.5,
        "events_kept": args.keep_events,
        "size_of_event": std::mem::size_of::<Event>(),
        "peak_rss_bytes": proc_status_bytes("VmHWM"),
    })
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("a histogram")
}

fn quantiles_ms(h: &Histogram<u64>) -> Value {
    let ms = |us: u64| us as f64 / 1000.0;
    json!({
        "count": h.len(),
        "p50_ms": ms(h.value_at_quantile(0.5)),
        "p99_ms": ms(h.value_at_quantile(0.99)),
        "p999_ms": ms(h.value_at_quantile(0.999)),
        "max_ms": ms(h.max()),
    })
}

fn lateness(args: &Args) -> Value {
    stop_counting();
    let n = args.lateness;
    let window_s = args.window;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a multi-thread runtime");
    let workers = rt.metrics().num_workers();
    println!(
        "lateness: multi-thread tokio ({workers} workers), real clock, {n} calls, window {window_s} s, {} roots",
        args.roots
    );
    let roots = args.roots;
    let (events, received, wall) = rt.block_on(async move {
        let runtime = Runtime::start(config(window_s))
            .await
            .expect("the runtime starts");
        let mut agents = Vec::with_capacity(roots);
        for i in 0..roots {
            agents.push(runtime.spawn_root(&format!("r{i}"), None).await.expect("a root"));
        }
        let call_args = arguments(window_s);
        tokio::time::sleep(Duration::from_millis(10)).await;

        let t0 = Instant::now();
        let mut joins = Vec::with_capacity(n);
        for i in 0..n {
            let agent = agents[i % roots].clone();
            let call_args = call_args.clone();
            let clock = runtime.clone();
            joins.push(tokio::spawn(async move {
                let outcome = agent.ask(&call_args).await;
                let t = clock.now_s();
                let text = outcome.result.text;
                let kind = if is_pending(&text) {
                    None
                } else {
                    // The error code, or "answers": what the call got instead.
                    Some(
                        serde_json::from_str::<Value>(&text)
                            .ok()
                            .and_then(|v| v["error"]["code"].as_str().map(str::to_owned))
                            .unwrap_or_else(|| "answers".to_owned()),
                    )
                };
                (outcome.call_id, kind, t)
            }));
        }
        let mut received = Vec::with_capacity(n);
        for join in joins {
            received.push(join.await.expect("an ask task"));
        }
        let wall = t0.elapsed();
        let events = runtime.events().take();
        runtime.shutdown().await;
        (events, received, wall)
    });
    drop(rt);

    let mut requests: HashMap<&str, (f64, f64)> = HashMap::with_capacity(n);
    let (mut first_request, mut last_request) = (f64::INFINITY, f64::NEG_INFINITY);
    for e in &events {
        if let EventKind::Request {
            call_id,
            window_s: Some(w),
            ..
        } = &e.kind
        {
            requests.insert(call_id.as_str(), (e.t, *w));
            first_request = first_request.min(e.t);
            last_request = last_request.max(e.t);
        }
    }
    // How long the answerer took to accept (its mailbox backlog): Offer to Accept.
    let mut offered: HashMap<&str, f64> = HashMap::with_capacity(n);
    let mut accept_lag = histogram();
    for e in &events {
        match &e.kind {
            EventKind::Offer { call_id, .. } => {
                offered.insert(call_id.as_str(), e.t);
            }
            EventKind::Accept { call_id, .. } => {
                if let Some(t) = offered.get(call_id.as_str()) {
                    accept_lag.saturating_record(((e.t - t).max(0.0) * 1e6).round() as u64);
                }
            }
            _ => {}
        }
    }
    // Lateness by the order the requests reached the broker, in tenths.
    let mut by_tenth: Vec<Histogram<u64>> = (0..10).map(|_| histogram()).collect();
    let mut recorded = histogram();
    let mut early = 0u64;
    let mut pending_results = 0u64;
    for e in &events {
        if let EventKind::Result { call_id, result, .. } = &e.kind
            && is_pending(result)
            && let Some((t_req, w)) = requests.get(call_id.as_str())
        {
            pending_results += 1;
            let late_s = e.t - (t_req + w);
            if late_s < 0.0 {
                early += 1;
            }
            let us = (late_s.max(0.0) * 1e6).round() as u64;
            recorded.saturating_record(us);
            let span = (last_request - first_request).max(1e-9);
            let tenth = (((t_req - first_request) / span) * 10.0).clamp(0.0, 9.0) as usize;
            by_tenth[tenth].saturating_record(us);
        }
    }
    let mut caller = histogram();
    let mut not_pending = 0u64;
    let mut not_pending_kinds: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for (call_id, kind, t) in &received {
        match (requests.get(call_id.as_str()), kind) {
            (Some((t_req, w)), None) => {
                caller.saturating_record(((t - (t_req + w)).max(0.0) * 1e6).round() as u64);
            }
            (_, kind) => {
                not_pending += 1;
                *not_pending_kinds
                    .entry(kind.clone().unwrap_or_else(|| "no request".to_owned()))
                    .or_insert(0) += 1;
            }
        }
    }
    let submit_span_s = last_request - first_request;
    println!(
        "lateness: {} pending results ({} calls not pending: {:?}; {} early), requests reached the broker over {:.3}s, wall {:.3}s",
        pending_results,
        not_pending,
        not_pending_kinds,
        early,
        submit_span_s,
        wall.as_secs_f64()
    );
    let show = |label: &str, h: &Histogram<u64>| {
        println!(
            "lateness {label}: p50={:.3}ms p99={:.3}ms p99.9={:.3}ms max={:.3}ms (n={}; target p99 <= 5ms)",
            h.value_at_quantile(0.5) as f64 / 1000.0,
            h.value_at_quantile(0.99) as f64 / 1000.0,
            h.value_at_quantile(0.999) as f64 / 1000.0,
            h.max() as f64 / 1000.0,
            h.len()
        );
    };
    show("recorded (Result event - request - window)", &recorded);
    show("at caller (ask returned - request - window)", &caller);
    show("diag: answerer accept lag (Accept - Offer)", &accept_lag);
    let tenths: Vec<f64> = by_tenth
        .iter()
        .map(|h| h.value_at_quantile(0.5) as f64 / 1000.0)
        .collect();
    println!("lateness diag: p50 (ms) by tenth of the request order: {tenths:.1?}");
    json!({
        "n": n,
        "window_s": window_s,
        "workers": workers,
        "pending_results": pending_results,
        "not_pending": not_pending,
        "not_pending_kinds": not_pending_kinds,
        "early": early,
        "submit_span_s": submit_span_s,
        "wall_s": wall.as_secs_f64(),
        "recorded": quantiles_ms(&recorded),
        "caller": quantiles_ms(&caller),
        "accept_lag": quantiles_ms(&accept_lag),
        "p50_ms_by_tenth": tenths,
        "target_p99_ms": 5.0,
    })
}

fn main() {
    asksim::cli::process::tune();
    let args = Args::parse();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("cores: {cores}");
    let mut report = json!({ "cores": cores });
    if args.only != Some(Only::Lateness) {
        report["scale"] = scale(&args);
    }
    if args.only != Some(Only::Scale) {
        report["lateness"] = lateness(&args);
    }
    println!("{report}");
}
