//! The `asksim` command line: clap parses, the library does the work. Exit codes
//! follow SPEC §6: 0 success, 1 a failed run, 2 bad input.
//!
//! One file per family of verbs: `run`, `sweep` (with `merge`), `shrink`,
//! `explore`, `inspect` (`replay`, `validate`, `schema`), and `actor` (asksim's
//! own state machines behind PROTOCOL.md).

mod actor;
mod explore;
mod inspect;
pub mod process;
mod run;
mod shrink;
mod sweep;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::scenario::{self, Clock, Scenario, Strategy};

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
    Run(run::RunArgs),
    /// Run one scenario under many seeds in parallel; list every failing seed
    /// with its reproduce command; exit 1 if any fails.
    Sweep(sweep::SweepArgs),
    /// Fold the files of a sharded sweep (`sweep --shard K/N --out PATH`) into the
    /// report one sweep over the same seeds prints; exit 1 if any seed failed.
    Merge(sweep::MergeArgs),
    /// Reduce a failing scenario to a 1-minimal one that fails the same way, write
    /// it and print the command that reproduces it; exit 2 if it does not fail.
    Shrink(shrink::ShrinkArgs),
    /// Enumerate every delivery order of a small scenario (up to a bound); exit 1
    /// if one fails, with the command that replays it.
    Explore(explore::ExploreArgs),
    /// Fold an event log into the userQuestions projection, print every
    /// question's state, and re-check the invariants.
    Replay(inspect::ReplayArgs),
    /// Parse and check scenario files; print nothing but errors.
    Validate(inspect::ValidateArgs),
    /// Print the model-facing tool definition (byte-stable), or the JSON Schema of
    /// scenario files.
    Schema(inspect::SchemaArgs),
    /// Run asksim's own broker, or its built-in answerer, as an outside process
    /// speaking PROTOCOL.md on stdin and stdout.
    Actor(actor::ActorArgs),
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

/// Refuses, on the real clock, the first of `flags` given (each a flag only a
/// virtual-clock run has, whether it was given, and why), with one line and exit
/// 2, before anything runs. On the real clock tokio orders the deliveries and
/// the wall clock times them: a replayed schedule, a strategy or a determinism
/// check would claim what such a run cannot keep. The clock is real by `--clock
/// real` (`flag`: drop it) or by the file's `"clock": "real"` (add `--clock
/// virtual`).
fn virtual_clock_only(
    command: &str,
    clock: Clock,
    flag: Option<ClockArg>,
    flags: &[(bool, &str)],
) -> Result<(), ExitCode> {
    let refused = flags.iter().find(|(given, _)| *given);
    let Some((_, why)) = refused.filter(|_| clock == Clock::Real) else {
        return Ok(());
    };
    let way_out = match flag {
        Some(ClockArg::Real) => "drop --clock real",
        _ => "add --clock virtual (the scenario's \"clock\" is \"real\")",
    };
    eprintln!("asksim {command}: {why}; {way_out}");
    Err(ExitCode::from(EXIT_BAD_INPUT))
}

/// Why `--explore` is refused on the real clock (see [`virtual_clock_only`]).
const EXPLORE_VIRTUAL_ONLY: &str =
    "--explore picks the delivery order of a virtual-clock run (on the real clock tokio picks it)";

/// The strategy of a run (or each run of a sweep) on `clock`: `--explore`, else
/// the file's `explore`, else `random`. On the real clock no strategy orders
/// anything: `--explore` there was refused already, and a file's `explore` (a
/// default for its virtual-clock runs, as its `clock` is a default) is ignored
/// with a note on stderr rather than refused, so `validate` accepts no file that
/// `run` refuses.
fn strategy(command: &str, clock: Clock, explore: Option<Strategy>, scenario: &Scenario) -> Strategy {
    if clock == Clock::Real
        && explore.is_none()
        && let Some(named) = scenario.explore
    {
        eprintln!(
            "asksim {command}: the scenario's \"explore\": \"{named}\" orders virtual-clock runs only; on the real clock it is ignored"
        );
        return Strategy::default();
    }
    explore.or(scenario.explore).unwrap_or_default()
}

/// Runs the command line with the process's arguments and returns its exit code.
pub fn main() -> ExitCode {
    init_tracing();
    crate::sim::install_panic_hook();
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
    // A reader that closes stdout early (`| head`) makes `print!` panic: that
    // ends the command with 141, as SIGPIPE would end a C tool, never with 0 (a
    // verdict that was not read is not a pass) and never with a panic message.
    // Any other failure to print (a full disk) ends it with that error said,
    // exit 1, as `schema` says it.
    let outcome = std::panic::catch_unwind(|| dispatch(cli.command));
    match outcome {
        Ok(code) => code,
        Err(panic) => {
            let message = crate::actors::panic_message(panic.as_ref());
            match crate::sim::stdout_failure(Some(&message)) {
                Some(error) if crate::sim::is_closed_pipe(error) => ExitCode::from(EXIT_CLOSED_STDOUT),
                Some(error) => {
                    eprintln!("asksim: cannot write to stdout: {error}");
                    ExitCode::FAILURE
                }
                None => std::panic::resume_unwind(panic),
            }
        }
    }
}

/// Refuses a command whose files name one file twice, an output and an input
/// or two outputs (`paths`: each file's flag, or its argument's name, and its
/// path): writing the one destroyed the other (`run x.json --log x.json`
/// overwrote the scenario it had read, `replay q.jsonl --snapshot q.jsonl` the
/// log). Paths are compared as the files they name when both exist, else as
/// absolute paths; a device or a pipe (`/dev/null`) is never one of them.
fn distinct_files(command: &str, paths: &[(&str, Option<&std::path::Path>)]) -> Result<(), ExitCode> {
    let same = |a: &std::path::Path, b: &std::path::Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b && std::fs::metadata(&a).is_ok_and(|m| m.is_file()),
        _ => std::path::absolute(a).ok() == std::path::absolute(b).ok(),
    };
    let named: Vec<(&str, &std::path::Path)> = (paths.iter())
        .filter_map(|(flag, path)| path.map(|p| (*flag, p)))
        .collect();
    for (i, (flag, path)) in named.iter().enumerate() {
        if let Some((other, _)) = named[..i].iter().find(|(_, earlier)| same(earlier, path)) {
            eprintln!(
                "asksim {command}: {flag} {} is the same file as {other}: writing the one would destroy the other",
                path.display()
            );
            return Err(ExitCode::from(EXIT_BAD_INPUT));
        }
    }
    Ok(())
}

/// The exit code when stdout was closed before everything was printed (128 +
/// SIGPIPE, what a shell reports for a process that signal ended).
pub const EXIT_CLOSED_STDOUT: u8 = 141;

fn dispatch(command: Command) -> ExitCode {
    match command {
        Command::Run(args) => run::run(&args),
        Command::Sweep(args) => sweep::sweep(&args),
        Command::Merge(args) => sweep::merge(&args),
        Command::Shrink(args) => shrink::shrink(&args),
        Command::Explore(args) => explore::explore(&args),
        Command::Replay(args) => inspect::replay(&args),
        Command::Validate(args) => inspect::validate(&args),
        Command::Schema(args) => inspect::schema(&args),
        Command::Actor(args) => actor::actor(&args),
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

/// Loads a scenario file, or prints why not (exit 2).
fn load(file: &std::path::Path) -> Result<Scenario, ExitCode> {
    scenario::load(file).map_err(|error| {
        eprintln!("{error}");
        ExitCode::from(EXIT_BAD_INPUT)
    })
}

/// A progress bar on stderr when a person watches it, hidden otherwise.
fn progress_bar(len: u64, template: &str) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let style = indicatif::ProgressStyle::with_template(template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    indicatif::ProgressBar::new(len).with_style(style)
}
