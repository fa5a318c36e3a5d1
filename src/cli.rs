//! The `asksim` command line. Parses arguments with clap and calls the library;
//! exit codes follow SPEC §6: 0 success, 1 a failed run, 2 bad input.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use std::path::PathBuf;

use clap::{ArgGroup, Parser, Subcommand, ValueEnum};

use crate::event::Event;
use crate::scenario::{self, Clock, Strategy};
use crate::sim::driver::{self, RunOptions};
use crate::sim::report::{Summary, render_table_with_timelines, summarise};
use crate::tool::{Mode, ToolConfig};

/// Exit code for bad input: a scenario, arguments or a path.
pub const EXIT_BAD_INPUT: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "asksim",
    version,
    about = "Reference runtime and deterministic simulator of ask_user_question"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one scenario and print its summary; exit 1 if an invariant, an
    /// expectation or a limit fails.
    Run {
        /// The scenario file.
        file: PathBuf,
        /// The seed (default: the scenario's `seed`).
        #[arg(long)]
        seed: Option<u64>,
        /// The clock (default: the scenario's `clock`).
        #[arg(long, value_enum)]
        clock: Option<ClockArg>,
        /// The scheduling strategy: random, pct:D or fifo (default: the scenario's `explore`, else random).
        #[arg(long, value_name = "STRATEGY")]
        explore: Option<Strategy>,
        /// Write the event log (JSON Lines) here.
        #[arg(long, value_name = "PATH")]
        log: Option<PathBuf>,
        /// Write the run as Chrome Trace Event JSON here (opens in Perfetto).
        #[arg(long, value_name = "PATH")]
        chrome_trace: Option<PathBuf>,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
        /// Run twice and fail on any difference, naming the first differing event.
        #[arg(long)]
        check_determinism: bool,
        /// Also print one readable line per event, after the summary (with
        /// `--json`, as the array of strings `timeline`).
        #[arg(long)]
        timeline: bool,
    },
    /// Run one scenario under many seeds in parallel; list every failing seed
    /// with its reproduce command; exit 1 if any fails.
    Sweep {
        /// The scenario file.
        file: PathBuf,
        /// The seeds: `A..B` (B excluded) or `A..=B`.
        #[arg(long)]
        seeds: crate::sim::sweep::SeedRange,
        /// Worker threads (default: the number of cores).
        #[arg(long)]
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
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Run only shard K of N, counted from 0: the i-th seed of the range is in
        /// shard i mod N. `auto/N` takes K from JOB_COMPLETION_INDEX (Kubernetes)
        /// or SLURM_ARRAY_TASK_ID (Slurm).
        #[arg(long, value_name = "K/N")]
        shard: Option<crate::sim::shard::ShardArg>,
        /// Write every seed's result and the shard's totals here (JSON Lines), for
        /// `asksim merge`.
        #[arg(long, value_name = "PATH")]
        out: Option<PathBuf>,
    },
    /// Fold the files of a sharded sweep (`sweep --shard K/N --out PATH`) into the
    /// report one sweep over the same seeds prints; exit 1 if any seed failed.
    Merge {
        /// Every shard's file, each once.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Reduce a failing scenario to a 1-minimal one that fails the same way, write
    /// it and print the command that reproduces it; exit 2 if it does not fail.
    Shrink(ShrinkArgs),
    /// Fold an event log into the userQuestions projection, print every
    /// question's state, and re-check the invariants.
    Replay {
        /// The log (JSON Lines, as written by `run --log`).
        log: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// A projection snapshot cache: used when its stateVersion is this
        /// code's, refolded otherwise, and written back.
        #[arg(long, value_name = "PATH")]
        snapshot: Option<PathBuf>,
    },
    /// Parse and check scenario files; print nothing but errors.
    Validate {
        /// The scenario files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print the model-facing tool definition (byte-stable), or the JSON Schema of
    /// scenario files.
    #[command(group(ArgGroup::new("which").required(true).args(["mode", "scenario"])))]
    Schema {
        /// Which definition: the frozen legacy tool or the timed one.
        #[arg(long, value_enum)]
        mode: Option<SchemaMode>,
        /// The JSON Schema of the scenario format (pretty JSON), for editors.
        #[arg(long)]
        scenario: bool,
    },
}

/// `asksim shrink`'s arguments.
#[derive(clap::Args, Debug)]
struct ShrinkArgs {
    /// The failing scenario file.
    file: PathBuf,
    /// The seed of the failing run (default: the scenario's `seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// The strategy of the failing run: random, pct:D or fifo (default: the scenario's `explore`, else random).
    #[arg(long, value_name = "STRATEGY")]
    explore: Option<Strategy>,
    /// Write the shrunk scenario here (default: FILE with `.min.json` for its extension).
    #[arg(short, long, value_name = "PATH")]
    out: Option<PathBuf>,
    /// Stop searching after this many seconds and write the smallest failing
    /// scenario found so far.
    #[arg(
        long,
        value_name = "S",
        allow_negative_numbers = true,
        default_value_t = crate::sim::shrink::MAX_S_DEFAULT
    )]
    max_s: f64,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ClockArg {
    Virtual,
    Real,
}

impl ClockArg {
    fn clock(self) -> Clock {
        match self {
            ClockArg::Virtual => Clock::Virtual,
            ClockArg::Real => Clock::Real,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum SchemaMode {
    Legacy,
    Timed,
}

/// Runs the command line with the process's arguments and returns its exit code.
pub fn main() -> ExitCode {
    init_tracing();
    crate::sim::driver::install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(EXIT_BAD_INPUT)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match cli.command {
        Command::Schema { mode: Some(mode), .. } => schema(mode),
        Command::Schema { mode: None, .. } => scenario_schema(),
        Command::Validate { files } => validate(&files),
        Command::Sweep {
            file,
            seeds,
            jobs,
            clock,
            explore,
            invariants_only,
            json,
            shard,
            out,
        } => {
            let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let args = SweepArgs {
                seeds,
                jobs,
                clock: clock.map(ClockArg::clock),
                explore,
                invariants_only,
                json,
                shard,
                out,
            };
            sweep(&file, &args)
        }
        Command::Merge { paths, json } => merge(&paths, json),
        Command::Shrink(args) => shrink(&args),
        Command::Replay { log, json, snapshot } => replay(&log, json, snapshot.as_deref()),
        Command::Run {
            file,
            seed,
            clock,
            explore,
            log,
            chrome_trace,
            json,
            check_determinism,
            timeline,
        } => {
            let clock = clock.map(ClockArg::clock);
            run(&RunArgs {
                file,
                seed,
                clock,
                explore,
                log,
                chrome_trace,
                json,
                check_determinism,
                timeline,
            })
        }
    }
}

/// Tracing to stderr, filtered by `RUST_LOG`; silent when it is unset.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}

struct SweepArgs {
    seeds: crate::sim::sweep::SeedRange,
    jobs: usize,
    clock: Option<Clock>,
    explore: Option<Strategy>,
    invariants_only: bool,
    json: bool,
    shard: Option<crate::sim::shard::ShardArg>,
    out: Option<PathBuf>,
}

fn sweep(file: &std::path::Path, args: &SweepArgs) -> ExitCode {
    use crate::sim::sweep::SweepOptions;
    let (scenario, text) = match scenario::load_text(file) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let shard = match crate::sim::shard::resolve(args.shard, |name| std::env::var_os(name)) {
        Ok((shard, note)) => {
            if let Some(note) = note {
                eprintln!("asksim sweep: {note}");
            }
            shard
        }
        Err(error) => {
            eprintln!("asksim sweep: --shard: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let options = SweepOptions {
        file: file.display().to_string(),
        seeds: args.seeds,
        jobs: args.jobs,
        clock: args.clock.unwrap_or(scenario.clock),
        strategy: args.explore.or(scenario.explore).unwrap_or_default(),
        invariants_only: args.invariants_only,
        shard,
    };
    let json = args.json;
    // A progress bar only when a person watches stderr.
    let bar = if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(shard.len(args.seeds));
        let style =
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} seeds {elapsed_precise} eta {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let progress = |done| bar.set_position(done);
    let report = match &args.out {
        None => crate::sim::sweep::sweep(&scenario, &options, progress),
        Some(out) => match crate::sim::shard::sweep_to_file(&scenario, &text, &options, out, progress) {
            Ok(report) => report,
            Err(error) => {
                bar.finish_and_clear();
                eprintln!("asksim sweep: {error}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        },
    };
    bar.finish_and_clear();
    print_sweep(
        &report,
        (shard != crate::sim::shard::Shard::WHOLE).then_some(shard),
        json,
    )
}

/// A sweep's report as `sweep` prints it (a shard's also names its K/N), and the
/// exit code: 1 if any seed failed.
fn print_sweep(
    report: &crate::sim::sweep::SweepReport,
    shard: Option<crate::sim::shard::Shard>,
    json: bool,
) -> ExitCode {
    /// The report with `"shard": "K/N"` last (flatten, because `seeds.to` is a
    /// u128 that a `serde_json::Value` cannot hold).
    #[derive(serde::Serialize)]
    struct Sharded<'a> {
        #[serde(flatten)]
        report: &'a crate::sim::sweep::SweepReport,
        shard: String,
    }
    let text = match (json, shard) {
        (false, None) => crate::sim::sweep::render(report),
        (false, Some(shard)) => format!(
            "{}  shard {shard}: {} of the range's {} seeds\n",
            crate::sim::sweep::render(report),
            report.runs,
            report.seeds.len()
        ),
        (true, None) => serde_json::to_string(report).expect("the report serialises") + "\n",
        (true, Some(shard)) => {
            let sharded = Sharded {
                report,
                shard: shard.to_string(),
            };
            serde_json::to_string(&sharded).expect("the report serialises") + "\n"
        }
    };
    print!("{text}");
    if report.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn merge(paths: &[PathBuf], json: bool) -> ExitCode {
    match crate::sim::merge::merge(paths) {
        Ok(report) => print_sweep(&report, None, json),
        Err(error) => {
            eprintln!("asksim merge: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn shrink(args: &ShrinkArgs) -> ExitCode {
    use crate::sim::shrink;
    let bad = |error: &dyn std::fmt::Display| {
        eprintln!("asksim shrink: {error}");
        ExitCode::from(EXIT_BAD_INPUT)
    };
    let file = args.file.as_path();
    let options = shrink::ShrinkOptions {
        seed: args.seed,
        explore: args.explore,
        max_s: args.max_s,
    };
    let (_, text) = match scenario::load_text(file) {
        Ok(loaded) => loaded,
        Err(error) => return bad(&error),
    };
    let out = args.out.clone().unwrap_or_else(|| shrink::default_out(file));
    // A progress bar only when a person watches stderr.
    let bar = if std::io::stderr().is_terminal() {
        let style = indicatif::ProgressStyle::with_template(
            "{bar:24} removed {pos}/{len} elements, {msg} {elapsed_precise}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        indicatif::ProgressBar::new(0).with_style(style)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut progress = |p: shrink::Progress| {
        bar.set_length(p.elements_start as u64);
        bar.set_position(p.elements_start.saturating_sub(p.elements) as u64);
        bar.set_message(format!("{} runs", p.runs));
    };
    let label = file.display().to_string();
    let report = shrink::shrink(&label, &text, &options, &mut progress);
    bar.finish_and_clear();
    let report = match report {
        Ok(report) => report,
        Err(error) => return bad(&error),
    };
    if let Err(error) = std::fs::write(&out, &report.text) {
        return bad(&format!("cannot write {}: {error}", out.display()));
    }
    print!("{}", shrink::render(&report, &out.display().to_string()));
    ExitCode::SUCCESS
}

fn replay(path: &std::path::Path, json: bool, snapshot: Option<&std::path::Path>) -> ExitCode {
    let (header, events) = match crate::log::read_file(path) {
        Ok(log) => log,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let projection = match snapshot {
        None => crate::projection::Projection::fold(&events),
        Some(cache) => {
            match crate::projection::fold_with_cache(cache, (&header.scenario, header.seed), &events) {
                Ok((projection, _)) => projection,
                Err(error) => {
                    eprintln!("asksim: cannot use the snapshot {}: {error}", cache.display());
                    return ExitCode::from(EXIT_BAD_INPUT);
                }
            }
        }
    };
    let report = crate::sim::replay::replay(&header, &events, &projection);
    if json {
        println!(
            "{}",
            serde_json::to_string(&report).expect("the report serialises")
        );
    } else {
        print!(
            "{}",
            crate::sim::replay::render_table_with_timelines(&report, &events)
        );
    }
    if report.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn validate(files: &[PathBuf]) -> ExitCode {
    let errors = scenario::validate_files(files);
    for error in &errors {
        eprintln!("{error}");
    }
    if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_BAD_INPUT)
    }
}

struct RunArgs {
    file: PathBuf,
    seed: Option<u64>,
    clock: Option<Clock>,
    explore: Option<Strategy>,
    log: Option<PathBuf>,
    chrome_trace: Option<PathBuf>,
    json: bool,
    check_determinism: bool,
    timeline: bool,
}

fn run(args: &RunArgs) -> ExitCode {
    let scenario = match scenario::load(&args.file) {
        Ok(scenario) => scenario,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let mut options = RunOptions::new(
        &scenario,
        args.seed.unwrap_or(scenario.seed),
        args.clock.unwrap_or(scenario.clock),
    );
    options.strategy = args.explore.unwrap_or(options.strategy);
    let (seed, clock, strategy) = (options.seed, options.clock, options.strategy);
    if let Some(path) = &args.log {
        match std::fs::File::create(path) {
            Ok(file) => options.log = Some(Box::new(std::io::BufWriter::new(file))),
            Err(error) => {
                eprintln!("asksim: cannot write the log to {}: {error}", path.display());
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        }
    }
    let file = args.file.display().to_string();
    let output = match driver::run_options(&scenario, options) {
        Ok(output) => output,
        Err(error) => {
            let path = args.log.as_deref().unwrap_or(std::path::Path::new("?"));
            eprintln!("asksim: cannot write the log to {}: {error}", path.display());
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let mut summary = summarise(&scenario, &file, &output);
    let mut determinism = None;
    if args.check_determinism {
        let again = RunOptions {
            seed,
            clock,
            strategy,
            keep_events: true,
            log: None,
        };
        let again =
            driver::run_options(&scenario, again).expect("a run without a log cannot fail to write one");
        determinism = first_difference(output.events(), again.events());
        if determinism.is_some() && summary.reproduce.is_none() {
            let command = crate::sim::report::reproduce_command(&file, &output);
            summary.reproduce = Some(format!("{command} --check-determinism"));
        }
    }
    if let Some(path) = &args.chrome_trace {
        let trace = crate::sim::chrome_trace::chrome_trace(output.events());
        if let Err(error) = std::fs::write(path, trace.to_string()) {
            eprintln!("asksim: cannot write the trace to {}: {error}", path.display());
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    }
    print_summary(&summary, determinism.as_deref(), args, output.events());
    if summary.passed() && determinism.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The summary (with the timelines of the calls its first violations name), then
/// with `--timeline` every event, one line each.
fn print_summary(summary: &Summary, determinism: Option<&str>, args: &RunArgs, events: &[Event]) {
    let timeline = args.timeline.then(|| crate::sim::timeline::timeline(events));
    if args.json {
        let mut value = serde_json::to_value(summary).expect("the summary serialises");
        value["determinism"] = determinism.map_or(serde_json::Value::Null, |d| d.into());
        if let Some(lines) = timeline {
            value["timeline"] = lines.into();
        }
        println!("{value}");
    } else {
        print!("{}", render_table_with_timelines(summary, events));
        if let Some(difference) = determinism {
            println!("  NOT DETERMINISTIC {difference}");
        }
        if let Some(lines) = timeline {
            println!("  {:<16}{} events", "timeline", lines.len());
            for line in lines {
                println!("    {line}");
            }
        }
    }
}

/// The first event where two runs differ, described.
fn first_difference(a: &[Event], b: &[Event]) -> Option<String> {
    let at = a.iter().zip(b).position(|(x, y)| x != y);
    match at {
        Some(i) => Some(format!(
            "first difference at seq {}: {} vs {}",
            i + 1,
            serde_json::to_string(&a[i]).unwrap_or_default(),
            serde_json::to_string(&b[i]).unwrap_or_default()
        )),
        None if a.len() != b.len() => Some(format!(
            "the runs recorded {} and {} events; first difference at seq {}",
            a.len(),
            b.len(),
            a.len().min(b.len()) + 1
        )),
        None => None,
    }
}

fn scenario_schema() -> ExitCode {
    let mut text = serde_json::to_string_pretty(&scenario::json_schema()).expect("a JSON value serialises");
    text.push('\n');
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("asksim: cannot write to stdout: {e}");
            ExitCode::FAILURE
        }
    }
}

fn schema(mode: SchemaMode) -> ExitCode {
    let mode = match mode {
        SchemaMode::Legacy => Mode::Legacy,
        SchemaMode::Timed => Mode::Timed,
    };
    let config = ToolConfig {
        mode,
        ..ToolConfig::default()
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(config.definition().as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("asksim: cannot write to stdout: {e}");
            ExitCode::FAILURE
        }
    }
}
