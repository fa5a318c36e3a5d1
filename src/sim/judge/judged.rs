//! A judged run: the engine's run with the streaming analysis watching it, so the
//! output carries the invariant checker's verdict and the race coverage. This is
//! what `asksim run`, sweeps and every hunt start from.

use crate::scenario::{Clock, Scenario};
use crate::sim::engine::driver::{self, RunOptions};
use crate::sim::engine::output::Output;
use crate::sim::engine::queue::Chooser;
use crate::sim::judge::analysis::{Analysis, Checked};
use crate::sim::judge::invariants::VIRTUAL_TOLERANCE_S;

/// What a judged run produced: the engine's output with the analysis's verdict.
pub type RunOutput = Output<Checked>;

/// Runs `scenario` under `seed` on `clock`, with its own strategy, keeping every
/// event. Never panics: a panic inside the run comes back as
/// [`Output::crashed`].
pub fn run(scenario: &Scenario, seed: u64, clock: Clock) -> std::io::Result<RunOutput> {
    run_options(scenario, RunOptions::new(scenario, seed, clock))
}

/// Runs `scenario` as `options` say. Never panics: a panic inside the run comes
/// back as [`Output::crashed`]; an error writing the log comes back as `Err`.
pub fn run_options(scenario: &Scenario, options: RunOptions) -> std::io::Result<RunOutput> {
    let mut chooser = driver::chooser(scenario, &options);
    run_with(scenario, options, chooser.as_mut())
}

/// Runs under a given chooser (a replayed schedule, an exploration).
pub fn run_with(
    scenario: &Scenario,
    options: RunOptions,
    chooser: &mut dyn Chooser,
) -> std::io::Result<RunOutput> {
    let watch = Analysis::new(scenario, VIRTUAL_TOLERANCE_S);
    driver::run_watched(scenario, options, chooser, Some(watch))
}
