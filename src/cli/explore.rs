//! `asksim explore`: every delivery order of a small scenario.

use std::path::PathBuf;
use std::process::ExitCode;

use super::EXIT_BAD_INPUT;

/// `asksim explore`'s arguments.
#[derive(clap::Args, Debug)]
pub(super) struct ExploreArgs {
    /// The scenario file.
    file: PathBuf,
}

pub(super) fn explore(args: &ExploreArgs) -> ExitCode {
    eprintln!("asksim explore: not built yet ({})", args.file.display());
    ExitCode::from(EXIT_BAD_INPUT)
}
