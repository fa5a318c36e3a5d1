//! `asksim run`: one run, its summary, and what reproduces it.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use super::{ClockArg, EXIT_BAD_INPUT, load};
use crate::event::Event;
use crate::scenario::Strategy;
use crate::sim::engine::tap::Tap;
use crate::sim::hunt::explore::{ScheduleError, schedule_string};
use crate::sim::show::chrome_trace::ChromeTrace;
use crate::sim::show::report::{Determinism, render_run};
use crate::sim::show::timeline::Timeline;
use crate::sim::{self, RunOptions, RunOutput, Summary, summarise};

/// `asksim run`'s arguments.
#[derive(clap::Args, Debug)]
pub(super) struct RunArgs {
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
    /// Write the event log (JSON Lines) here, as it happens (a durable log:
    /// see --sync and --resume).
    #[arg(long, value_name = "PATH")]
    log: Option<PathBuf>,
    /// How durable each line of --log is before its effect leaves the process:
    /// group (commit lines together, at most 2 ms apart; the default), group:MS,
    /// every (a sync per line) or none (never synced; survives a kill, not a
    /// power loss).
    #[arg(long, value_name = "POLICY", default_value = "group", requires = "log")]
    sync: crate::durable::SyncPolicy,
    /// Continue the unfinished run whose log is --log after a crash: the crash
    /// is a process loss at the log's last instant, the run restarts from it and
    /// appends to the same file.
    #[arg(long, requires = "log")]
    resume: bool,
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
    /// The broker is this outside process (PROTOCOL.md), started in every life
    /// of the run: a program and its arguments, split as a shell would.
    #[arg(long, value_name = "CMD", value_parser = crate::wire::Endpoint::parse)]
    broker_cmd: Option<crate::wire::Endpoint>,
    /// Replay one delivery order, as `asksim explore` prints it (`0*12.1.0*3`:
    /// the candidate taken at each choice point); it replaces the strategy.
    #[arg(long, value_name = "SCHEDULE", value_parser = crate::sim::hunt::explore::parse_schedule)]
    schedule: Option<Schedule>,
}

/// The replayed schedule in the summary: the strategy chose nothing, so the
/// header and `--json` name the schedule, and so does the reproduce command.
fn name_schedule(summary: &mut Summary, choices: &Schedule) {
    let schedule = schedule_string(choices);
    summary.explore = format!("schedule {schedule}");
    if let Some(reproduce) = &mut summary.reproduce {
        let schedule = crate::sim::engine::reproduce::shell_word(&schedule);
        reproduce.push_str(&format!(" --schedule {schedule}"));
    }
}

/// A parsed `--schedule` (a named type: clap takes a bare `Vec` for a list).
type Schedule = Vec<usize>;

/// Runs as `options` say, under the replayed schedule when there is one; with
/// what was wrong with the schedule, if anything.
fn execute_checked(
    scenario: &crate::scenario::Scenario,
    options: RunOptions,
    schedule: Option<&Schedule>,
) -> std::io::Result<(RunOutput, Option<ScheduleError>)> {
    match schedule {
        Some(choices) => {
            let mut replay = crate::sim::hunt::explore::Replay::new(choices.clone());
            let output = sim::run_with(scenario, options, &mut replay)?;
            Ok((output, replay.error()))
        }
        None => Ok((sim::run_options(scenario, options)?, None)),
    }
}

/// [`execute_checked`] again, for a run whose schedule was checked already.
fn execute(
    scenario: &crate::scenario::Scenario,
    options: RunOptions,
    schedule: Option<&Schedule>,
) -> std::io::Result<RunOutput> {
    execute_checked(scenario, options, schedule).map(|(output, _)| output)
}

/// The run's options from its arguments, the log file opened; or the exit code
/// of bad arguments.
fn run_options(args: &RunArgs, scenario: &crate::scenario::Scenario) -> Result<RunOptions, ExitCode> {
    let mut options = RunOptions::new(
        scenario,
        args.seed.unwrap_or(scenario.seed),
        args.clock.map_or(scenario.clock, ClockArg::clock),
    );
    options.broker = args.broker_cmd.clone();
    let outside = options.broker.is_some() || scenario.has_process_answerers();
    let virtual_only = [
        (outside, super::actor::OUTSIDE_VIRTUAL_ONLY),
        (args.schedule.is_some(), "--schedule replays a virtual-clock run"),
        (args.explore.is_some(), super::EXPLORE_VIRTUAL_ONLY),
        (
            args.check_determinism,
            "--check-determinism checks a virtual-clock run (a real-clock run's times and order differ from run to run)",
        ),
    ];
    super::virtual_clock_only("run", options.clock, args.clock, &virtual_only)?;
    super::actor::outside_checked("run", options.broker.as_ref(), Some(scenario))?;
    // Events are kept only where something compares them (and for --resume,
    // where the log's earlier events are judged with the rest); the verdict comes
    // from the streaming analysis, the trace and the timeline stream through taps
    // (a failing run is re-run for the timelines under its violations).
    options.keep_events = args.check_determinism || args.resume;
    // The table shows the trace hash alone; the order hash, a second SHA-256
    // over nearly every byte of the log, is computed for `--json`, which
    // reports it (a run computes the hashes it reports).
    if !args.json {
        options.hashes = crate::record::Hashes::Trace;
    }
    if args.resume && (args.check_determinism || args.schedule.is_some()) {
        eprintln!(
            "asksim run: --resume continues one run from its log; drop --check-determinism and --schedule"
        );
        return Err(ExitCode::from(EXIT_BAD_INPUT));
    }
    if let Some(path) = args.log.as_ref().filter(|_| !args.resume) {
        // A run that did not end left its open questions in that log alone:
        // a new run writing over it would lose them (the library refuses any
        // log; here a finished run's may be written over, run after run).
        if let Ok(Some(header)) = crate::durable::unfinished_run(path) {
            let (file, seed) = (&scenario.name, options.seed);
            // `--resume` continues only this scenario's run under this seed.
            let what_then = match header.scenario == *file && header.seed == seed {
                true => "continue it with --resume, or remove the file for a new run".to_owned(),
                false => format!(
                    "it is scenario {:?}'s under seed {}, not {file:?}'s under seed {seed}: give this run another --log, or remove the file",
                    header.scenario, header.seed
                ),
            };
            eprintln!(
                "asksim run: --log {}: it holds the log of a run that did not end (a crash, or a run still going); {what_then}",
                path.display()
            );
            return Err(ExitCode::from(EXIT_BAD_INPUT));
        }
        let header = sim::log_header(scenario, options.seed, options.clock);
        match crate::durable::LogFile::create(path, &header, args.sync) {
            Ok(log) => options.log = Some(log),
            Err(error) => {
                eprintln!("asksim: cannot write the log to {}: {error}", path.display());
                return Err(ExitCode::from(EXIT_BAD_INPUT));
            }
        }
    }
    // Last, so its note is never printed above a refusal.
    options.strategy = super::strategy("run", options.clock, args.explore, scenario);
    Ok(options)
}

/// The run `args` ask for: a new one, or (`--resume`) the one its log holds,
/// continued; or the exit code of a log that cannot be written or recovered, or
/// of a schedule the run does not offer.
fn first_run(
    args: &RunArgs,
    scenario: &crate::scenario::Scenario,
    options: RunOptions,
) -> Result<RunOutput, ExitCode> {
    let path = args.log.as_deref().unwrap_or(std::path::Path::new("?"));
    let output = if args.resume {
        let recovery = sim::recover_log(scenario, options.seed, path, args.sync).map_err(|error| {
            eprintln!("asksim: cannot resume from the log: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        })?;
        if let Some(torn) = recovery.torn {
            let (line, bytes) = (torn.line, torn.bytes);
            eprintln!(
                "asksim: {}:{line}: dropped a torn last line ({bytes} bytes)",
                path.display()
            );
        }
        sim::resume(scenario, options, recovery)
    } else {
        match execute_checked(scenario, options, args.schedule.as_ref()) {
            Ok((_, Some(error))) => {
                let shown = args.schedule.as_deref().map(schedule_string).unwrap_or_default();
                eprintln!(
                    "asksim run: --schedule {shown}: {error} ({})",
                    args.file.display()
                );
                return Err(ExitCode::from(EXIT_BAD_INPUT));
            }
            Ok((output, None)) => Ok(output),
            Err(error) => Err(error),
        }
    };
    output.map_err(|error| {
        eprintln!("asksim: cannot write the log to {}: {error}", path.display());
        ExitCode::from(EXIT_BAD_INPUT)
    })
}

/// The files a run reads and writes, each with its flag.
fn files(args: &RunArgs) -> [(&'static str, Option<&std::path::Path>); 3] {
    [
        ("FILE", Some(args.file.as_path())),
        ("--log", args.log.as_deref()),
        ("--chrome-trace", args.chrome_trace.as_deref()),
    ]
}

pub(super) fn run(args: &RunArgs) -> ExitCode {
    super::process::tune_for_one_run();
    let scenario = match super::distinct_files("run", &files(args)).and_then(|()| load(&args.file)) {
        Ok(scenario) => scenario,
        Err(code) => return code,
    };
    let (mut options, taps) = match run_options(args, &scenario).and_then(|o| Ok((o, Taps::open(args)?))) {
        Ok(both) => both,
        Err(code) => return code,
    };
    options.taps = taps.observers;
    let (seed, clock, strategy) = (options.seed, options.clock, options.strategy);
    let broker = options.broker.clone();
    let kept = || RunOptions {
        strategy,
        broker: broker.clone(),
        ..RunOptions::new(&scenario, seed, clock)
    };
    let file = args.file.display().to_string();
    let output = match first_run(args, &scenario, options) {
        Ok(output) => output,
        Err(code) => return code,
    };
    let mut summary = summarise(&scenario, &file, &output);
    let determinism = match args.check_determinism {
        true => determinism(&output, &execute(&scenario, kept(), args.schedule.as_ref())),
        false => Determinism::Unchecked,
    };
    if determinism.differs() && summary.reproduce.is_none() {
        let command = crate::sim::reproduce_command(&file, &output);
        summary.reproduce = Some(format!("{command} --check-determinism"));
    }
    if let Some(choices) = &args.schedule {
        name_schedule(&mut summary, choices);
    }
    if let Err(code) = write_trace(taps.trace) {
        return code;
    }
    // A run that kept no events: the same run again (it is deterministic) gives
    // them for the timelines under the violations.
    let rerun =
        (output.events().is_empty() && !summary.invariants.violations.is_empty() && !args.json).then(|| {
            execute(&scenario, kept(), args.schedule.as_ref())
                .expect("a run without a log cannot fail to write one")
        });
    let events = rerun.as_ref().map_or(output.events(), RunOutput::events);
    let timeline = taps.timeline.map(Tap::take);
    let stdout = std::io::stdout();
    let printed = print_summary(
        &mut BufWriter::new(stdout.lock()),
        &summary,
        &determinism,
        args.json,
        events,
        timeline,
    );
    if let Err(unprinted) = printed {
        return unprinted.exit();
    }
    // The process ends next: its memory goes back to the system whole, where
    // dropping a large run's output and scenario piece by piece ran alone after
    // the report (BENCHMARKS.md, #19). Memory only: every file is closed above.
    std::mem::forget((output, scenario));
    if summary.passed() && !determinism.differs() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// What streams out of the run as it goes: the Chrome trace to its file, the
/// timeline to its spool.
struct Taps {
    observers: Vec<Box<dyn crate::record::Observer>>,
    trace: Option<(Tap<ChromeTrace<BufWriter<File>>>, PathBuf)>,
    timeline: Option<Tap<Timeline>>,
}

impl Taps {
    /// The taps `args` ask for, their files created; or the exit code of a path
    /// that cannot be written.
    fn open(args: &RunArgs) -> Result<Taps, ExitCode> {
        let mut taps = Taps {
            observers: Vec::new(),
            trace: None,
            timeline: None,
        };
        if let Some(path) = &args.chrome_trace {
            let file = File::create(path).map_err(|error| {
                eprintln!("asksim: cannot write the trace to {}: {error}", path.display());
                ExitCode::from(EXIT_BAD_INPUT)
            })?;
            let (tap, observer) = Tap::new(ChromeTrace::new(BufWriter::new(file)));
            taps.observers.push(observer);
            taps.trace = Some((tap, path.clone()));
        }
        if args.timeline {
            let timeline = Timeline::spooled().map_err(|error| {
                eprintln!("asksim: cannot spool the timeline to a temporary file: {error}");
                ExitCode::from(EXIT_BAD_INPUT)
            })?;
            let (tap, observer) = Tap::new(timeline);
            taps.observers.push(observer);
            taps.timeline = Some(tap);
        }
        Ok(taps)
    }
}

/// Closes the streamed Chrome trace, if one was asked for.
fn write_trace(trace: Option<(Tap<ChromeTrace<BufWriter<File>>>, PathBuf)>) -> Result<(), ExitCode> {
    let Some((tap, path)) = trace else {
        return Ok(());
    };
    tap.take()
        .finish()
        .and_then(|mut file| file.flush())
        .map_err(|error| {
            eprintln!("asksim: cannot write the trace to {}: {error}", path.display());
            ExitCode::from(EXIT_BAD_INPUT)
        })
}

/// Why the summary was not printed whole.
enum Unprinted {
    /// The timeline's spool could not be read back.
    Spool(std::io::Error),
    /// Standard output took no more.
    Out(std::io::Error),
}

impl Unprinted {
    /// The command's end, said on stderr.
    fn exit(self) -> ExitCode {
        match self {
            Unprinted::Spool(error) => {
                eprintln!("asksim: cannot read the timeline back from its temporary file: {error}");
                ExitCode::from(EXIT_BAD_INPUT)
            }
            // As `print!`'s panic ends it elsewhere (`cli::main`): a reader that
            // closed stdout early gets 141, never a pass it did not read.
            Unprinted::Out(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                ExitCode::from(super::EXIT_CLOSED_STDOUT)
            }
            Unprinted::Out(error) => {
                eprintln!("asksim: cannot write to stdout: {error}");
                ExitCode::FAILURE
            }
        }
    }
}

/// A writer that keeps its first error and writes nothing after it.
struct Sticky<W> {
    out: W,
    written: std::io::Result<()>,
}

impl<W: std::io::Write> Sticky<W> {
    fn print(&mut self, text: std::fmt::Arguments<'_>) {
        if self.written.is_ok() {
            self.written = self.out.write_fmt(text);
        }
    }

    /// `text` as a JSON string.
    fn json(&mut self, text: &str) {
        if self.written.is_ok() {
            self.written = serde_json::to_writer(&mut self.out, text).map_err(std::io::Error::from);
        }
    }
}

/// The summary (with the timelines of the calls its first violations name), then
/// with `--timeline` every event, one line each, written to `out`, flushed.
/// `out` is buffered: a timeline's line is not a write of its own (standard
/// output flushes at each line break, a system call a line: a third of a tie
/// of 16,000's `--timeline` printing, to `/dev/null`).
fn print_summary(
    out: &mut impl std::io::Write,
    summary: &Summary,
    determinism: &Determinism,
    json: bool,
    events: &[Event],
    timeline: Option<Timeline>,
) -> Result<(), Unprinted> {
    let mut out = Sticky { out, written: Ok(()) };
    let read = if json {
        let mut value = serde_json::to_value(summary).expect("the summary serialises");
        if summary.clock == crate::scenario::Clock::Real.as_str() {
            // Tokio ordered the deliveries: no strategy did, whatever the
            // summary carries for one.
            value["explore"] = serde_json::Value::Null;
        }
        value["determinism"] = determinism.to_json();
        match timeline {
            None => {
                out.print(format_args!("{value}\n"));
                Ok(())
            }
            Some(timeline) => {
                // `timeline` is the object's last key: its lines stream into the array.
                let text = value.to_string();
                out.print(format_args!("{},\"timeline\":[", &text[..text.len() - 1]));
                let mut first = true;
                let read = timeline.for_each_line(|line| {
                    let comma = if std::mem::take(&mut first) { "" } else { "," };
                    out.print(format_args!("{comma}"));
                    out.json(line);
                });
                out.print(format_args!("]}}\n"));
                read
            }
        }
    } else {
        out.print(format_args!("{}", render_run(summary, events, determinism)));
        match timeline {
            None => Ok(()),
            Some(timeline) => {
                out.print(format_args!("  {:<16}{} events\n", "timeline", timeline.len()));
                timeline.for_each_line(|line| out.print(format_args!("    {line}\n")))
            }
        }
    };
    if out.written.is_ok() {
        out.written = out.out.flush();
    }
    read.map_err(Unprinted::Spool)?;
    out.written.map_err(Unprinted::Out)
}

/// Whether the same run `again` (`--check-determinism`) recorded what `output` did.
fn determinism(output: &RunOutput, again: &Result<RunOutput, impl std::fmt::Debug>) -> Determinism {
    let again = again
        .as_ref()
        .expect("a run without a log cannot fail to write one");
    match first_difference(output.events(), again.events()) {
        Some(difference) => Determinism::Differs(difference),
        None => Determinism::Identical,
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
