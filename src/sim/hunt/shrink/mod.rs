//! `asksim shrink`: from a failing run, a 1-minimal scenario that fails the same
//! way, as an ordinary scenario file that `asksim run` reproduces.
//!
//! - `signature`: a run's failure signature and the rule "fails the same way".
//! - `expand`: `count` rows and `repeat` blocks written out, references kept.
//! - `lists`: the lists elements are removed from, and the repair that drops
//!   what a removal left dangling (events, `expect` entries, joins).
//! - `search`: ddmin over every list to a fixed point, then the proof of
//!   1-minimality, within a time bound.
//!
//! # Contract
//!
//! Shrinking never changes semantics: every candidate is a plain scenario file,
//! parsed by [`crate::scenario::parse`] and run by the driver like any other, under
//! the seed and strategy of the failing run, on the virtual clock. The file's
//! `tool`, `broker` and `name` are kept as written; its `seed`, `explore` and
//! `clock` become the failing run's (when `--seed` or `--explore` named another,
//! or the file said `"clock": "real"`),
//! so `asksim run` of the result fails the same way with no flags, and the printed
//! reproduce command names them too. The result is
//! 1-minimal: removing any one remaining list element (agent, answerer, event,
//! `expect` entry, script step, question, option beyond the second) or optional key
//! (`about`, `jitter`, `limits` and its keys), with what depended on it, gives a
//! scenario that no longer fails the same way or is not valid. The same input gives
//! the same output and report, unless the time bound is hit: then the result depends
//! on the machine's speed, and the report says it may not be 1-minimal.

mod expand;
mod lists;
mod search;
mod signature;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

pub use lists::Tally;
pub use signature::{Failure, Signature, signature};

use crate::scenario::{self, ScenarioError, Strategy};
use search::{End, Runner, Search};

/// Default time bound of a shrink, in seconds (`--max-s`).
pub const MAX_S_DEFAULT: f64 = 60.0;
/// Largest time bound, in seconds (30 days): a bound must be representable as a
/// deadline on every platform's clock.
pub const MAX_S_MAX: f64 = 2_592_000.0;
/// Most kept names or events listed in the report, per kind.
const KEPT_SHOWN_MAX: usize = 8;

/// How to shrink.
#[derive(Clone, Debug)]
pub struct ShrinkOptions {
    /// The seed of the failing run (default: the file's `seed`).
    pub seed: Option<u64>,
    /// The strategy of the failing run (default: the file's `explore`, else random).
    pub explore: Option<Strategy>,
    /// The time bound, in seconds: 0 to [`MAX_S_MAX`].
    pub max_s: f64,
    /// The scenario answerers that are the program's own: every candidate runs
    /// with them (a candidate without one's row simply has no such answerer).
    pub answerers: crate::answerer::Answerers,
    /// The broker is this outside process instead of asksim's.
    pub broker: Option<crate::wire::Endpoint>,
}

impl Default for ShrinkOptions {
    fn default() -> Self {
        ShrinkOptions {
            seed: None,
            explore: None,
            max_s: MAX_S_DEFAULT,
            answerers: Default::default(),
            broker: None,
        }
    }
}

/// Where a shrink is, for a progress bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Candidates run so far.
    pub runs: u64,
    /// Elements left in the smallest failing scenario so far.
    pub elements: usize,
    /// Elements of the expanded input.
    pub elements_start: usize,
}

/// What a shrink found.
#[derive(Clone, Debug, PartialEq)]
pub struct ShrinkReport {
    /// The input, as named.
    pub file: String,
    /// The seed every run used.
    pub seed: u64,
    /// The strategy every run used.
    pub strategy: Strategy,
    /// The outside broker every run spoke to, if the broker was not asksim's.
    pub broker: Option<crate::wire::Endpoint>,
    /// The failure kept: the primary item of the input's signature.
    pub failure: Failure,
    /// The `count` rows written out (`agents[0] (count 20): worker0 … worker19`).
    pub expanded: Vec<String>,
    /// Elements of the expanded input, by kind.
    pub before: Tally,
    /// Elements of the result, by kind.
    pub after: Tally,
    /// Optional keys removed (`about`, `jitter`, `limits.events_max`).
    pub removed_keys: Vec<String>,
    /// Values made smaller (`jitter.max 0.01 → 0.0025`).
    pub changed: Vec<String>,
    /// Candidates run.
    pub runs: u64,
    /// Whether the result is proved 1-minimal; `false` when the time bound was hit.
    pub minimal: bool,
    /// The result.
    pub scenario: Value,
    /// The result as written: pretty JSON (two-space indent) and a newline.
    pub text: String,
}

/// Why nothing was shrunk.
#[derive(Debug, thiserror::Error)]
pub enum ShrinkError {
    /// The input is not a valid scenario.
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// The input passes: there is no failure to keep.
    #[error(
        "{file} does not fail under seed {seed} (--explore {strategy}, virtual clock): nothing to shrink"
    )]
    Passes {
        /// The input.
        file: String,
        /// The seed.
        seed: u64,
        /// The strategy.
        strategy: Strategy,
    },
    /// An outside process (`--broker-cmd`, a `process` answerer) could not
    /// start: the scenario cannot change that, and removing everything would
    /// "keep" the failure (a typo in the command made a 1-minimal empty file).
    #[error("{file}: {failure}: fix the command; the scenario cannot change it, nothing to shrink")]
    NotStarted {
        /// The input.
        file: String,
        /// The failure, as the run says it.
        failure: Failure,
    },
    /// The time bound is out of range.
    #[error("--max-s: expected a number of seconds from 0 to {MAX_S_MAX}, got {0}")]
    MaxS(f64),
    /// A scenario the search made no longer failed when checked again (a bug in
    /// the shrinker: the runs are deterministic).
    #[error("{file}: {what} no longer fails the same way ({failure}); please report this")]
    NotReproduced {
        /// The input.
        file: String,
        /// Which scenario.
        what: &'static str,
        /// The failure it should have.
        failure: Failure,
    },
}

/// Shrinks the scenario `text` (named `file` in messages and reports). `progress`
/// is called as the search goes. Never panics.
pub fn shrink(
    file: &str,
    text: &str,
    options: &ShrinkOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<ShrinkReport, ShrinkError> {
    let started = Instant::now();
    if !(options.max_s.is_finite() && (0.0..=MAX_S_MAX).contains(&options.max_s)) {
        return Err(ShrinkError::MaxS(options.max_s));
    }
    let scenario = scenario::parse(file, text)?;
    options
        .answerers
        .check(&scenario)
        .map_err(|message| ScenarioError::new(file, message))?;
    let runner = Runner {
        label: file,
        seed: options.seed.unwrap_or(scenario.seed),
        strategy: options.explore.or(scenario.explore).unwrap_or_default(),
        answerers: &options.answerers,
        broker: options.broker.as_ref(),
    };
    let original = runner.run(&scenario).unwrap_or_default();
    let Some(primary) = original.primary().cloned() else {
        return Err(ShrinkError::Passes {
            file: file.to_owned(),
            seed: runner.seed,
            strategy: runner.strategy,
        });
    };
    if matches!(&primary, Failure::Process(why) if why.contains(crate::wire::COULD_NOT_START)) {
        return Err(ShrinkError::NotStarted {
            file: file.to_owned(),
            failure: primary,
        });
    }
    let (start, expanded) = starting_point(&runner, text, &scenario, &primary)?;
    let deadline = Duration::try_from_secs_f64(options.max_s)
        .ok()
        .and_then(|bound| started.checked_add(bound));
    let (seed, strategy) = (runner.seed, runner.strategy);
    let mut search = Search::new(runner, primary.clone(), start.clone(), deadline, progress);
    let end = search.minimise();
    let (mut result, runs) = (search.current, search.runs);
    carry_run(&mut result, &scenario, seed, strategy);
    let text = pretty(&result);
    if !reproduces(file, &text, &primary, &options.answerers, options.broker.as_ref()) {
        return Err(not_reproduced(file, "the shrunk scenario", primary));
    }
    let (removed_keys, changed) = key_changes(&start, &result);
    Ok(ShrinkReport {
        file: file.to_owned(),
        seed,
        strategy,
        broker: options.broker.clone(),
        failure: primary,
        expanded,
        before: Tally::of(&start),
        after: Tally::of(&result),
        removed_keys,
        changed,
        runs,
        minimal: end == End::Minimal,
        scenario: result,
        text,
    })
}

/// Writes the failing run's seed, strategy and clock (virtual) into the result
/// where they differ from what the input's own `seed`, `explore` and `clock` say,
/// so that `asksim run` of the shrunk file, with no flags, fails the same way.
fn carry_run(result: &mut Value, input: &scenario::Scenario, seed: u64, strategy: Strategy) {
    let Some(map) = result.as_object_mut() else {
        return;
    };
    let mut carried = Vec::new();
    if seed != input.seed {
        carried.push(("seed", Value::from(seed)));
    }
    if strategy != input.explore.unwrap_or_default() {
        carried.push(("explore", Value::from(strategy.to_string())));
    }
    // Shrinking runs on the virtual clock: a file that says `real` would run
    // the result on the wall clock, where its seed picks no order.
    if input.clock == scenario::Clock::Real {
        carried.push(("clock", Value::from("virtual")));
    }
    for (key, value) in carried {
        if let Some(slot) = map.get_mut(key) {
            *slot = value;
            continue;
        }
        // A new key goes after `name` (and `about`), where a person looks for it.
        let after = if map.contains_key("about") {
            "about"
        } else {
            "name"
        };
        let old = std::mem::take(map);
        for (k, v) in old {
            let here = k == after;
            map.insert(k, v);
            if here {
                map.insert(key.to_owned(), value.clone());
            }
        }
        map.entry(key.to_owned()).or_insert(value);
    }
}

/// Whether the scenario `text`, run under its own `seed` and `explore` as
/// `asksim run` runs it, fails with `primary`.
fn reproduces(
    file: &str,
    text: &str,
    primary: &Failure,
    answerers: &crate::answerer::Answerers,
    broker: Option<&crate::wire::Endpoint>,
) -> bool {
    let Ok(parsed) = scenario::parse(file, text) else {
        return false;
    };
    let runner = Runner {
        label: file,
        seed: parsed.seed,
        strategy: parsed.explore.unwrap_or_default(),
        answerers,
        broker,
    };
    runner.run(&parsed).is_some_and(|s| s.contains(primary))
}

fn not_reproduced(file: &str, what: &'static str, failure: Failure) -> ShrinkError {
    ShrinkError::NotReproduced {
        file: file.to_owned(),
        what,
        failure,
    }
}

/// The file's JSON with `count` and `repeat` written out, and a note per row, when
/// that parses to the same scenario and fails the same way; else the JSON as
/// written (the shrinker then removes whole rows).
fn starting_point(
    runner: &Runner,
    text: &str,
    scenario: &scenario::Scenario,
    primary: &Failure,
) -> Result<(Value, Vec<String>), ShrinkError> {
    let written: Value = serde_json::from_str(text).map_err(|error| {
        ShrinkError::Scenario(ScenarioError::new(runner.label, format!("not JSON: {error}")))
    })?;
    let mut expanded = written.clone();
    let notes = expand::expand(&mut expanded);
    let same = |value: &Value| {
        let text = serde_json::to_string(value).unwrap_or_default();
        scenario::parse(runner.label, &text).as_ref() == Ok(scenario)
            && runner.signature(&text).is_some_and(|s| s.contains(primary))
    };
    if same(&expanded) {
        return Ok((expanded, notes));
    }
    if expanded != written && same(&written) {
        let note = "count and repeat kept as written (writing them out did not give the same scenario)";
        return Ok((written, vec![note.to_owned()]));
    }
    Err(not_reproduced(runner.label, "the input", primary.clone()))
}

/// Pretty JSON, two-space indent, and a final newline: a file for people.
fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// The optional keys `start` has and `result` has not, and `jitter.max` if smaller.
fn key_changes(start: &Value, result: &Value) -> (Vec<String>, Vec<String>) {
    let paths = [
        "/about",
        "/jitter",
        "/limits",
        "/limits/virtual_s_max",
        "/limits/events_max",
    ];
    let mut removed = Vec::new();
    for path in paths {
        let parent_gone = path.rfind('/').is_some_and(|at| {
            at > 0 && result.pointer(&path[..at]).is_none() && start.pointer(&path[..at]).is_some()
        });
        if start.pointer(path).is_some() && result.pointer(path).is_none() && !parent_gone {
            removed.push(path[1..].replace('/', "."));
        }
    }
    let mut changed = Vec::new();
    let max = |value: &Value| value.pointer("/jitter/max").and_then(Value::as_f64);
    if let (Some(before), Some(after)) = (max(start), max(result))
        && before != after
    {
        changed.push(format!("jitter.max {before} → {after}"));
    }
    (removed, changed)
}

/// Where `asksim shrink FILE` writes by default: FILE with its extension replaced
/// by `.min.json` (`f.json` → `f.min.json`).
pub fn default_out(file: &Path) -> PathBuf {
    file.with_extension("min.json")
}

/// The command that reproduces the shrunk failure from `out`.
pub fn reproduce_command(
    out: &str,
    seed: u64,
    strategy: Strategy,
    broker: Option<&crate::wire::Endpoint>,
) -> String {
    format!(
        "{}asksim run {} --seed {seed} --clock virtual --explore {strategy}{}",
        crate::sim::engine::reproduce::env_prefix(),
        crate::sim::engine::reproduce::shell_word(out),
        crate::sim::engine::reproduce::broker_flag(broker)
    )
}

/// The human report of a shrink whose result was written to `out`.
pub fn render(report: &ShrinkReport, out: &str) -> String {
    let (seed, strategy) = (report.seed, report.strategy);
    let mut text = format!(
        "asksim shrink: {} (seed {seed}, virtual clock, explore {strategy})\n",
        report.file
    );
    let mut row = |name: &str, value: &str| text.push_str(&format!("  {name:<15} {value}\n"));
    row("fails with", &report.failure.to_string());
    for note in &report.expanded {
        row("expanded", note);
    }
    row("removed", &removed(report));
    if !report.removed_keys.is_empty() {
        row("removed keys", &report.removed_keys.join(", "));
    }
    for change in &report.changed {
        row("changed", change);
    }
    row("kept", &kept(&report.scenario));
    row("runs", &report.runs.to_string());
    let minimal = if report.minimal {
        "yes: removing any one remaining element or optional key stops this failure or makes the file invalid"
    } else {
        "NOT PROVEN: the time bound (--max-s) was hit; this is the smallest failing scenario found so far and it may not be 1-minimal"
    };
    row("1-minimal", minimal);
    row("wrote", out);
    text.push_str(&format!(
        "  reproduce with: {}\n",
        reproduce_command(out, seed, strategy, report.broker.as_ref())
    ));
    text
}

/// `19 of 20 agents, 2 of 3 answerers, …`: every kind the input had.
fn removed(report: &ShrinkReport) -> String {
    let before = report.before.named();
    let after = report.after.named();
    let parts: Vec<String> = (before.iter().zip(after))
        .filter(|((_, n), _)| *n > 0)
        .map(|((name, n), (_, left))| format!("{} of {n} {name}", n.saturating_sub(left)))
        .collect();
    if report.before.total() == report.after.total() {
        "nothing".to_owned()
    } else {
        parts.join(", ")
    }
}

/// The root agents, answerers and events left, by name (events as compact JSON).
fn kept(scenario: &Value) -> String {
    let list = |key: &str, show: &dyn Fn(&Value) -> String| -> String {
        let items = scenario.get(key).and_then(Value::as_array);
        let items: Vec<String> = items.into_iter().flatten().map(show).collect();
        let mut shown = items
            .iter()
            .take(KEPT_SHOWN_MAX)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if items.len() > KEPT_SHOWN_MAX {
            shown.push_str(&format!(" and {} more", items.len() - KEPT_SHOWN_MAX));
        }
        if items.is_empty() {
            format!("{key} none")
        } else {
            format!("{key} {shown}")
        }
    };
    let name = |value: &Value| {
        let name = value.get("name").and_then(Value::as_str);
        name.unwrap_or("?").to_owned()
    };
    let event = |value: &Value| serde_json::to_string(value).unwrap_or_default();
    format!(
        "{}; {}; {}",
        list("agents", &name),
        list("answerers", &name),
        list("events", &event)
    )
}
