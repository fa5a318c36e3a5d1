//! A scaling family run over and over in one process, for a profiler to watch
//! (issue #19):
//!
//! ```text
//! cargo run --release --example prof -- FAMILY N RUNS
//! perf record -F 999 ./target/release/examples/prof cancel_tree 100000 6
//! perf record -F 999 ./target/release/examples/prof cancel_tree 1000 600
//! ```
//!
//! (FAMILY as for `--example family`.) The scenario is parsed once, then run
//! RUNS times as `examples/ratio` times a run (virtual clock, no events kept,
//! the binary's allocator); the time a unit is printed on stderr. With the
//! same N x RUNS at two sizes, two profiles hold the same number of units, so
//! their samples compare function by function. With `PROF_JOURNAL_AFTER=0`
//! the judge runs on the journal's thread at both sizes (by default a run of
//! 10^3 judges in place, one of 10^5 beside the world), so the world's thread
//! does the same work at each and its two profiles differ only by scale.

#[path = "../benches/families/mod.rs"]
mod families;

use std::hint::black_box;
use std::time::Instant;

use asksim::scenario::{self, Clock};
use asksim::sim::{self, RunOptions};

/// The binary's allocator (`src/main.rs`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let family = args.first().and_then(|f| families::Family::named(f));
    let size = args.get(1).and_then(|n| n.parse::<usize>().ok());
    let runs = args.get(2).and_then(|r| r.parse::<usize>().ok());
    let (Some(family), Some(size @ 1..), Some(runs @ 1..)) = (family, size, runs) else {
        eprintln!("usage: prof FAMILY N RUNS   (FAMILY as for `--example family`; N, RUNS >= 1)");
        std::process::exit(2);
    };
    asksim::cli::process::tune();
    let scenario = scenario::parse("family.json", &family.scenario(size)).expect("a family scenario parses");
    let journal_after = journal_after();
    let start = Instant::now();
    for _ in 0..runs {
        let mut options = RunOptions::new(&scenario, scenario.seed, Clock::Virtual);
        options.keep_events = false;
        if let Some(after) = journal_after {
            options.journal_after = after;
        }
        let output = sim::run_options(&scenario, options).expect("a run");
        drop(black_box(output));
    }
    let unit = start.elapsed().as_nanos() as f64 / (size * runs) as f64;
    eprintln!("{unit:.0} ns a unit ({runs} runs of {size})");
}

/// `PROF_JOURNAL_AFTER`: the events a run records in place before its journal
/// takes over (`RunOptions::journal_after`; `never` records in place to the
/// end). `0` puts the judge on the journal's thread at any size, so that the
/// world's thread does the same work at 10^3 as at 10^5 and two profiles of
/// it compare function by function.
fn journal_after() -> Option<Option<u64>> {
    let value = std::env::var("PROF_JOURNAL_AFTER").ok()?;
    if value == "never" {
        return Some(None);
    }
    match value.parse() {
        Ok(after) => Some(Some(after)),
        Err(_) => {
            eprintln!("prof: PROF_JOURNAL_AFTER is a number of events or `never`");
            std::process::exit(2);
        }
    }
}
