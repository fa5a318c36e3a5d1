//! The scenario file format (SPEC §5): pure data and its validation.
//!
//! A scenario file is read ([`load`]), parsed with serde ([`parse`]; unknown keys
//! are errors everywhere), then expanded and checked into a [`Scenario`] that the
//! driver runs as is: `count` rows are fanned out, `repeat` blocks unrolled, every
//! name and reference checked. This module owns the format; it never runs anything,
//! never touches a clock or a runtime, and never panics on any input.
//!
//! # Errors
//!
//! Every error is a [`ScenarioError`] naming the file, with `line:column` where a
//! position exists. Lines and columns count from 1; columns count characters
//! (Unicode scalar values, as SPEC §2.3 does), not bytes. Syntax and type errors
//! carry serde_json's position (converted to characters), prefixed with the JSON
//! path of the innermost value that holds it. Errors found after parsing name the
//! JSON path of the offending value in the file (`agents[0].script[2].join: …`) and
//! are located by a second, position-recording pass over the text; when that path is
//! not in the file (a missing key), the nearest enclosing value is given instead.
//! Only the first error of a file is reported. An unknown key or variant (a
//! top-level key, a step, an event key, an `accepts` or `latency` form, an
//! `expect.counts` name, a `tool` key, an `explore` form) ends with `; did you mean
//! `x`?` when one known name is close: an edit distance (a swap of two neighbouring
//! characters counts 1) of at most 1 for a name of up to 4 characters, 2 for a
//! longer one, and no other name as close (`suggest.rs`).
//!
//! # JSON Schema
//!
//! [`json_schema`] derives a JSON Schema (draft-07) from the same serde shapes the
//! parser reads (`raw.rs`), for editors; `asksim schema --scenario` prints it.
//!
//! # Decisions where SPEC §5 is silent
//!
//! - Required keys: `name` (top level, non-empty); an answerer's `name`, `accepts`,
//!   `latency` and `answer`; an agent's `name`; an event's `at`. `answerers`,
//!   `agents`, `events` default to empty, `script` and `on_resume` to empty.
//! - An answerer with `"accepts": "none"` may leave out `latency` (then `"never"`)
//!   and `answer` (then `"recommended"`): it declines every offer, so neither is
//!   ever used. Given, they are checked as for any answerer.
//! - `latency` and `offer_latency` take a bare number of seconds for
//!   `{"fixed": s}`; an error about it names `latency` itself, not `latency.fixed`.
//! - `"$schema"` (a string, for editors) is read and ignored. `explore` is
//!   `"random"`, `"fifo"` or `"pct:D"` with D from 1 to [`PCT_DEPTH_MAX`], written
//!   as [`Strategy`] displays it; absent, [`Scenario::explore`] is `None`.
//! - `broker.open_calls_max` (1 to [`crate::limits::OPEN_CALLS_MAX`]) and
//!   `broker.agents_per_tree_max` (1 to [`crate::limits::AGENTS_PER_TREE_MAX`]) lower
//!   the broker's limits for the run, so a scenario can reach `LIMIT_EXCEEDED`; a
//!   file cannot raise them past the broker's own.
//! - `count` must be 1 to its maximum ([`AGENTS_MAX`], [`ANSWERERS_MAX`]); `{i}` is
//!   substituted only in rows that have a `count` (also `count: 1`). A name that
//!   still holds `{i}` (no `count`) or `{r}` (a spawn outside any `repeat`) after
//!   expansion is an error, as is `count > 1` without `{i}` (the copies would share a
//!   name). For an agent row, `{i}` is also substituted in its `lineage.parent` and,
//!   recursively, in the names of its spawns and its `join`/`await_answer` strings
//!   (never in `ask` arguments, which are passed verbatim).
//! - `repeat`: `times` may be 0 (the block is dropped). `{r}` is substituted in spawn
//!   names (recursively through the spawned child's own scripts) and in `join` and
//!   `await_answer` strings; in nested repeats `{r}` is the innermost repetition.
//! - Names of agents (roots and every spawned child) and answerers share one
//!   namespace: unique in the run, non-empty, without `/`.
//! - A spawned child's [`AgentSpec::lineage_parent`] is its spawner (the durable
//!   record of who spawned it); a root's is its `lineage.parent`, if any. `spawn`
//!   takes `name`, `script` and `on_resume` only.
//! - `join` must name a child spawned earlier in the same script (`script` and
//!   `on_resume` are separate scripts). Joining the same child twice is allowed.
//! - `await_answer` must be `"<this agent>/<n>"`, `n` a decimal integer ≥ 1 without
//!   leading zeros; whether call `n` exists is a run-time matter (it returns at once
//!   if the call never went pending). Every other callId of a file follows the
//!   same rule, with any agent of the run: `cancel_call`, and each of `expect`
//!   (a key of `results`, a user message's `callId`, a final result's `results`
//!   keys and `unresolved` callIds); one its agent can never make (past what its
//!   `script` and, once per `process_loss`, its `on_resume` make) is an error too
//!   (`calls`).
//! - `ask_unresolved.timeout` is checked like a tool timeout (positive up to
//!   86,400, or `-1`); `ask`/`ask_raw` arguments are never checked here: invalid
//!   arguments are a legitimate thing to simulate.
//! - `faults` may give both `crash_at` and `crash_after_accepts` (the first to come
//!   wins at run time); `crash_after_accepts: 0` is an error (use `crash_at: 0`).
//! - Times: finite and non-negative everywhere; `broker.offer_timeout` and the
//!   `limits` must be positive; `exp` means positive; `uniform` needs min ≤ max.
//! - Every time is bounded, so no arithmetic on times can overflow later:
//!   `limits.virtual_s_max` is at most [`VIRTUAL_S_MAX_MAX`] (10^9 s), and every
//!   other time or duration is at most the file's `virtual_s_max` (read first;
//!   default [`VIRTUAL_S_MAX_DEFAULT`]): `events[].at`, `faults.crash_at`, `work`,
//!   every form of `latency` and `offer_latency` (the fixed value, both `uniform`
//!   bounds, the `exp` mean), `hold.after`, `process_loss.restart_after`,
//!   `jitter.max` and `broker.offer_timeout`. Nothing past `virtual_s_max` could be
//!   seen anyway: the run stops there. Exactly the bound is accepted. Tool timeouts
//!   (`tool.timeout`, `ask_unresolved.timeout`) keep their own bound, 86,400 s
//!   (SPEC §2.1). An `exp` draw is not bounded by its mean: a run draws it.
//! - `jitter` is accepted with either clock; the driver applies it only on the
//!   virtual clock (`--clock` may switch clocks after loading).
//! - `expect`: `counts` keys are outcome names of SPEC §6 or error codes;
//!   `user_messages` and `final_results` keys must be agents of the run, as must a
//!   final result's `agent` and the `spawn` of its `errors`. Only those fields of
//!   an expected value are read: a value of another shape is compared as it is.
//!   Duplicate keys inside those maps follow serde_json (the last wins).
//! - Events with the same `at` keep their file order.
//! - Wherever the format shows an object, only an object is read: serde's derived
//!   structs would also take an array of their fields in order (`"broker": [1.0]`).
//! - `seed`, `count`, `times`, `events_max` and `crash_after_accepts` are JSON
//!   integers (`1.0` is a type error); times may be integers or decimals.
//! - A file larger than [`FILE_BYTES_MAX`] is refused before it is read.

mod build;
mod calls;
pub(crate) use calls::Reach;
mod explore;
mod located;
mod raw;
mod suggest;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustc_hash::FxHashMap;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::tool::ToolConfig;

pub use explore::{PCT_DEPTH_MAX, Strategy};

/// Most agents in one run: every root after fan-out and every spawned child after
/// unrolling.
pub const AGENTS_MAX: u64 = 100_000;
/// Most answerers in one run, after fan-out: the broker's waterfall limit.
pub const ANSWERERS_MAX: u64 = crate::limits::ANSWERERS_MAX as u64;
/// Most script steps in one run, after fan-out and unrolling, counting every
/// agent's `script` and `on_resume`, spawned children's included.
pub const STEPS_MAX: u64 = 1_000_000;
/// Largest `repeat.times`.
pub const REPEAT_TIMES_MAX: u64 = 1_000_000;
/// Most scheduled events in one file.
pub const EVENTS_MAX: u64 = 1_000_000;
/// Most words in a `process` answerer's command.
pub const PROCESS_WORDS_MAX: u64 = 256;
/// Deepest nesting of `spawn` and `repeat` inside one another.
pub const NESTING_MAX: usize = 32;
/// Largest scenario file, in bytes (64 MiB).
pub const FILE_BYTES_MAX: u64 = 64 * 1024 * 1024;
pub use crate::limits::{EVENTS_MAX_DEFAULT, OFFER_TIMEOUT_S_DEFAULT};
/// Default limit on a run's virtual time, in seconds (one day).
pub const VIRTUAL_S_MAX_DEFAULT: f64 = 86_400.0;
/// Largest `limits.virtual_s_max`, in seconds (about 31.7 years): every other time
/// of a file is at most the file's `virtual_s_max`, so a few of them added up in
/// nanoseconds stay far inside a `u64` (about 1.8 × 10^10 s).
pub const VIRTUAL_S_MAX_MAX: f64 = 1e9;

/// The outcome names of SPEC §6 that `expect.counts` may name, besides the error
/// codes.
pub const OUTCOME_NAMES: [&str; 7] = [
    "answered",
    "pending",
    "late_answered",
    "withdrawn",
    "pending_open",
    "lost_on_restart",
    "open",
];

/// A scenario, loaded and checked: what the driver runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The scenario's name (logged in the log header).
    pub name: String,
    /// What it exercises, for humans.
    pub about: String,
    /// The seed of the run's one random generator (`--seed` overrides it).
    pub seed: u64,
    /// Which clock the run uses (`--clock` overrides it).
    pub clock: Clock,
    /// The plugin row, validated.
    pub tool: ToolConfig,
    /// Broker settings.
    pub broker: BrokerSpec,
    /// The waterfall, in order: `count` rows fanned out, `{i}` substituted.
    pub answerers: Vec<AnswererSpec>,
    /// The root agents, fanned out, in file order; children sit in their scripts.
    /// Shared, so a run's agents hold the scenario's specs instead of copies.
    pub agents: Vec<Arc<AgentSpec>>,
    /// Scheduled events, stable-sorted by time.
    pub events: Vec<EventSpec>,
    /// The largest random delay added to each message between actors, in seconds.
    pub jitter_max_s: Option<f64>,
    /// When a run stops.
    pub limits: Limits,
    /// The scheduling strategy the file asks for (`--explore` overrides it); `None`
    /// when the file names none, which means [`Strategy::Random`].
    pub explore: Option<Strategy>,
    /// What the run must produce, if anything.
    pub expect: Option<Expect>,
}

impl Scenario {
    /// Every agent of the run: each root followed by the children it spawns
    /// (depth-first, `script` before `on_resume`), in file order.
    pub fn all_agents(&self) -> Vec<&AgentSpec> {
        let mut out = Vec::new();
        for agent in &self.agents {
            agent.collect(&mut out);
        }
        out
    }

    /// [`Scenario::all_agents`] as the shared specs themselves, keyed by name: what
    /// a run starts its agents from. Hashed, for lookups by name: nothing reads it
    /// in order (a tree of 10^5 children compared names at every level of a B-tree).
    pub fn specs(&self) -> FxHashMap<&str, Arc<AgentSpec>> {
        fn walk<'a>(spec: &'a Arc<AgentSpec>, out: &mut FxHashMap<&'a str, Arc<AgentSpec>>) {
            out.insert(&spec.name, spec.clone());
            for step in spec.script.iter().chain(spec.on_resume.iter()) {
                if let Step::Spawn(child) = step {
                    walk(child, out);
                }
            }
        }
        let mut out = FxHashMap::default();
        for agent in &self.agents {
            walk(agent, &mut out);
        }
        out
    }
}

/// The run's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase", expecting = "\"virtual\" or \"real\"")]
pub enum Clock {
    /// Paused tokio time on a current-thread runtime, seeded: deterministic.
    Virtual,
    /// The wall clock on a multi-thread runtime: for load and throughput.
    Real,
}

impl Clock {
    /// The clock's name, as the scenario format and the reports write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Clock::Virtual => "virtual",
            Clock::Real => "real",
        }
    }

    /// A clock's name back to the clock.
    pub fn named(name: &str) -> Option<Clock> {
        [Clock::Virtual, Clock::Real]
            .into_iter()
            .find(|clock| clock.as_str() == name)
    }
}

/// Broker settings (`broker`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BrokerSpec {
    /// Seconds an answerer has to reply to an offer before it counts as declining.
    pub offer_timeout_s: f64,
    /// Most open calls at once (`broker.open_calls_max`, 1 to
    /// [`crate::limits::OPEN_CALLS_MAX`]); `None`: the broker's own limit.
    pub open_calls_max: Option<u64>,
    /// Most agents in one tree, stopped ones included
    /// (`broker.agents_per_tree_max`, 1 to [`crate::limits::AGENTS_PER_TREE_MAX`]);
    /// `None`: the broker's own limit.
    pub agents_per_tree_max: Option<u64>,
}

impl BrokerSpec {
    /// The broker's limits this spec asks for (the broker's own where it is silent).
    pub fn limits(&self) -> crate::limits::BrokerLimits {
        let defaults = crate::limits::BrokerLimits::default();
        let cap = |asked: Option<u64>, default: usize| {
            asked.map_or(default, |n| usize::try_from(n).unwrap_or(default))
        };
        crate::limits::BrokerLimits {
            open_calls_max: cap(self.open_calls_max, defaults.open_calls_max),
            agents_per_tree_max: cap(self.agents_per_tree_max, defaults.agents_per_tree_max),
        }
    }
}

impl Default for BrokerSpec {
    fn default() -> Self {
        BrokerSpec {
            offer_timeout_s: OFFER_TIMEOUT_S_DEFAULT,
            open_calls_max: None,
            agents_per_tree_max: None,
        }
    }
}

/// When a run stops (`limits`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Most virtual seconds a run may last.
    pub virtual_s_max: f64,
    /// Most log events a run may write.
    pub events_max: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            virtual_s_max: VIRTUAL_S_MAX_DEFAULT,
            events_max: EVENTS_MAX_DEFAULT,
        }
    }
}

/// One answerer of the waterfall, after `count` fan-out.
#[derive(Clone, Debug, PartialEq)]
pub struct AnswererSpec {
    /// Its unique name.
    pub name: String,
    /// How it behaves: the same data the built-in answerer acts on. For a
    /// `process` answerer it is not used (and says so: it accepts nothing).
    pub policy: Policy,
    /// An answerer outside asksim: the command of a process speaking
    /// PROTOCOL.md (program and arguments), started in every life of a run.
    pub process: Option<Vec<String>>,
}

impl Scenario {
    /// Whether an answerer of the run is an outside process.
    pub fn has_process_answerers(&self) -> bool {
        self.answerers.iter().any(|a| a.process.is_some())
    }
}

pub use crate::policy::{Accepts, AnswerPolicy, Latency, Policy};

/// An agent: a root of the run, or a child inside a [`Step::Spawn`].
#[derive(Clone, Debug, PartialEq)]
pub struct AgentSpec {
    /// Its unique name (shared with the agent, its registration and its events).
    pub name: crate::protocol::Name,
    /// Who spawned it: a root's `lineage.parent` (free text), a child's spawner.
    pub lineage_parent: Option<crate::protocol::Text>,
    /// Its script, `repeat` unrolled. Shared: the copies of a `count` row whose
    /// scripts name no agent or call hold one list of steps between them.
    pub script: Arc<[Step]>,
    /// The script it runs after a restart, `repeat` unrolled (shared likewise).
    pub on_resume: Arc<[Step]>,
}

impl AgentSpec {
    /// The children this agent spawns directly, in script order (`script`, then
    /// `on_resume`).
    pub fn children(&self) -> impl Iterator<Item = &AgentSpec> {
        self.script
            .iter()
            .chain(self.on_resume.iter())
            .filter_map(|step| match step {
                Step::Spawn(child) => Some(&**child),
                _ => None,
            })
    }

    fn collect<'a>(&'a self, out: &mut Vec<&'a AgentSpec>) {
        out.push(self);
        for child in self.children() {
            child.collect(out);
        }
    }
}

/// One script step. `repeat` is unrolled at load, so it has no variant.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A tool call; the arguments are the compact JSON text of the `ask` value, in
    /// the author's key order. Not validated: that happens in the call.
    Ask {
        /// The call's arguments as JSON text, shared by every copy of a `count`
        /// row or `repeat` body.
        arguments: Arc<str>,
    },
    /// A tool call with any JSON as arguments (`ask_raw`), compact JSON text.
    AskRaw {
        /// The call's arguments as JSON text, shared like [`Step::Ask`]'s.
        arguments: Arc<str>,
    },
    /// One call asking the unresolved questions of the children joined so far;
    /// skipped when there are none.
    AskUnresolved {
        /// The call's timeout (positive seconds or `-1`), if given.
        timeout: Option<f64>,
    },
    /// Independent work for this many seconds.
    Work(f64),
    /// Start a child owned by this agent and go on at once (the spec is shared
    /// with every child it starts).
    Spawn(Arc<AgentSpec>),
    /// Wait for the named child's script to end and take its final result.
    Join(String),
    /// Wait until this agent's call number n (its callId `<agent>/<n>`) is
    /// settled for good. The file names the whole callId, and it must be one
    /// of this agent's; kept as its number, the step names no agent, so the
    /// copies of a `count` row share it with the rest of their script.
    AwaitAnswer(u64),
}

/// A scheduled event.
#[derive(Clone, Debug, PartialEq)]
pub struct EventSpec {
    /// When, in run seconds.
    pub at_s: f64,
    /// What happens.
    pub action: Action,
}

impl EventSpec {
    /// The event as the scenario file writes it (and the log's `dropped`
    /// records it).
    pub fn to_json(&self) -> Value {
        let at = self.at_s;
        match &self.action {
            Action::CancelTurn(name) => serde_json::json!({"at": at, "cancel_turn": name}),
            Action::CancelCall(call_id) => serde_json::json!({"at": at, "cancel_call": call_id}),
            Action::StopAgent(name) => serde_json::json!({"at": at, "stop_agent": name}),
            Action::CrashAnswerer(name) => serde_json::json!({"at": at, "crash_answerer": name}),
            Action::ProcessLoss { restart_after_s } => {
                serde_json::json!({"at": at, "process_loss": {"restart_after": restart_after_s}})
            }
        }
    }
}

/// What a scheduled event does.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Fire this agent's turn signal.
    CancelTurn(String),
    /// Cancel this call (a callId).
    CancelCall(String),
    /// The whole runtime dies and restarts this many seconds later.
    ProcessLoss {
        /// Seconds until the restart (non-negative).
        restart_after_s: f64,
    },
    /// Stop this agent.
    StopAgent(String),
    /// Crash this answerer.
    CrashAnswerer(String),
}

/// What a run must produce (`expect`); every map is ordered by key.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Expect {
    /// callId → the exact result JSON (an error's `message` may be left out).
    pub results: BTreeMap<String, Value>,
    /// Agent → the user messages it receives, in order.
    pub user_messages: BTreeMap<String, Vec<Value>>,
    /// Outcome name or error code → count.
    pub counts: BTreeMap<String, u64>,
    /// Agent → its final result.
    pub final_results: BTreeMap<String, Value>,
}

/// A bad scenario file: which file, where (when a position exists) and why.
///
/// Displays as `file:line:column: message`, or `file: message` without a position.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {message}", position_suffix(.line, .column))]
pub struct ScenarioError {
    /// The file, as the user named it.
    pub file: String,
    /// The line, from 1.
    pub line: Option<usize>,
    /// The column, from 1, in characters.
    pub column: Option<usize>,
    /// What is wrong; for errors past parsing, it starts with the JSON path.
    pub message: String,
}

impl ScenarioError {
    /// An error about `file` as a whole, without a position.
    pub fn new(file: &str, message: impl Into<String>) -> Self {
        ScenarioError {
            file: file.to_owned(),
            line: None,
            column: None,
            message: message.into(),
        }
    }
}

fn position_suffix(line: &Option<usize>, column: &Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!(":{line}:{column}"),
        (Some(line), None) => format!(":{line}"),
        _ => String::new(),
    }
}

/// Reads, parses and checks one scenario file. Never panics: a missing file, a
/// directory, a file over [`FILE_BYTES_MAX`], non-UTF-8 or non-JSON text are
/// errors naming the file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let text = read_text(path, &file)?;
    parse(&file, &text)
}

/// [`load`], also giving back the file's text: a sharded sweep records it, so
/// that `asksim merge` folds its report with the very scenario the shards ran.
pub fn load_text(path: &Path) -> Result<(Scenario, String), ScenarioError> {
    let file = path.display().to_string();
    let text = read_text(path, &file)?;
    let scenario = parse(&file, &text)?;
    Ok((scenario, text))
}

/// Parses and checks the text of a scenario file; `file_label` names it in errors.
pub fn parse(file_label: &str, text: &str) -> Result<Scenario, ScenarioError> {
    let raw::Obj(raw) = serde_json::from_str::<raw::Obj<raw::RawScenario>>(text).map_err(|err| {
        if is_log(text) {
            let message = "this is an asksim log (JSON Lines), not a scenario file: \
                           `asksim replay FILE` reads a log; `asksim run` takes a scenario";
            return ScenarioError::new(file_label, message);
        }
        located::position::serde_error(file_label, text, &err)
    })?;
    // Events, then `expect`: the order the build checks them in.
    let mut named = calls::cancel_calls(&raw.events);
    let scenario =
        build::build(raw).map_err(|issue| located::position::issue_error(file_label, text, issue))?;
    named.extend(scenario.expect.iter().flat_map(calls::expect_references));
    calls::check(&scenario, &named).map_err(|(path, message)| {
        located::position::issue_error(file_label, text, build::Issue { path, message })
    })?;
    Ok(scenario)
}

/// An answerer row of the scenario format (SPEC §5: `accepts`, `offer_latency`,
/// `latency`, `answer`, `hold`, `faults`; no `name` or `count`) as a [`Policy`],
/// checked as a file's row is, with the same messages (`latency: expected a
/// non-negative number of seconds, got -2`).
///
/// ```
/// let policy = asksim::scenario::policy(&asksim::serde_json::json!({
///     "accepts": {"agents": ["worker*"]}, "latency": {"uniform": [1, 5]},
///     "answer": {"option": 1}, "hold": {"after": 0.5}, "faults": {"crash_at": 60}
/// }))
/// .unwrap();
/// assert_eq!(policy.hold_after_s, Some(0.5));
/// assert!(asksim::scenario::policy(&asksim::serde_json::json!({"accepts": "all"})).is_err());
/// ```
pub fn policy(row: &Value) -> Result<crate::policy::Policy, String> {
    // Keys an answerer row may have in a file but a policy cannot: a policy is
    // one answerer of asksim's own, named by its caller.
    for (key, why) in [
        ("process", "a process answerer is a program, not a policy"),
        (
            "count",
            "`count` copies a row of a scenario; a policy is one answerer",
        ),
    ] {
        if row.get(key).is_some() {
            return Err(format!("{key}: {why}"));
        }
    }
    let mut row = row.clone();
    if let Some(fields) = row.as_object_mut() {
        fields.insert("name".into(), Value::from("policy"));
    }
    let file = serde_json::json!({ "name": "policy", "answerers": [row] });
    let scenario = parse("policy", &file.to_string()).map_err(|error| {
        let message = error.message;
        match message.strip_prefix("answerers[0].") {
            Some(rest) => rest.to_owned(),
            None => message.replacen("answerers[0]", "the row", 1),
        }
    })?;
    let answerer = scenario.answerers.into_iter().next();
    answerer
        .map(|a| a.policy)
        .ok_or_else(|| "expected an answerer row".to_owned())
}

/// Whether `text` starts like an event log: its first line a log header.
fn is_log(text: &str) -> bool {
    let first = text.lines().next().unwrap_or_default();
    serde_json::from_str::<Value>(first)
        .is_ok_and(|header| header.get("format").and_then(Value::as_str) == Some(crate::log::LOG_FORMAT))
}

/// The JSON Schema (draft-07) of the scenario format, derived from the same serde
/// shapes the parser reads, so it cannot drift from them. It states keys, types and
/// forms (an unknown key fails it); checks that need the whole file (names,
/// references, times against `limits.virtual_s_max`) are the parser's alone.
/// `asksim schema --scenario` prints it. Draft-07 because editors (VS Code's
/// `json.schemas`) read it.
pub fn json_schema() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07().into_generator();
    generator.into_root_schema_for::<raw::RawScenario>().to_value()
}

/// Loads every file and returns the errors, in the order of `paths` (for
/// `asksim validate`: it prints nothing but these).
pub fn validate_files(paths: &[PathBuf]) -> Vec<ScenarioError> {
    paths.iter().filter_map(|path| load(path).err()).collect()
}

/// The file's text, bounded by [`FILE_BYTES_MAX`], as UTF-8.
fn read_text(path: &Path, file: &str) -> Result<String, ScenarioError> {
    let io_error = |err: std::io::Error| ScenarioError::new(file, format!("cannot read: {err}"));
    let handle = std::fs::File::open(path).map_err(io_error)?;
    let metadata = handle.metadata().map_err(io_error)?;
    if metadata.is_dir() {
        return Err(ScenarioError::new(file, "cannot read: is a directory"));
    }
    let mut bytes = Vec::new();
    handle
        .take(FILE_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > FILE_BYTES_MAX {
        return Err(ScenarioError::new(
            file,
            format!("file is larger than {FILE_BYTES_MAX} bytes"),
        ));
    }
    String::from_utf8(bytes).map_err(|err| located::position::utf8_error(file, &err))
}
