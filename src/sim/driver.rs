//! One run of a scenario: on the virtual clock, the simulated [`World`] under a
//! scheduling strategy; on the real clock, the actor runtime
//! (`crate::actors::scenario`). Either way the same logic runs, the same log is
//! recorded, and a panic anywhere in the run ends it as `crashed` instead of
//! taking the tool down (SPEC §6 "Crashes").

use std::collections::BTreeMap;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::Value;

use crate::log::LogHeader;
use crate::projection::Projection;
use crate::record::{Recorder, Recording};
use crate::scenario::{Clock, Scenario};
use crate::sim::analysis::{Analysis, Checked};
use crate::sim::invariants::VIRTUAL_TOLERANCE_S;
use crate::sim::queue::Chooser;
use crate::sim::strategy::{self, Counting, Strategy};
use crate::sim::world::{Limit, World};

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
    /// Also write the log here, as it happens.
    pub log: Option<Box<dyn Write + Send>>,
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
        }
    }
}

/// What a run produced, before any analysis.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The seed the run used.
    pub seed: u64,
    /// The clock it ran on.
    pub clock: Clock,
    /// The scheduling strategy it ran under.
    pub strategy: Strategy,
    /// The recording: hashes, the projection and (when kept) every event.
    pub recording: Recording,
    /// Final results of the scripts that ended, by agent.
    pub finals: BTreeMap<String, Value>,
    /// Calls still open at the end: callId → `"waiting"` or `"pending"`.
    pub open: BTreeMap<String, &'static str>,
    /// The limit that stopped the run, if one did.
    pub limit: Option<Limit>,
    /// The panic that ended the run, if one did.
    pub crashed: Option<String>,
    /// Seconds on the run's clock until nothing changed any more.
    pub virtual_s: f64,
    /// Seconds of wall time the run took.
    pub wall_s: f64,
    /// Scheduling choices the run made (deliveries picked among ties).
    pub choices: u64,
    /// The streaming analysis's verdict (virtual clock; a real-clock run is
    /// checked from its kept events afterwards).
    pub checked: Option<Checked>,
}

impl RunOutput {
    /// Every event, when they were kept.
    pub fn events(&self) -> &[crate::event::Event] {
        &self.recording.events
    }

    /// The projection folded from the run's log.
    pub fn projection(&self) -> &Projection {
        &self.recording.projection
    }
}

/// Runs `scenario` under `seed` on `clock`, with its own strategy, keeping every
/// event. Never panics: a panic inside the run comes back as
/// [`RunOutput::crashed`].
pub fn run(scenario: &Scenario, seed: u64, clock: Clock) -> std::io::Result<RunOutput> {
    run_options(scenario, RunOptions::new(scenario, seed, clock))
}

/// Runs `scenario` as `options` say. Never panics: a panic inside the run comes
/// back as [`RunOutput::crashed`]; an error writing the log comes back as `Err`.
pub fn run_options(scenario: &Scenario, options: RunOptions) -> std::io::Result<RunOutput> {
    let steps = match options.strategy {
        Strategy::Pct { .. } => estimate_steps(scenario, options.seed),
        _ => 0,
    };
    let mut chooser = strategy::chooser(options.strategy, options.seed, steps);
    run_with(scenario, options, chooser.as_mut())
}

/// Runs under a given chooser (a replayed schedule, an exploration).
pub fn run_with(
    scenario: &Scenario,
    mut options: RunOptions,
    chooser: &mut dyn Chooser,
) -> std::io::Result<RunOutput> {
    // The wall clock is read only to report wall_s; nothing in the run sees it.
    let wall = std::time::Instant::now();
    let header = LogHeader::new(&scenario.name, options.seed);
    let keep = options.keep_events || options.clock == Clock::Real;
    let mut recorder = Recorder::new(&header, scenario.limits.events_max, keep);
    if let Some(log) = options.log.take() {
        recorder.write_to(log, &header);
    }
    let (mut output, written) = match options.clock {
        Clock::Virtual => {
            recorder.observe(Box::new(Analysis::new(scenario, VIRTUAL_TOLERANCE_S)));
            simulate(scenario, &options, recorder, chooser)
        }
        Clock::Real => crate::sim::real_clock::run(scenario, options.seed, recorder),
    };
    output.wall_s = wall.elapsed().as_secs_f64();
    written.map(|()| output)
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
        if !IN_RUN.with(|r| r.get()) && !is_closed_stdout(info.payload_as_str()) {
            previous(info);
        }
    }));
}

/// Whether a panic's message is std's for printing to a closed stdout.
pub fn is_closed_stdout(message: Option<&str>) -> bool {
    message.is_some_and(|m| m.starts_with("failed printing to stdout") && m.contains("Broken pipe"))
}

/// The environment variable that makes a simulated run panic after that many
/// deliveries: asksim's own fault injection, to test how a crash is reported.
pub const PANIC_AFTER_ENV: &str = "ASKSIM_PANIC_AFTER_DELIVERIES";

/// The virtual-clock run: the world under `chooser`, a panic caught.
fn simulate(
    scenario: &Scenario,
    options: &RunOptions,
    recorder: Recorder,
    chooser: &mut dyn Chooser,
) -> (RunOutput, std::io::Result<()>) {
    let jitter_max_s = scenario.jitter_max_s.unwrap_or(0.0);
    let mut counting = Counting {
        inner: chooser,
        choices: 0,
    };
    let mut world = World::new(scenario, options.seed, jitter_max_s, recorder);
    let panic_after = std::env::var(PANIC_AFTER_ENV).ok().and_then(|n| n.parse().ok());
    let ran = caught(|| {
        world.start();
        world.run(&mut counting, panic_after)
    });
    let (limit, crashed) = match ran {
        Ok(limit) => (limit, None),
        Err(message) => (None, Some(message)),
    };
    let virtual_s = crate::protocol::seconds(world.now());
    let open = world.open_calls();
    let finals = world.take_finals();
    let mut recorder = world.into_recorder();
    let analysis = Analysis::from_observer(recorder.take_observer());
    let (recording, written) = recorder.finish();
    let (checked, crashed) = match analysis {
        Some(analysis) if crashed.is_none() => {
            match caught(|| analysis.finish(&open, &recording.projection)) {
                Ok(checked) => (Some(checked), None),
                Err(message) => (None, Some(format!("the analysis panicked: {message}"))),
            }
        }
        _ => (None, crashed),
    };
    let output = RunOutput {
        seed: options.seed,
        clock: options.clock,
        strategy: options.strategy,
        recording,
        finals,
        open,
        limit,
        crashed,
        virtual_s,
        wall_s: 0.0,
        choices: counting.choices,
        checked,
    };
    (output, written)
}

/// How many choices a `fifo` run of the scenario makes: where PCT places its
/// change points.
fn estimate_steps(scenario: &Scenario, seed: u64) -> u64 {
    let options = RunOptions {
        seed,
        clock: Clock::Virtual,
        strategy: Strategy::Fifo,
        keep_events: false,
        log: None,
    };
    let header = LogHeader::new(&scenario.name, seed);
    let recorder = Recorder::new(&header, scenario.limits.events_max, false);
    let mut fifo = strategy::Fifo;
    simulate(scenario, &options, recorder, &mut fifo).0.choices
}
