//! `asksim explore`: every delivery order of a small scenario.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{load, progress_bar};
use crate::sim::hunt::explore::{self, ExploreOptions, SCHEDULES_MAX_DEFAULT};

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
    let seed = args.seed.unwrap_or(scenario.seed);
    let file = args.file.display().to_string();
    let bar = progress_bar(
        args.max,
        "{spinner} {pos} schedules ({per_sec}) {elapsed_precise}",
    );
    let options = ExploreOptions {
        broker: args.broker_cmd.clone(),
        ..ExploreOptions::new(seed, args.max)
    };
    let report = explore::explore(&scenario, &file, options, |n| bar.set_position(n));
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
