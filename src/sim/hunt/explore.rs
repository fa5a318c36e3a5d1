//! `asksim explore --all`: every delivery order of a small scenario.
//!
//! A stateless depth-first search over the scheduler's choices: each schedule is
//! a fresh run whose chooser follows a prefix of choices and then takes the first
//! one not yet explored. Sleep sets (Godefroid) cut what cannot differ: two
//! deliveries to different actors commute (each actor's state is its own, the
//! queue keeps a channel per sender and receiver, and jitter draws per channel),
//! so only the relative order of deliveries to the same receiver matters.
//!
//! Where shared state makes that unsafe, the reduction treats it as a delivery
//! to everyone: the driver's own deliveries (scheduled events, restarts) read and
//! write every actor's state (a process loss, a crash, a turn looked up by name),
//! so they are dependent with every other delivery. The event log is shared too,
//! but only its order differs between commuting deliveries, not what happened:
//! outcomes are compared, not logs.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::answerer::Answerers;
use crate::protocol::Addr;
use crate::scenario::{Clock, Scenario};
use crate::sim::engine::driver::RunOptions;
use crate::sim::engine::queue::{Candidate, Chooser};
use crate::sim::engine::ready::Ready;
use crate::sim::judge::judged;
use crate::sim::judge::summary::{Summary, Verdict, summarise};

/// Schedules explored at most, unless `--max` says otherwise.
pub const SCHEDULES_MAX_DEFAULT: u64 = 100_000;
/// The command line's time bound, in seconds, unless `--max-s` says otherwise
/// (the library's default is none).
pub const MAX_S_DEFAULT: f64 = 60.0;
/// Largest time bound, in seconds (30 days), as for `shrink`.
pub const MAX_S_MAX: f64 = crate::sim::hunt::shrink::MAX_S_MAX;

/// One choice point of the search.
struct Node {
    candidates: Vec<Candidate>,
    /// Candidates that need not be tried here (their order was covered).
    sleep: Vec<Candidate>,
    /// Candidates tried here already.
    done: Vec<Candidate>,
    chosen: Candidate,
    /// Whether delivering `chosen` touched state every actor shares (it spawned
    /// an agent, which takes the next agent id): then it commutes with nothing.
    shared: bool,
}

/// Two deliveries whose order can change what happens.
fn dependent(a: &Candidate, b: &Candidate) -> bool {
    a.to == b.to || a.to == Addr::Driver || b.to == Addr::Driver
}

/// The chooser of one schedule: the stack's choices, then new choice points.
struct Dfs<'a> {
    stack: &'a mut Vec<Node>,
    depth: usize,
    halted: bool,
    /// The choice point whose delivery is under way.
    picked: Option<usize>,
    /// Whether sleep sets prune.
    reduce: bool,
}

impl Chooser for Dfs<'_> {
    fn pick(&mut self, ready: &mut Ready) -> usize {
        // The whole ready list each step: explore is for small scopes.
        let candidates: Vec<Candidate> = ready.iter().collect();
        let candidates = candidates.as_slice();
        let index = if self.depth < self.stack.len() {
            let chosen = self.stack[self.depth].chosen;
            candidates
                .iter()
                .position(|c| c.seq == chosen.seq)
                .expect("a replayed prefix meets the same choices")
        } else {
            match self.new_node(candidates) {
                Some(index) => index,
                None => {
                    self.halted = true;
                    return 0;
                }
            }
        };
        self.picked = Some(self.depth);
        self.depth += 1;
        index
    }

    fn halted(&self) -> bool {
        self.halted
    }

    fn delivered(&mut self, shared: bool) {
        if let Some(at) = self.picked.take() {
            self.stack[at].shared = shared;
        }
    }
}

impl Dfs<'_> {
    /// A choice point reached for the first time: its sleep set comes from its
    /// parent; the first candidate awake is chosen. All asleep: every order from
    /// here was covered elsewhere, and the schedule stops.
    fn new_node(&mut self, candidates: &[Candidate]) -> Option<usize> {
        let sleep: Vec<Candidate> = match self.stack.last() {
            Some(parent) if self.reduce => parent
                .sleep
                .iter()
                .chain(&parent.done)
                .filter(|u| !parent.shared && !dependent(u, &parent.chosen))
                .filter(|u| candidates.iter().any(|c| c.seq == u.seq))
                .copied()
                .collect(),
            _ => Vec::new(),
        };
        let index = candidates
            .iter()
            .position(|c| !sleep.iter().any(|s| s.seq == c.seq))?;
        self.stack.push(Node {
            candidates: candidates.to_vec(),
            sleep,
            done: Vec::new(),
            chosen: candidates[index],
            shared: false,
        });
        Some(index)
    }
}

/// Moves the search to the next schedule: the deepest choice point with a
/// candidate neither tried nor asleep takes it; exhausted points are dropped.
/// Returns false when the whole space was explored.
fn backtrack(stack: &mut Vec<Node>) -> bool {
    while let Some(node) = stack.last_mut() {
        let chosen = node.chosen;
        node.done.push(chosen);
        let next = node.candidates.iter().find(|c| {
            !node.done.iter().any(|d| d.seq == c.seq) && !node.sleep.iter().any(|s| s.seq == c.seq)
        });
        if let Some(next) = next.copied() {
            node.chosen = next;
            node.shared = false;
            return true;
        }
        stack.pop();
    }
    false
}

/// A schedule as a compact string: the index chosen at each choice point, runs
/// of one index written `i*n` (`0*12.1.0*3`).
pub fn schedule_string(choices: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut at = 0;
    while at < choices.len() {
        let run = choices[at..].iter().take_while(|c| **c == choices[at]).count();
        parts.push(if run > 1 {
            format!("{}*{run}", choices[at])
        } else {
            choices[at].to_string()
        });
        at += run;
    }
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join(".")
    }
}

/// The choices a schedule string names, or why it names none.
pub fn parse_schedule(text: &str) -> Result<Vec<usize>, String> {
    if text == "-" {
        return Ok(Vec::new());
    }
    let mut choices = Vec::new();
    for part in text.split('.') {
        let (index, run) = part.split_once('*').unwrap_or((part, "1"));
        let index: usize = index
            .parse()
            .map_err(|_| format!("bad choice {part:?} in schedule {text:?}"))?;
        let run: usize = run
            .parse()
            .map_err(|_| format!("bad run {part:?} in schedule {text:?}"))?;
        if run == 0 || choices.len() + run > 10_000_000 {
            return Err(format!("bad run {part:?} in schedule {text:?}"));
        }
        choices.extend(std::iter::repeat_n(index, run));
    }
    Ok(choices)
}

/// Replays a schedule: the given index at each choice point. A schedule that
/// names a choice the run does not offer (an index past what is due at that step,
/// or more steps than the run has choice points) stops the run and says where
/// ([`Replay::error`]): a mistyped schedule is bad input, never another run.
pub struct Replay {
    choices: Vec<usize>,
    at: usize,
    error: Option<ScheduleError>,
}

/// Where a replayed schedule left the run's choices.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The choice at `step` (from 1) is past the candidates due there.
    #[error(
        "step {step} of the schedule takes choice {chosen}, but the run offers {offered} there (0 to {})",
        offered - 1
    )]
    NotOffered {
        /// The choice point, counted from 1.
        step: usize,
        /// The index the schedule names.
        chosen: usize,
        /// How many deliveries were due together there.
        offered: usize,
    },
    /// The run ended with steps of the schedule left over.
    #[error("the schedule has {steps} steps, but the run makes only {made} choices")]
    TooLong {
        /// Steps the schedule has.
        steps: usize,
        /// Choice points the run had.
        made: usize,
    },
}

impl Replay {
    /// A replay of `choices`.
    pub fn new(choices: Vec<usize>) -> Replay {
        Replay {
            choices,
            at: 0,
            error: None,
        }
    }

    /// What was wrong with the schedule, once the run is over: a choice it
    /// named that was not offered, or steps left when the run ended.
    pub fn error(&self) -> Option<ScheduleError> {
        if let Some(error) = &self.error {
            return Some(error.clone());
        }
        (self.at < self.choices.len()).then_some(ScheduleError::TooLong {
            steps: self.choices.len(),
            made: self.at,
        })
    }
}

impl Chooser for Replay {
    fn pick(&mut self, ready: &mut Ready) -> usize {
        let index = self.choices.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        if index >= ready.len() && self.error.is_none() {
            self.error = Some(ScheduleError::NotOffered {
                step: self.at,
                chosen: index,
                offered: ready.len(),
            });
        }
        index.min(ready.len() - 1)
    }

    fn halted(&self) -> bool {
        self.error.is_some()
    }
}

/// How many schedules ended one way.
#[derive(Clone, Debug, Serialize)]
pub struct OutcomeCount {
    /// Every call's outcome (`answers {…}`, `pending -> late_answered {…}`,
    /// `ABORTED`, …, with the full text it settled with), and whether the run
    /// passed (`(verdict)`).
    pub outcome: BTreeMap<String, String>,
    /// Schedules that ended so.
    pub count: u64,
}

/// The first schedule that failed.
#[derive(Clone, Debug, Serialize)]
pub struct FailedSchedule {
    /// The schedule, as `run --schedule` takes it.
    pub schedule: String,
    /// The command that replays exactly that schedule.
    pub reproduce: String,
    /// What broke.
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// What `explore --all` reports.
#[derive(Clone, Debug, Serialize)]
pub struct ExploreReport {
    /// The scenario's name.
    pub scenario: String,
    /// The seed (latencies and jitter draw from it; the schedule is the search's).
    pub seed: u64,
    /// Complete schedules run.
    pub schedules: u64,
    /// Schedules stopped early because every order from there was covered.
    pub pruned: u64,
    /// Whether the space was exhausted (every order of deliveries to the same
    /// receiver explored).
    pub complete: bool,
    /// The bound that stopped an incomplete search: `"max"` (schedules) or
    /// `"max_s"` (wall time); null when it is complete.
    pub bound: Option<&'static str>,
    /// The distinct outcomes, with a count each.
    pub outcomes: Vec<OutcomeCount>,
    /// The first failing schedule, if one failed.
    pub first_failure: Option<FailedSchedule>,
    /// Seconds of wall time.
    pub wall_s: f64,
}

/// How to explore.
#[derive(Clone, Debug)]
pub struct ExploreOptions {
    /// The seed latencies and jitter draw from.
    pub seed: u64,
    /// Schedules run at most, complete and pruned.
    pub max: u64,
    /// Seconds of wall time at most, checked before each schedule after the
    /// first (`None`: no bound). What a bounded search found depends on the
    /// machine's speed; the report says it is not complete.
    pub max_s: Option<f64>,
    /// Prune with sleep sets (on for every user; off only to check, in tests,
    /// that pruning loses no outcome).
    pub reduce: bool,
    /// The scenario answerers that are the program's own, explored like any
    /// other: their replies and timers are deliveries the search orders.
    pub answerers: Answerers,
    /// The broker is this outside process instead of asksim's.
    pub broker: Option<crate::wire::Endpoint>,
}

impl ExploreOptions {
    /// A reduced exploration under `seed` of at most `max` schedules, with no
    /// time bound.
    pub fn new(seed: u64, max: u64) -> ExploreOptions {
        ExploreOptions {
            seed,
            max,
            max_s: None,
            reduce: true,
            answerers: Answerers::default(),
            broker: None,
        }
    }
}

/// Where a search is, for a progress bar.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Complete schedules run so far.
    pub schedules: u64,
    /// Schedules pruned so far.
    pub pruned: u64,
}

/// Explores the delivery orders of `scenario` (loaded from `file`) as `options`
/// say; `progress` hears where the search is after each schedule.
pub fn explore(
    scenario: &Scenario,
    file: &str,
    options: ExploreOptions,
    mut progress: impl FnMut(Progress),
) -> ExploreReport {
    let (seed, max) = (options.seed, options.max);
    let wall = std::time::Instant::now();
    let deadline = (options.max_s)
        .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
        .and_then(|bound| wall.checked_add(bound));
    let mut stack: Vec<Node> = Vec::new();
    let (mut schedules, mut pruned, mut complete, mut bound) = (0u64, 0u64, false, Some("max"));
    let mut outcomes: BTreeMap<BTreeMap<String, String>, u64> = BTreeMap::new();
    let mut first_failure = None;
    while schedules + pruned < max {
        if schedules + pruned > 0 && deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            bound = Some("max_s");
            break;
        }
        let mut dfs = Dfs {
            stack: &mut stack,
            depth: 0,
            halted: false,
            picked: None,
            reduce: options.reduce,
        };
        let run = RunOptions {
            keep_events: false,
            broker: options.broker.clone(),
            answerers: options.answerers.clone(),
            journal_after: None,
            ..RunOptions::new(scenario, seed, Clock::Virtual)
        };
        let output = judged::run_with(scenario, run, &mut dfs).expect("a run writes no log");
        if dfs.halted {
            pruned += 1;
        } else {
            schedules += 1;
            let choices: Vec<usize> = stack.iter().map(index_of).collect();
            let summary = summarise(scenario, file, &output);
            *outcomes.entry(outcome_of(&output, summary.passed())).or_insert(0) += 1;
            if !summary.passed() && first_failure.is_none() {
                first_failure = Some(failed_schedule(file, &options, &choices, &summary));
            }
        }
        progress(Progress { schedules, pruned });
        if !backtrack(&mut stack) {
            (complete, bound) = (true, None);
            break;
        }
    }
    ExploreReport {
        scenario: scenario.name.clone(),
        seed,
        schedules,
        pruned,
        complete,
        bound,
        outcomes: outcomes
            .into_iter()
            .map(|(outcome, count)| OutcomeCount { outcome, count })
            .collect(),
        first_failure,
        wall_s: wall.elapsed().as_secs_f64(),
    }
}

/// The first failing schedule, with the command that replays it.
fn failed_schedule(
    file: &str,
    options: &ExploreOptions,
    choices: &[usize],
    summary: &Summary,
) -> FailedSchedule {
    let schedule = schedule_string(choices);
    FailedSchedule {
        reproduce: format!(
            "asksim run {} --seed {} --clock virtual --schedule {}{}",
            crate::sim::engine::reproduce::shell_word(file),
            options.seed,
            // A run of one choice is `C*N`: a glob, quoted.
            crate::sim::engine::reproduce::shell_word(&schedule),
            crate::sim::engine::reproduce::broker_flag(options.broker.as_ref())
        ),
        schedule,
        verdict: Verdict::of(summary),
    }
}

fn index_of(node: &Node) -> usize {
    node.candidates
        .iter()
        .position(|c| c.seq == node.chosen.seq)
        .unwrap_or(0)
}

/// A run's outcome: each call's first result, how a pending one closed, and the
/// full text it settled with.
fn outcome_of(output: &judged::RunOutput, passed: bool) -> BTreeMap<String, String> {
    let projection = output.projection();
    let mut outcome: BTreeMap<String, String> = projection
        .questions
        .iter()
        .map(|(id, q)| {
            let first = q.first.map_or("open", |(kind, _)| kind.as_str());
            let mut text = if q.went_pending {
                format!("pending -> {}", q.state.as_str())
            } else {
                first.to_owned()
            };
            if let Some(settled) = q.settled.as_ref().filter(|s| !s.starts_with(r#"{"error""#)) {
                text.push(' ');
                text.push_str(settled);
            }
            (id.to_string(), text)
        })
        .collect();
    for (id, rejected) in &projection.rejected {
        outcome.insert(id.clone(), rejected.outcome.clone());
    }
    outcome.insert(
        VERDICT_KEY.to_owned(),
        if passed { "PASS" } else { "FAIL" }.to_owned(),
    );
    outcome
}

/// The key of an outcome's verdict (it sorts before every callId).
const VERDICT_KEY: &str = "(verdict)";
/// Most calls an outcome line names one by one; more are counted by kind.
const CALLS_SHOWN_MAX: usize = 6;
/// Most characters of a settlement an outcome line shows.
const SETTLED_CHARS_MAX: usize = 80;

/// A settlement's text, cut to a readable length.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(SETTLED_CHARS_MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// One outcome as a readable line: the verdict, then each call's outcome with its
/// settlement cut to [`SETTLED_CHARS_MAX`] characters; past [`CALLS_SHOWN_MAX`]
/// calls, how many calls ended each way instead (`--json` has every call).
fn outcome_line(outcome: &BTreeMap<String, String>) -> String {
    let verdict = outcome.get(VERDICT_KEY).map_or("?", String::as_str);
    let calls: Vec<(&String, &String)> = outcome.iter().filter(|(k, _)| *k != VERDICT_KEY).collect();
    let mut parts = vec![format!("{VERDICT_KEY} {verdict}")];
    if calls.len() <= CALLS_SHOWN_MAX {
        parts.extend(calls.iter().map(|(id, text)| format!("{id} {}", shorten(text))));
        return parts.join(", ");
    }
    let mut kinds: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, text) in &calls {
        // The kind is the text before the settlement (`answers`, `pending -> withdrawn`).
        let kind = text.find(" {").map_or(text.as_str(), |at| &text[..at]);
        *kinds.entry(kind).or_insert(0) += 1;
    }
    let each: Vec<String> = kinds.iter().map(|(kind, n)| format!("{kind} {n}")).collect();
    parts.push(format!(
        "{} calls: {} (--json lists each)",
        calls.len(),
        each.join(", ")
    ));
    parts.join(", ")
}

/// The human report.
pub fn render(report: &ExploreReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let space = match report.bound {
        None => "complete",
        Some("max_s") => "not complete (--max-s reached: the search ran out of time)",
        Some(_) => "not complete (--max reached)",
    };
    let _ = writeln!(
        out,
        "asksim explore: {} (seed {}): {} schedules, {} pruned, {space}",
        report.scenario, report.seed, report.schedules, report.pruned
    );
    for outcome in &report.outcomes {
        let _ = writeln!(out, "  {:>8}  {}", outcome.count, outcome_line(&outcome.outcome));
    }
    match &report.first_failure {
        None if report.complete => {
            let _ = writeln!(out, "  no schedule failed");
        }
        None => {
            let _ = writeln!(out, "  no schedule failed of those run");
        }
        Some(failure) => {
            let _ = writeln!(out, "  FAIL schedule {}: {}", failure.schedule, failure.reproduce);
            failure.verdict.write_lines(&mut out);
        }
    }
    let _ = writeln!(out, "  {:.2} s wall", report.wall_s);
    out
}
