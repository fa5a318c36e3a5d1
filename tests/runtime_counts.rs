//! The cost of one call through the actor runtime, counted (issue #23): the
//! messages its actors get (by kind), the tasks and oneshots it makes, the
//! recorder's and the journal's locks on the actors' path, and the heap
//! allocations, for one round trip (answered at once) and for one pending call
//! (its window passes, then the late answer closes it). Each count is held to
//! an upper bound the runtime meets today, so a change that adds a hop, a task
//! or an allocation per call fails here; BENCHMARKS.md has the figures
//! (`cargo test --release --test runtime_counts -- --nocapture` prints them).
//!
//! Paused time on a current-thread runtime: every actor runs on the test's own
//! thread, so the thread's allocation count is the actors' path exactly (the
//! journal's thread, which records off that path, is counted apart).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use asksim::policy::Policy;
use asksim::tool::{Timeout, ToolConfig};
use asksim::{AnswererSlot, Runtime, RuntimeConfig, RuntimeCounts};

/// Counts every allocation, per thread and in all.
struct Counting;

static ALL: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static MINE: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    ALL.fetch_add(1, Ordering::Relaxed);
    let _ = MINE.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every call goes to the system allocator unchanged, with the caller's
// own arguments, so each of its promises is the system allocator's; the only
// addition is counting, which neither allocates (a const thread-local Cell has
// no destructor to register, and `try_with` never panics) nor touches memory
// handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn mine() -> u64 {
    MINE.with(Cell::get)
}

const ARGS_5S: &str = r#"{"questions":[{"id":"go","question":"Proceed with the cleanup?","header":"Confirm","options":[{"label":"Yes (Recommended)"},{"label":"No"}]}],"timeout":5}"#;
const ARGS_1S: &str = r#"{"questions":[{"id":"go","question":"Proceed with the cleanup?","header":"Confirm","options":[{"label":"Yes (Recommended)"},{"label":"No"}]}],"timeout":1}"#;

/// Calls measured (after as many to warm up): counts are per call, rounded up.
const CALLS: u64 = 50;

fn answering_after(latency_s: f64) -> RuntimeConfig {
    RuntimeConfig {
        tool: ToolConfig::timed(Timeout::Window(30.0)),
        answerers: vec![AnswererSlot::Policy {
            name: "yes".into(),
            policy: Policy::recommended_after(latency_s),
        }],
        ..RuntimeConfig::default()
    }
}

/// What one call costs, on average over [`CALLS`].
#[derive(Debug)]
struct PerCall {
    counts: RuntimeCounts,
    messages: u64,
    allocations: u64,
    events: u64,
}

/// Runs `call` [`CALLS`] times to warm up, then [`CALLS`] times counted.
async fn per_call<F: std::future::Future<Output = ()>>(runtime: &Runtime, call: impl Fn() -> F) -> PerCall {
    for _ in 0..CALLS {
        call().await;
    }
    let (before, events_before, allocations_before) = (runtime.counts(), runtime.events().len(), mine());
    for _ in 0..CALLS {
        call().await;
    }
    let allocations = mine() - allocations_before;
    let events = runtime.events().len() - events_before;
    let mut counts = runtime.counts().since(&before);
    let per = |n: u64| n.div_ceil(CALLS);
    counts.messages.values_mut().for_each(|n| *n = per(*n));
    counts.in_place.values_mut().for_each(|n| *n = per(*n));
    let messages = counts.messages_total();
    counts.tasks = per(counts.tasks);
    counts.oneshots = per(counts.oneshots);
    counts.recorder_locks = per(counts.recorder_locks);
    counts.queue_pushes = per(counts.queue_pushes);
    counts.lines = per(counts.lines);
    PerCall {
        counts,
        messages,
        allocations: per(allocations),
        events: per(events),
    }
}

/// Holds `got` to the bounds (messages, tasks, oneshots, allocations, events,
/// event lines serialised). An allocation bound is today's figure, or one
/// over it where the last cut took more than one: either way the code before
/// that cut fails it.
fn within(what: &str, got: &PerCall, bounds: [u64; 6]) {
    eprintln!("{what}: {got:#?}");
    let figures = [
        ("messages", got.messages),
        ("tasks", got.counts.tasks),
        ("oneshots", got.counts.oneshots),
        ("allocations", got.allocations),
        ("events", got.events),
        ("lines", got.counts.lines),
    ];
    for ((name, n), bound) in figures.into_iter().zip(bounds) {
        assert!(
            n <= bound,
            "{what}: {n} {name} per call, over the bound of {bound}"
        );
    }
    // No log file: every event goes through the journal's queue, none locks
    // the recorder on the actors' path.
    assert_eq!(
        got.counts.recorder_locks, 0,
        "{what}: the recorder locked on the actors' path"
    );
}

/// Holds the steps a library agent took in place to exactly `steps` a call:
/// what left the mailboxes was not lost on the way.
fn in_place(what: &str, got: &PerCall, steps: &[(&str, u64)]) {
    let want: std::collections::BTreeMap<&str, u64> = steps.iter().copied().collect();
    assert_eq!(got.counts.in_place, want, "{what}: steps in place");
}

#[tokio::test(start_paused = true)]
async fn one_round_trip_costs_no_more_than_it_does_today() {
    let runtime = Runtime::start(answering_after(0.0)).await.expect("a runtime");
    let root = runtime.spawn_root("root", None).await.expect("a root");
    let got = per_call(&runtime, || async {
        let outcome = root.ask(ARGS_5S).await;
        assert!(outcome.result.text.contains("answers"), "{}", outcome.result.text);
    })
    .await;
    // Today: no message (the broker takes the agent's request in place,
    // from its inbox, on the caller's thread: broker:Request was 1 before;
    // a library agent takes the
    // handle's call and the broker's result in place, so agent:Call and
    // agent:Settled are no mailbox hops, 3 before; the built-in answerer
    // runs inside the broker's actor, so its offer, accept and submit
    // are none either, 6 before that, with answerer:Offer, broker:Accept
    // and broker:Submit), no task, 1 oneshot (the call's number and its
    // result together; 2 before), 26 allocations on the actors' path (27
    // before the broker's mail left ractor's mailbox, 28
    // before a name or callId of up to 15 bytes was held in place, 30
    // before the questions were built straight into the call's shared
    // slice, 31 before a callId was formatted with no String of its own,
    // 32 before a batch was checked with no vector of slots, 108 with
    // the recorder in place, before issue #23; 96 before the answer
    // batch was shared with its event; 89 before the arguments were read
    // in one pass into a borrowed tree, 51 before one oneshot a call and
    // the answerer's batch shared by equal questions, 38 before the
    // answerer ran in the broker, 34 before the agent's steps were in
    // place), 5 events in 1 push to the journal's queue (3 before: one
    // per handler), no event line serialised (one an event while the
    // recorder hashed every line for nobody, before the library's
    // runtime computed only the hashes it is asked for).
    within("round trip", &got, [0, 0, 1, 26, 5, 0]);
    assert_eq!(got.counts.queue_pushes, 1, "{got:#?}");
    in_place(
        "round trip",
        &got,
        &[("agent:Call", 1), ("agent:Settled", 1), ("broker:Request", 1)],
    );
    runtime.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn one_pending_call_costs_no_more_than_it_does_today() {
    let runtime = Runtime::start(answering_after(2.0)).await.expect("a runtime");
    let got = pending_calls(&runtime).await;
    // Today: no message (the broker takes broker:Request and broker:Wake,
    // for the window and again for the late answer's timer, which waits
    // in the broker's wheel, in place from its inbox: 3 messages before;
    // 7 before a library agent took its calls, results, close
    // waits and closes in place, with agent:Call, agent:Settled,
    // agent:AwaitClosed and agent:Closed; 10 before the answerer ran in
    // the broker, with answerer:Offer, broker:Accept, answerer:Timer and
    // broker:Submit for the second wake-up), no task (the broker's one
    // sleeper lives as long as it; 1 before, re-spawned per deadline,
    // and 2 before issue #23, a task per timer), 2 oneshots (3 before
    // the number and the result shared one), 31 allocations on the
    // actors' path (34 before the broker's mail left ractor's mailbox, 36 before a name or callId of up to 15 bytes was
    // held in place, 38 before the questions were built straight into the
    // call's shared slice, 39 before a callId was formatted with no
    // String of its own, 40 before a batch was checked with no vector of
    // slots, 44 before the late answer's message was written into one
    // buffer of its size, 46 before a close's waiter was kept with no
    // vector and its callId made once, 133 before issue #23, 115 before
    // the answer batch was shared with its event, 109 before the
    // arguments were read in one pass, 71 before one oneshot a call and
    // the batch shared by equal questions, 58 before the answerer ran in
    // the broker, 52 before the agent's steps were in place), 7 events
    // in 4 pushes to the journal's queue (5 before), no event line
    // serialised (7 before the runtime's hashes were asked for).
    within("pending call", &got, [0, 0, 2, 32, 7, 0]);
    assert!(got.counts.queue_pushes <= 4, "{got:#?}");
    in_place("pending call", &got, PENDING_IN_PLACE);
    runtime.shutdown().await;
}

/// The counts of one pending call of a root of `runtime`, answered late and
/// awaited to its close.
async fn pending_calls(runtime: &Runtime) -> PerCall {
    let root = runtime.spawn_root("root", None).await.expect("a root");
    per_call(runtime, || async {
        let outcome = root.ask(ARGS_1S).await;
        assert!(outcome.result.text.contains("pending"), "{}", outcome.result.text);
        root.closed(&outcome.call_id).await;
    })
    .await
}

/// A library agent's steps of a pending call, each taken in place once, and
/// the broker's: the request and the wake-ups of the window and of the late
/// answer's timer.
const PENDING_IN_PLACE: &[(&str, u64)] = &[
    ("agent:AwaitClosed", 1),
    ("agent:Call", 1),
    ("agent:Closed", 1),
    ("agent:Settled", 1),
    ("broker:Request", 1),
    ("broker:Wake", 2),
];

/// Under a durable log (the default policy, group commit) a library agent
/// takes the broker's result and close in place too, once the gate released
/// them: no mailbox of its own (an inbox actor took both before: 5 messages
/// a call, with agent:Settled and agent:Closed), and the broker takes its
/// mail in place as without a log (3 messages before: broker:Request and two
/// wake-ups).
#[tokio::test(start_paused = true)]
async fn under_a_durable_log_the_agent_takes_results_in_place() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("counts-durable.jsonl");
    let config = RuntimeConfig {
        log: Some(asksim::LogConfig::new(&path)),
        ..answering_after(2.0)
    };
    let runtime = Runtime::start_without_events(config).await.expect("a runtime");
    let got = pending_calls(&runtime).await;
    eprintln!("pending call under a durable log: {got:#?}");
    assert_eq!(got.messages, 0, "every step in place: {got:#?}");
    in_place("pending call under a durable log", &got, PENDING_IN_PLACE);
    runtime.shutdown().await;
}

/// The counts fire: a bound under today's figure fails.
#[test]
#[should_panic(expected = "over the bound")]
fn a_bound_under_the_figure_fails() {
    let got = PerCall {
        counts: RuntimeCounts::default(),
        messages: 7,
        allocations: 0,
        events: 0,
    };
    within("planted", &got, [6, 0, 2, 100, 5, 0]);
}

/// Asked for the trace hash, the recorder serialises each event once (and
/// the count of lines is no vacuous zero).
#[tokio::test(start_paused = true)]
async fn a_runtime_asked_for_a_hash_serialises_each_event_once() {
    let config = RuntimeConfig {
        hashes: asksim::record::Hashes::Trace,
        ..answering_after(0.0)
    };
    let runtime = Runtime::start(config).await.expect("a runtime");
    let root = runtime.spawn_root("root", None).await.expect("a root");
    let got = per_call(&runtime, || async {
        root.ask(ARGS_5S).await;
    })
    .await;
    assert_eq!(got.counts.lines, got.events, "{got:#?}");
    assert_eq!(got.events, 5);
    runtime.shutdown().await;
}

#[test]
fn the_allocator_counts_this_thread() {
    let before = mine();
    let boxed = std::hint::black_box(Box::new([0u8; 64]));
    assert_eq!(mine() - before, 1);
    drop(boxed);
}
