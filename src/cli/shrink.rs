//! `asksim shrink`: a failing scenario reduced to what makes it fail.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{EXIT_BAD_INPUT, progress_bar};
use crate::scenario::{self, Strategy};

/// `asksim shrink`'s arguments.
#[derive(clap::Args, Debug)]
pub(super) struct ShrinkArgs {
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
        default_value_t = crate::sim::hunt::shrink::MAX_S_DEFAULT
    )]
    max_s: f64,
    /// The broker is this outside process (PROTOCOL.md), started in every life
    /// of every run: a program and its arguments, split as a shell would.
    #[arg(long, value_name = "CMD", value_parser = crate::wire::Endpoint::parse)]
    broker_cmd: Option<crate::wire::Endpoint>,
}

pub(super) fn shrink(args: &ShrinkArgs) -> ExitCode {
    use crate::sim::hunt::shrink;
    let bad = |error: &dyn std::fmt::Display| {
        eprintln!("asksim shrink: {error}");
        ExitCode::from(EXIT_BAD_INPUT)
    };
    let file = args.file.as_path();
    if let Err(code) = super::actor::outside_checked("shrink", args.broker_cmd.as_ref(), None) {
        return code;
    }
    let options = shrink::ShrinkOptions {
        seed: args.seed,
        explore: args.explore,
        max_s: args.max_s,
        answerers: Default::default(),
        broker: args.broker_cmd.clone(),
    };
    let (_, text) = match scenario::load_text(file) {
        Ok(loaded) => loaded,
        Err(error) => return bad(&error),
    };
    let out = args.out.clone().unwrap_or_else(|| shrink::default_out(file));
    if let Err(code) = super::distinct_files("shrink", &[("FILE", Some(file)), ("-o", Some(&out))]) {
        return code;
    }
    let bar = progress_bar(
        0,
        "{bar:24} removed {pos}/{len} elements, {msg} {elapsed_precise}",
    );
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
