//! The `asksim` command line. Parses arguments with clap and calls the library;
//! exit codes follow SPEC §6: 0 success, 1 a failed run, 2 bad input.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

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
    /// Print the model-facing tool definition (byte-stable).
    Schema {
        /// Which definition: the frozen legacy tool or the timed one.
        #[arg(long, value_enum)]
        mode: SchemaMode,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum SchemaMode {
    Legacy,
    Timed,
}

/// Runs the command line with the process's arguments and returns its exit code.
pub fn main() -> ExitCode {
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
        Command::Schema { mode } => schema(mode),
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
