//! `asksim explore`: every delivery order of a small scenario.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{EXIT_BAD_INPUT, load, progress_bar};
use crate::sim::hunt::explore::{self, ExploreOptions, MAX_S_DEFAULT, MAX_S_MAX, SCHEDULES_MAX_DEFAULT};

/// `asksim explore`'s arguments.
#[derive(clap::Args, Debug)]
pub(super) struct ExploreArgs {
    /// The scenario file.
    file: PathBuf,
    /// Enumerate every delivery order (the only mode so far; required so a
    /// bounded or sampled mode can come later without changing what this means).
    #[arg(long, required = true)]
    all: bool,
    /// Stop after this many schedules (complete ones and pruned ones).
    #[arg(long, value_name = "N", default_value_t = SCHEDULES_MAX_DEFAULT,
          value_parser = clap::value_parser!(u64).range(1..))]
    max: u64,
    /// Stop after this many seconds of wall time (checked before each schedule
    /// after the first) and report what the schedules run so far found.
    #[arg(long, value_name = "S", allow_negative_numbers = true, default_value_t = MAX_S_DEFAULT)]
    max_s: f64,
    /// The seed latencies and jitter draw from (default: the scenario's `seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// The broker is this outside process (PROTOCOL.md), started in every life
    /// of every run: a program and its arguments, split as a shell would.
    #[arg(long, value_name = "CMD", value_parser = crate::wire::Endpoint::parse)]
    broker_cmd: Option<crate::wire::Endpoint>,
}

pub(super) fn explore(args: &ExploreArgs) -> ExitCode {
    let scenario = match load(&args.file) {
        Ok(scenario) => scenario,
        Err(code) => return code,
    };
    if !(args.max_s.is_finite() && (0.0..=MAX_S_MAX).contains(&args.max_s)) {
        eprintln!(
            "asksim explore: --max-s: expected a number of seconds from 0 to {MAX_S_MAX}, got {}",
            args.max_s
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let broker = args.broker_cmd.as_ref();
    if let Err(code) = super::actor::outside_checked("explore", broker, Some(&scenario)) {
        return code;
    }
    let seed = args.seed.unwrap_or(scenario.seed);
    let file = args.file.display().to_string();
    let bar = progress_bar(
        args.max,
        "{spinner} {pos} schedules, {msg} {elapsed_precise} (--max-s {prefix})",
    );
    bar.set_prefix(args.max_s.to_string());
    bar.set_message("0 pruned");
    // A tick of its own: one schedule of a large scenario can take long, and the
    // bar must show that the search is alive.
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let options = ExploreOptions {
        max_s: Some(args.max_s),
        broker: args.broker_cmd.clone(),
        ..ExploreOptions::new(seed, args.max)
    };
    let report = explore::explore(&scenario, &file, options, |p| {
        bar.set_position(p.schedules);
        bar.set_message(format!("{} pruned", p.pruned));
    });
    bar.finish_and_clear();
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&report).expect("the report serialises")
        );
    } else {
        print!("{}", explore::render(&report));
    }
    if report.first_failure.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
