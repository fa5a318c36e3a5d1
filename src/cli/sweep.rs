//! `asksim sweep` and `asksim merge`: many seeds, and shards folded back.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{ClockArg, EXIT_BAD_INPUT, progress_bar};
use crate::scenario::{self, Strategy};
use crate::sim::hunt::sweep::JOBS_MAX;

/// `asksim sweep`'s arguments.
#[derive(clap::Args, Debug)]
pub(super) struct SweepArgs {
    /// The scenario file.
    file: PathBuf,
    /// The seeds: `A..B` (B excluded) or `A..=B`, at most 10,000,000 of them
    /// (split a longer hunt into ranges, or shards).
    #[arg(long)]
    seeds: crate::sim::hunt::seeds::SeedRange,
    /// Worker threads, 1 to 256 (default: the number of cores). 0 is bad input,
    /// not "as many as you like": leave the flag out for that.
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=JOBS_MAX as u64))]
    jobs: Option<usize>,
    /// The clock (default: the scenario's `clock`).
    #[arg(long, value_enum)]
    clock: Option<ClockArg>,
    /// The scheduling strategy: random, pct:D or fifo (default: the scenario's `explore`, else random).
    #[arg(long, value_name = "STRATEGY")]
    explore: Option<Strategy>,
    /// Check invariants and limits only, ignoring the scenario's `expect`.
    #[arg(long)]
    invariants_only: bool,
    /// Fail (exit 1) if one of these races was never reached (names as in the
    /// report's `coverage`, comma-separated).
    #[arg(long, value_name = "RACE,…", value_delimiter = ',')]
    require: Vec<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Run only shard K of N, counted from 0: the i-th seed of the range is in
    /// shard i mod N. `auto/N` takes K from JOB_COMPLETION_INDEX (Kubernetes)
    /// or SLURM_ARRAY_TASK_ID (Slurm).
    #[arg(long, value_name = "K/N")]
    shard: Option<crate::sim::hunt::seeds::ShardArg>,
    /// The broker is this outside process (PROTOCOL.md), started in every life
    /// of every run: a program and its arguments, split as a shell would.
    #[arg(long, value_name = "CMD", value_parser = crate::wire::Endpoint::parse)]
    broker_cmd: Option<crate::wire::Endpoint>,
    /// Write every seed's result and the shard's totals here (JSON Lines), for
    /// `asksim merge`.
    #[arg(long, value_name = "PATH")]
    out: Option<PathBuf>,
}

/// `asksim merge`'s arguments.
#[derive(clap::Args, Debug)]
pub(super) struct MergeArgs {
    /// Every shard's file, each once.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// A sweep's scenario (and its text) and shard, its files and `--require`
/// checked; or the exit code of bad input.
fn inputs(
    args: &SweepArgs,
) -> Result<(scenario::Scenario, String, crate::sim::hunt::seeds::Shard), ExitCode> {
    let bad = |error: &dyn std::fmt::Display| {
        eprintln!("{error}");
        ExitCode::from(EXIT_BAD_INPUT)
    };
    let files = [
        ("FILE", Some(args.file.as_path())),
        ("--out", args.out.as_deref()),
    ];
    super::distinct_files("sweep", &files)?;
    check_required(&args.require).map_err(|error| bad(&format!("asksim sweep: {error}")))?;
    let (scenario, text) = scenario::load_text(&args.file).map_err(|error| bad(&error))?;
    Ok((scenario, text, resolve_shard(args.shard)?))
}

pub(super) fn sweep(args: &SweepArgs) -> ExitCode {
    use crate::sim::hunt::sweep::SweepOptions;
    let file = args.file.as_path();
    let (scenario, text, shard) = match inputs(args) {
        Ok(inputs) => inputs,
        Err(code) => return code,
    };
    let clock = args.clock.map_or(scenario.clock, ClockArg::clock);
    let outside = args.broker_cmd.is_some() || scenario.has_process_answerers();
    let virtual_only = [
        (outside, super::actor::OUTSIDE_VIRTUAL_ONLY),
        (args.explore.is_some(), super::EXPLORE_VIRTUAL_ONLY),
    ];
    if let Err(code) = super::virtual_clock_only("sweep", clock, args.clock, &virtual_only)
        .and_then(|()| super::actor::outside_checked("sweep", args.broker_cmd.as_ref(), Some(&scenario)))
    {
        return code;
    }
    let options = SweepOptions {
        file: file.display().to_string(),
        seeds: args.seeds,
        jobs: args
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        clock,
        strategy: super::strategy("sweep", clock, args.explore, &scenario),
        invariants_only: args.invariants_only,
        shard,
        answerers: Default::default(),
        broker: args.broker_cmd.clone(),
    };
    let json = args.json;
    let bar = progress_bar(
        shard.len(args.seeds),
        "{bar:40} {pos}/{len} seeds {elapsed_precise} eta {eta}",
    );
    let progress = |done| bar.set_position(done);
    let report = match &args.out {
        None => crate::sim::hunt::sweep::sweep(&scenario, &options, progress),
        Some(out) => {
            match crate::sim::hunt::shard::sweep_to_file(&scenario, &text, &options, out, progress) {
                Ok(report) => report,
                Err(error) => {
                    bar.finish_and_clear();
                    eprintln!("asksim sweep: {error}");
                    return ExitCode::from(EXIT_BAD_INPUT);
                }
            }
        }
    };
    bar.finish_and_clear();
    let unreached = report.coverage.missing(&args.require);
    let printed = print_sweep(
        &report,
        Printed {
            shard: (shard != crate::sim::hunt::seeds::Shard::WHOLE).then_some(shard),
            required_not_reached: (!args.require.is_empty()).then_some(unreached.as_slice()),
        },
        json,
    );
    if unreached.is_empty() {
        return printed;
    }
    eprintln!(
        "asksim sweep: required races never reached: {} (seeds {})",
        unreached.join(", "),
        report.seeds
    );
    ExitCode::FAILURE
}

/// The shard `--shard` names (`auto/N` read from the environment), or exit 2.
fn resolve_shard(
    arg: Option<crate::sim::hunt::seeds::ShardArg>,
) -> Result<crate::sim::hunt::seeds::Shard, ExitCode> {
    match crate::sim::hunt::seeds::resolve(arg, |name| std::env::var_os(name)) {
        Ok((shard, note)) => {
            if let Some(note) = note {
                eprintln!("asksim sweep: {note}");
            }
            Ok(shard)
        }
        Err(error) => {
            eprintln!("asksim sweep: --shard: {error}");
            Err(ExitCode::from(EXIT_BAD_INPUT))
        }
    }
}

/// The `--require` names, each a race of the report's `coverage`, or why not.
fn check_required(required: &[String]) -> Result<(), String> {
    use crate::sim::judge::coverage::RACES;
    match required.iter().find(|r| !RACES.contains(&r.as_str())) {
        None => Ok(()),
        Some(bad) => Err(format!("--require: {bad:?} is not a race ({})", RACES.join(", "))),
    }
}

/// What a sweep prints besides its report: the shard it ran, if not the whole
/// range, and the `--require`d races it never reached, if any were required.
#[derive(Default)]
struct Printed<'a> {
    shard: Option<crate::sim::hunt::seeds::Shard>,
    required_not_reached: Option<&'a [&'a str]>,
}

/// A sweep's report as `sweep` prints it (a shard's also names its K/N), and the
/// exit code: 1 if any seed failed.
fn print_sweep(report: &crate::sim::hunt::sweep::SweepReport, printed: Printed, json: bool) -> ExitCode {
    /// The report, then `"required_not_reached"` when `--require` was given,
    /// then `"shard": "K/N"` for a shard, last (flatten, because `seeds.to` is
    /// a u128 that a `serde_json::Value` cannot hold). A report without either
    /// is the report alone, as `merge` prints it.
    #[derive(serde::Serialize)]
    struct Json<'a> {
        #[serde(flatten)]
        report: &'a crate::sim::hunt::sweep::SweepReport,
        #[serde(skip_serializing_if = "Option::is_none")]
        required_not_reached: Option<&'a [&'a str]>,
        #[serde(skip_serializing_if = "Option::is_none")]
        shard: Option<String>,
    }
    let text = match (json, printed.shard) {
        (false, None) => crate::sim::hunt::sweep::render(report),
        (false, Some(shard)) => format!(
            "{}  shard {shard}: {} of the range's {} seeds\n",
            crate::sim::hunt::sweep::render(report),
            report.runs,
            report.seeds.len()
        ),
        (true, shard) => {
            let json = Json {
                report,
                required_not_reached: printed.required_not_reached,
                shard: shard.map(|s| s.to_string()),
            };
            serde_json::to_string(&json).expect("the report serialises") + "\n"
        }
    };
    print!("{text}");
    if report.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

pub(super) fn merge(args: &MergeArgs) -> ExitCode {
    match crate::sim::hunt::merge::merge(&args.paths) {
        Ok(report) => print_sweep(&report, Printed::default(), args.json),
        Err(error) => {
            eprintln!("asksim merge: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}
