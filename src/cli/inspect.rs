//! `asksim replay`, `validate` and `schema`: logs, scenario files and the tool's
//! definitions, read and checked.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, ValueEnum};

use super::EXIT_BAD_INPUT;
use crate::scenario;
use crate::tool::{Mode, ToolConfig};

/// `asksim replay`'s arguments.
#[derive(clap::Args, Debug)]
pub(super) struct ReplayArgs {
    /// The log (JSON Lines, as written by `run --log`).
    log: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// A projection snapshot cache: used when its stateVersion is this
    /// code's, refolded otherwise, and written back.
    #[arg(long, value_name = "PATH")]
    snapshot: Option<PathBuf>,
}

/// `asksim validate`'s arguments.
#[derive(clap::Args, Debug)]
pub(super) struct ValidateArgs {
    /// The scenario files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// `asksim schema`'s arguments.
#[derive(clap::Args, Debug)]
#[command(group(ArgGroup::new("which").required(true).args(["mode", "scenario"])))]
pub(super) struct SchemaArgs {
    /// Which definition: the frozen legacy tool or the timed one.
    #[arg(long, value_enum)]
    mode: Option<SchemaMode>,
    /// The JSON Schema of the scenario format (pretty JSON), for editors.
    #[arg(long)]
    scenario: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum SchemaMode {
    Legacy,
    Timed,
}

pub(super) fn replay(args: &ReplayArgs) -> ExitCode {
    let (path, json, snapshot) = (args.log.as_path(), args.json, args.snapshot.as_deref());
    if let Err(code) = super::distinct_files("replay", &[("LOG", Some(path)), ("--snapshot", snapshot)]) {
        return code;
    }
    let log = match crate::sim::hunt::replay::read(path) {
        Ok(log) => log,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let (header, events) = (&log.header, &log.events);
    let compacted_at = log.snapshot.as_ref().map(|s| s.seq);
    let projection = match (snapshot, log.snapshot) {
        (_, Some(compacted)) => {
            let mut projection = compacted.projection;
            events.iter().for_each(|e| projection.apply(e));
            projection
        }
        (None, None) => crate::projection::Projection::fold(events),
        (Some(cache), None) => {
            match crate::projection::fold_with_cache(cache, (&header.scenario, header.seed), events) {
                Ok((projection, _)) => projection,
                Err(error) => {
                    eprintln!("asksim: cannot use the snapshot {}: {error}", cache.display());
                    return ExitCode::from(EXIT_BAD_INPUT);
                }
            }
        }
    };
    let report = crate::sim::hunt::replay::replay_from(header, events, &projection, compacted_at);
    if json {
        println!(
            "{}",
            serde_json::to_string(&report).expect("the report serialises")
        );
    } else {
        print!(
            "{}",
            crate::sim::hunt::replay::render_table_with_timelines(&report, events)
        );
    }
    if report.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

pub(super) fn validate(args: &ValidateArgs) -> ExitCode {
    // A file is built as `run` builds it, once: what its build frees goes back
    // as in a run, at once past 64 MiB (a `repeat` of 10^6 steps peaked at
    // 131 MB with a second's delay, 86 MB in `run`).
    super::process::tune_for_one_run();
    let errors = scenario::validate_files(&args.files);
    for error in &errors {
        eprintln!("{error}");
    }
    if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_BAD_INPUT)
    }
}

/// `asksim schema`: a tool definition, or the scenario format's JSON Schema.
pub(super) fn schema(args: &SchemaArgs) -> ExitCode {
    match args.mode {
        Some(mode) => tool_schema(mode),
        None => scenario_schema(),
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

fn tool_schema(mode: SchemaMode) -> ExitCode {
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
