//! One run of a scenario, on either clock: on the virtual clock, the simulated
//! [`World`] under a scheduling strategy; on the real clock, the actor runtime
//! (`crate::actors::scenario`). Either way the same logic runs, the same log is
//! recorded, and a panic anywhere in the run ends it as `crashed` instead of
//! taking the tool down (SPEC §6 "Crashes").
//!
//! The engine only runs: whoever wants to judge a run as it happens hands in a
//! [`Watch`], which sees every event and concludes at the end. The engine never
//! knows what a verdict is, nor how a run is shown.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::answerer::Answerers;
use crate::durable::{LogFile, Recovery};
use crate::log::LogHeader;
use crate::projection::Projection;
use crate::protocol::BrokerStatus;
use crate::record::{Hashes, Observer, Recorder};
use crate::scenario::{Clock, Scenario};
use crate::sim::engine::output::{Limit, Output};
use crate::sim::engine::queue::Chooser;
pub use crate::sim::engine::recording::JOURNAL_AFTER;
use crate::sim::engine::recording::RunRecorder;
use crate::sim::engine::strategy::{self, Counting, Strategy};
use crate::sim::engine::world::World;
use crate::wire::{Endpoint, ProcessFailure};

pub use crate::sim::engine::world::PANIC_AFTER_ENV;

/// How to run.
pub struct RunOptions {
    /// The seed of every random draw.
    pub seed: u64,
    /// The clock.
    pub clock: Clock,
    /// The scheduling strategy (virtual clock).
    pub strategy: Strategy,
    /// Keep every event in memory (for timelines, traces and tests; the verdict of
    /// a virtual-clock run does not need them, a real-clock run keeps them anyway).
    pub keep_events: bool,
    /// Also write the log to this durable file, as it happens (SPEC §4.1); it
    /// holds the run's header ([`crate::sim::engine::log_file::log_header`])
    /// already.
    pub log: Option<LogFile>,
    /// The scenario answerers that are the program's own (default: none; every
    /// answerer acts on its policy).
    pub answerers: Answerers,
    /// Observers that see every event as it is recorded, on either clock
    /// (`--chrome-trace` and `--timeline` stream through them; see
    /// [`crate::sim::engine::tap::Tap`] to take one back after the run).
    pub taps: Vec<Box<dyn Observer>>,
    /// The broker is this outside process instead of asksim's (PROTOCOL.md;
    /// virtual clock only).
    pub broker: Option<Endpoint>,
    /// A virtual-clock run that has recorded this many events goes on
    /// recording through a journal, on a thread of its own beside the world
    /// ([`crate::sim::engine::recording`]: the same log, hashes and verdict);
    /// `None` records in place to the end. [`RunOptions::new`] gives
    /// [`JOURNAL_AFTER`]; sweeps, `explore` and `shrink`, which keep every
    /// core busy with runs of their own, give `None`.
    pub journal_after: Option<u64>,
    /// Which of the log's hashes the run computes. [`RunOptions::new`] gives
    /// [`Hashes::TraceAndOrder`], the two a run's summary reports
    /// (`trace_hash`, `order_hash`; `asksim run` without `--json` prints the
    /// first alone and asks for [`Hashes::Trace`]); a sweep asks for [`Hashes::All`], since
    /// it counts distinct timings too. Each hash is a SHA-256 over every
    /// event's line (the three were a tenth of a large run's CPU); one not
    /// computed is the empty string in [`crate::record::Recording`].
    pub hashes: Hashes,
}

impl RunOptions {
    /// A run under `seed` on `clock` with the scenario's strategy, keeping events.
    pub fn new(scenario: &Scenario, seed: u64, clock: Clock) -> RunOptions {
        RunOptions {
            seed,
            clock,
            strategy: scenario.explore.unwrap_or_default(),
            keep_events: true,
            log: None,
            taps: Vec::new(),
            broker: None,
            answerers: Answerers::default(),
            journal_after: Some(JOURNAL_AFTER),
            hashes: Hashes::TraceAndOrder,
        }
    }
}

/// The recorder's one observer: the watcher (virtual clock) and the taps.
struct Observers<W> {
    watch: Option<W>,
    taps: Vec<Box<dyn Observer>>,
}

impl<W: Watch> Observer for Observers<W> {
    fn event(&mut self, event: &crate::event::Event) {
        if let Some(watch) = &mut self.watch {
            watch.event(event);
        }
        for tap in &mut self.taps {
            tap.event(event);
        }
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// What watches a virtual-clock run as it is recorded, and concludes at its end
/// from the broker's final state and the projection the recorder folded.
pub trait Watch: Observer + Sized + 'static {
    /// What it concludes.
    type Verdict;
    /// The conclusion, at the end of the run.
    fn conclude(self, broker: &BrokerStatus, projection: &Projection) -> Self::Verdict;
}

/// The chooser `options` asks for: PCT places its change points among the
/// choices a `fifo` run of the scenario makes.
pub fn chooser(scenario: &Scenario, options: &RunOptions) -> Box<dyn Chooser> {
    let steps = match options.strategy {
        Strategy::Pct { .. } => estimate_steps(
            scenario,
            options.seed,
            options.broker.as_ref(),
            &options.answerers,
        ),
        _ => 0,
    };
    strategy::chooser(options.strategy, options.seed, steps)
}

/// Runs `scenario` as `options` say under `chooser`, with `watch` (if any)
/// watching a virtual-clock run. Never panics: a panic inside the run, or inside
/// the watcher, comes back as [`Output::crashed`]; an error writing the log comes
/// back as `Err`.
pub fn run_watched<W: Watch>(
    scenario: &Scenario,
    mut options: RunOptions,
    chooser: &mut dyn Chooser,
    watch: Option<W>,
) -> std::io::Result<Output<W::Verdict>> {
    // The wall clock is read only to report wall_s; nothing in the run sees it.
    let wall = std::time::Instant::now();
    let header = crate::sim::engine::log_file::log_header(scenario, options.seed, options.clock);
    let keep = options.keep_events || options.clock == Clock::Real;
    let mut recorder = Recorder::new(&header, scenario.limits.events_max, keep).with_hashes(options.hashes);
    let log = options.log.take();
    if let Some(log) = &log {
        recorder.sink_to(log.appender());
    }
    observe(&mut recorder, &mut options, watch);
    let (mut output, written) = match options.clock {
        Clock::Virtual => simulate::<W>(scenario, &options, recorder, chooser, None),
        Clock::Real if options.broker.is_some() || scenario.has_process_answerers() => {
            (outside_on_the_real_clock(&options, recorder), Ok(()))
        }
        Clock::Real => {
            crate::sim::engine::real_clock::run(scenario, options.seed, recorder, log, &options.answerers)
        }
    };
    output.broker = options.broker.clone();
    output.wall_s = wall.elapsed().as_secs_f64();
    written.map(|()| output)
}

/// Continues the unfinished run that `recovery` read back (SPEC §4.1 `run FILE
/// --log PATH --resume`), on `options.clock`: the crash is a process loss at the
/// log's last instant, the restart of SPEC §3.9 follows at once (recorded as
/// recovered), scheduled events after that instant fire at their times, and the
/// log goes on in the same file. `watch` and the taps see the log's earlier
/// events first. Final results of scripts that ended before the crash are not in
/// the log, so they are not in the output.
pub fn resume_watched<W: Watch>(
    scenario: &Scenario,
    mut options: RunOptions,
    recovery: Recovery,
    chooser: &mut dyn Chooser,
    watch: Option<W>,
) -> std::io::Result<Output<W::Verdict>> {
    let wall = std::time::Instant::now();
    let Recovery {
        mut recorder,
        log,
        last_t,
        torn,
        ..
    } = recovery;
    recorder.narrow_hashes(options.hashes);
    observe(&mut recorder, &mut options, watch);
    let (mut output, written) = match options.clock {
        Clock::Virtual => {
            let from = Some((crate::protocol::nanos(last_t), torn.map(|t| t.line as u64)));
            simulate::<W>(scenario, &options, recorder, chooser, from)
        }
        Clock::Real if options.broker.is_some() || scenario.has_process_answerers() => {
            (outside_on_the_real_clock(&options, recorder), Ok(()))
        }
        Clock::Real => {
            let torn_line = torn.map(|t| t.line as u64);
            crate::sim::engine::real_clock::resume(
                scenario,
                options.seed,
                recorder,
                log,
                (last_t, torn_line),
                &options.answerers,
            )
        }
    };
    output.broker = options.broker.clone();
    output.wall_s = wall.elapsed().as_secs_f64();
    written.map(|()| output)
}

/// Hands the recorder's events to the watcher (virtual clock) and the taps.
fn observe<W: Watch>(recorder: &mut Recorder, options: &mut RunOptions, watch: Option<W>) {
    let watch = watch.filter(|_| options.clock == Clock::Virtual);
    if watch.is_some() || !options.taps.is_empty() {
        let taps = std::mem::take(&mut options.taps);
        recorder.observe(Box::new(Observers { watch, taps }));
    }
}

/// The output of a real-clock run asked of an outside implementation: none runs.
fn outside_on_the_real_clock<V>(options: &RunOptions, recorder: Recorder) -> Output<V> {
    let mut output = crate::sim::engine::real_clock::empty_output(options.seed, recorder);
    output.process_failed = Some(Box::new(ProcessFailure {
        who: "broker or answerer".into(),
        command: options
            .broker
            .as_ref()
            .map(Endpoint::shell_text)
            .unwrap_or_default(),
        reason: "implementations outside asksim run on the virtual clock only (PROTOCOL.md)".into(),
        sent: None,
        line: None,
        stderr: String::new(),
    }));
    output
}

thread_local! {
    /// Whether this thread is inside a run, whose panics are caught and reported.
    static IN_RUN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, catching a panic as the run's crash.
pub(crate) fn caught<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let was = IN_RUN.with(|r| r.replace(true));
    let result =
        catch_unwind(AssertUnwindSafe(f)).map_err(|panic| crate::actors::panic_message(panic.as_ref()));
    IN_RUN.with(|r| r.set(was));
    result
}

/// Keeps the default panic hook quiet for panics inside a run: they are caught
/// and reported as the run's crash (with the reproduce command) instead.
/// Stays quiet too for the panic of a `print!` to a closed stdout (a reader such
/// as `head` went away): the command line ends on it with the exit code a shell
/// gives a process killed by SIGPIPE.
pub fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !IN_RUN.with(|r| r.get()) && stdout_failure(info.payload_as_str()).is_none() {
            previous(info);
        }
    }));
}

/// The error of a panic std raised for printing to stdout (`print!` on a
/// closed pipe, a full disk), if the message is one.
pub fn stdout_failure(message: Option<&str>) -> Option<&str> {
    message?.strip_prefix("failed printing to stdout: ")
}

/// Whether a panic's message is std's for printing to a closed stdout.
pub fn is_closed_stdout(message: Option<&str>) -> bool {
    stdout_failure(message).is_some_and(is_closed_pipe)
}

/// Whether a failure to print (from [`stdout_failure`]) is a reader that
/// closed the pipe.
pub fn is_closed_pipe(error: &str) -> bool {
    error.contains("Broken pipe")
}

/// The virtual-clock run: the world under `chooser`, a panic caught; resumed
/// after a crash at the first of `resumed` (with the torn line recovery
/// dropped, if any) when given.
fn simulate<W: Watch>(
    scenario: &Scenario,
    options: &RunOptions,
    recorder: Recorder,
    chooser: &mut dyn Chooser,
    resumed: Option<(crate::protocol::Nanos, Option<u64>)>,
) -> (Output<W::Verdict>, std::io::Result<()>) {
    let jitter_max_s = scenario.jitter_max_s.unwrap_or(0.0);
    let mut counting = Counting {
        inner: chooser,
        choices: 0,
    };
    let mut world = World::new(
        scenario,
        options.seed,
        jitter_max_s,
        RunRecorder::new(recorder, options.journal_after),
        options.answerers.clone(),
    )
    .with_broker(options.broker.clone());
    let (limit, crashed) = drive(&mut world, &mut counting, resumed);
    let crashed = crashed.or_else(|| world.recording_failure());
    let virtual_s = crate::protocol::seconds(world.now());
    // The world reads the broker's open calls only; what it closed stays unknown.
    let broker = BrokerStatus {
        open: world.open_calls(),
        closed: None,
    };
    let process_failed = world.take_failure();
    let failed = crashed.is_some() || process_failed.is_some();
    world.end(crate::sim::engine::output::end_reason(limit, failed));
    let finals = world.take_finals();
    let mut recorder = world.into_recorder();
    let watch = recorder
        .take_observer()
        .and_then(|observer| observer.into_any().downcast::<Observers<W>>().ok())
        .and_then(|observers| observers.watch);
    let (recording, written) = recorder.finish();
    let (checked, crashed) = match watch {
        Some(watch) if crashed.is_none() => match caught(|| watch.conclude(&broker, &recording.projection)) {
            Ok(checked) => (Some(checked), None),
            Err(message) => (None, Some(format!("the analysis panicked: {message}"))),
        },
        _ => (None, crashed),
    };
    let output = Output {
        seed: options.seed,
        clock: options.clock,
        strategy: options.strategy,
        recording,
        finals,
        open: broker.open,
        closed: broker.closed,
        limit,
        crashed,
        process_failed,
        broker: options.broker.clone(),
        virtual_s,
        wall_s: 0.0,
        choices: counting.choices,
        checked,
    };
    (output, written)
}

/// Starts (or resumes) `world` and runs it to its end under `chooser`: the limit
/// that stopped it, or the message of the panic that did.
fn drive(
    world: &mut World,
    chooser: &mut dyn Chooser,
    resumed: Option<(crate::protocol::Nanos, Option<u64>)>,
) -> (Option<Limit>, Option<String>) {
    let panic_after = std::env::var(PANIC_AFTER_ENV).ok().and_then(|n| n.parse().ok());
    let ran = caught(|| {
        match resumed {
            None => world.start(),
            Some((at, torn_line)) => world.resume(at, torn_line),
        }
        world.run(chooser, panic_after)
    });
    match ran {
        Ok(limit) => (limit, None),
        Err(message) => (None, Some(message)),
    }
}

/// How many choices a `fifo` run of the scenario makes: where PCT places its
/// change points.
fn estimate_steps(scenario: &Scenario, seed: u64, broker: Option<&Endpoint>, answerers: &Answerers) -> u64 {
    let options = RunOptions {
        seed,
        clock: Clock::Virtual,
        strategy: Strategy::Fifo,
        keep_events: false,
        log: None,
        taps: Vec::new(),
        broker: broker.cloned(),
        answerers: answerers.clone(),
        journal_after: None,
        hashes: Hashes::None,
    };
    let header = LogHeader::new(&scenario.name, seed);
    // Nobody reads this run's log: no hash, so no event is even serialised.
    let recorder = Recorder::new(&header, scenario.limits.events_max, false).with_hashes(options.hashes);
    let mut fifo = strategy::Fifo;
    simulate::<Unwatched>(scenario, &options, recorder, &mut fifo, None)
        .0
        .choices
}

/// No watcher: a run nobody judges as it happens (PCT's step estimate).
pub struct Unwatched;

impl Observer for Unwatched {
    fn event(&mut self, _event: &crate::event::Event) {}

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

impl Watch for Unwatched {
    type Verdict = ();

    fn conclude(self, _: &BrokerStatus, _: &Projection) {}
}
