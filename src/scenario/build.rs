//! From the raw shapes to a checked [`Scenario`]: fan-out, unrolling, checks.
//!
//! Expansion works on templates: a `repeat` body or a `count` row is expanded once,
//! its size checked against the limits, and only then copied with `{r}` or `{i}`
//! substituted. So an absurd `times` or `count` is refused before anything is
//! allocated, and nested repeats cost their output, never their product.
//!
//! Every expanded step remembers (by index into a table of paths) the place in the
//! file it came from, so the checks that need the whole run (names, references)
//! still name the offending value in the file.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::Value;

use super::calls::{self, Named, Reference};
use super::raw::{
    Obj, RawAgent, RawAnswerer, RawBroker, RawEvent, RawExpect, RawLatency, RawLimits, RawScenario, RawStep,
};
use super::suggest::closest;
use super::{
    AGENTS_MAX, ANSWERERS_MAX, Accepts, Action, AgentSpec, AnswerPolicy, AnswererSpec, BrokerSpec, Clock,
    EVENTS_MAX, EventSpec, Expect, Latency, Limits, NESTING_MAX, OUTCOME_NAMES, PROCESS_WORDS_MAX, Policy,
    REPEAT_TIMES_MAX, STEPS_MAX, Scenario, Step, Strategy, VIRTUAL_S_MAX_DEFAULT, VIRTUAL_S_MAX_MAX,
};
use crate::limits::{AGENTS_PER_TREE_MAX, OPEN_CALLS_MAX};
use crate::policy::Written;
use crate::tool::{ErrorCode, Timeout, ToolConfig};

/// A failed check: the JSON path of the offending value in the file, and why.
#[derive(Debug)]
pub(super) struct Issue {
    pub path: String,
    pub message: String,
}

type Checked<T> = Result<T, Issue>;

fn issue<T>(path: impl Into<String>, message: impl Into<String>) -> Checked<T> {
    Err(Issue {
        path: path.into(),
        message: message.into(),
    })
}

/// An agent being expanded; `src` fields index [`Builder::paths`].
#[derive(Clone)]
struct XAgent {
    name: String,
    name_src: u32,
    lineage_parent: Option<String>,
    script: Vec<XStep>,
    on_resume: Vec<XStep>,
    /// Both scripts, finished already and shared, for a copy of a `count` row
    /// whose scripts name nothing (no spawn, join or await): a substitution
    /// changes no step of theirs, so every copy runs the same steps, and
    /// `script` and `on_resume` above are left empty.
    leaves: Option<Leaves>,
}

/// The finished scripts the copies of one `count` row share.
#[derive(Clone)]
struct Leaves {
    script: Arc<[Step]>,
    on_resume: Arc<[Step]>,
}

impl Leaves {
    /// The template's scripts, finished once, if they hold leaves only.
    fn of(template: &XAgent) -> Option<Leaves> {
        let leaves = |steps: &[XStep]| -> Option<Arc<[Step]>> {
            (steps.iter())
                .map(|step| match &step.kind {
                    XKind::Leaf(step) => Some(step.clone()),
                    XKind::AwaitAnswer(call) => own_call(call, &template.name).map(Step::AwaitAnswer),
                    _ => None,
                })
                .collect()
        };
        Some(Leaves {
            script: leaves(&template.script)?,
            on_resume: leaves(&template.on_resume)?,
        })
    }

    /// A copy of `template` that shares these scripts.
    fn copy(&self, template: &XAgent) -> XAgent {
        XAgent {
            name: template.name.clone(),
            name_src: template.name_src,
            lineage_parent: template.lineage_parent.clone(),
            script: Vec::new(),
            on_resume: Vec::new(),
            leaves: Some(self.clone()),
        }
    }
}

#[derive(Clone)]
struct XStep {
    src: u32,
    kind: XKind,
}

#[derive(Clone)]
enum XKind {
    /// A step that names nothing (ask, ask_raw, ask_unresolved, work).
    Leaf(Step),
    /// Boxed: an `XAgent` in place made every step of an unrolled `repeat` its
    /// size (a repeat of 10^6 `work` steps peaked near 300 MB).
    Spawn(Box<XAgent>),
    Join(String),
    AwaitAnswer(String),
}

/// How much an expansion produces: steps and agents, spawned ones included.
#[derive(Clone, Copy, Default)]
struct Size {
    steps: u64,
    agents: u64,
}

impl Size {
    fn of_steps(steps: &[XStep]) -> Size {
        let mut size = Size::default();
        for step in steps {
            size.steps += 1;
            if let XKind::Spawn(child) = &step.kind {
                let child = Size::of_agent(child);
                size.steps += child.steps;
                size.agents += child.agents;
            }
        }
        size
    }

    fn of_agent(agent: &XAgent) -> Size {
        let script = Size::of_steps(&agent.script);
        let on_resume = Size::of_steps(&agent.on_resume);
        // Shared scripts hold leaves only: a step each, and no agent.
        let shared = (agent.leaves.as_ref()).map_or(0, |l| (l.script.len() + l.on_resume.len()) as u64);
        Size {
            steps: script.steps + on_resume.steps + shared,
            agents: 1 + script.agents + on_resume.agents,
        }
    }

    /// `self + copies × each`, or an issue at `path` when over the run's limits.
    fn grow(self, copies: u64, each: Size, path: &str, what: &str) -> Checked<Size> {
        let steps = each.steps.saturating_mul(copies).saturating_add(self.steps);
        let agents = each.agents.saturating_mul(copies).saturating_add(self.agents);
        if steps > STEPS_MAX {
            return issue(
                path,
                format!("{what} makes more than {STEPS_MAX} script steps in the run"),
            );
        }
        if agents > AGENTS_MAX {
            return issue(
                path,
                format!("{what} makes more than {AGENTS_MAX} agents in the run"),
            );
        }
        Ok(Size { steps, agents })
    }
}

pub(super) fn build(raw: RawScenario) -> Checked<Scenario> {
    if raw.name.is_empty() {
        return issue("name", "expected a non-empty name");
    }
    if let Some(message) = control_character(&raw.name) {
        return issue("name", message);
    }
    let tool = tool_row(raw.tool.as_ref())?;
    // First: `limits.virtual_s_max` bounds every other time of the file.
    let limits = limits(raw.limits.map(|l| l.0))?;
    let times = Times {
        max_s: limits.virtual_s_max,
    };
    let broker = broker(raw.broker.map(|b| b.0), times)?;
    let jitter_max_s = match raw.jitter {
        Some(jitter) => Some(times.seconds("jitter.max", jitter.0.max)?),
        None => None,
    };
    let explore = match raw.explore {
        Some(text) => Some(
            text.parse::<Strategy>()
                .or_else(|message| issue("explore", message))?,
        ),
        None => None,
    };

    let mut builder = Builder {
        times,
        ..Builder::default()
    };
    let answerers = builder.answerers(raw.answerers)?;
    let agents = builder.agents(raw.agents)?;
    for agent in &agents {
        builder.define_agent(agent)?;
    }
    for agent in &agents {
        builder.check_references(agent)?;
    }
    let names = &builder.names;
    let events = events(raw.events, names, times)?;
    let expect = match raw.expect {
        Some(expect) => Some(expect_block(expect.0, names)?),
        None => None,
    };
    Ok(Scenario {
        name: raw.name,
        about: raw.about,
        seed: raw.seed,
        clock: raw.clock.unwrap_or(Clock::Virtual),
        tool,
        broker,
        answerers,
        agents: exact(agents.into_iter().map(finish_root).collect()),
        events,
        jitter_max_s,
        limits,
        explore,
        expect,
    })
}

/// The plugin row (`tool`), checked by the tool's own config code.
fn tool_row(row: Option<&Value>) -> Checked<ToolConfig> {
    ToolConfig::from_json(row).map_err(|err| Issue {
        // `config` is the row itself (not an object); any other key is in it.
        path: match err.key.as_str() {
            "config" => "tool".to_owned(),
            key => format!("tool.{key}"),
        },
        message: match closest(&err.key, ["mode", "timeout"]) {
            Some(name) if err.reason.starts_with("unknown key") => {
                format!("{}; did you mean `{name}`?", err.reason)
            }
            _ => err.reason,
        },
    })
}

/// A number of seconds for a message: `1e20` rather than twenty-one digits.
fn show(s: f64) -> String {
    if s != 0.0 && !(1e-4..1e15).contains(&s.abs()) {
        format!("{s:e}")
    } else {
        format!("{s}")
    }
}

/// The bound on every time and duration of a file: its `limits.virtual_s_max`.
/// Nothing a run does past that instant can be observed (the run stops there), and
/// it keeps every time, and a few of them added up, far inside what the runtime's
/// clocks hold.
#[derive(Clone, Copy)]
struct Times {
    max_s: f64,
}

impl Default for Times {
    fn default() -> Self {
        Times {
            max_s: VIRTUAL_S_MAX_DEFAULT,
        }
    }
}

impl Times {
    /// Seconds: finite, non-negative, at most the bound.
    fn seconds(self, path: &str, s: f64) -> Checked<f64> {
        if !(s.is_finite() && s >= 0.0) {
            return issue(
                path,
                format!("expected a non-negative number of seconds, got {}", show(s)),
            );
        }
        self.bounded(path, s)
    }

    /// Seconds: finite, positive, at most the bound.
    fn positive(self, path: &str, s: f64) -> Checked<f64> {
        if !(s.is_finite() && s > 0.0) {
            return issue(
                path,
                format!("expected a positive number of seconds, got {}", show(s)),
            );
        }
        self.bounded(path, s)
    }

    /// An instant on the run's clock (`events[].at`, `faults.crash_at`): finite,
    /// non-negative, at most [`VIRTUAL_S_MAX_MAX`]. One past the file's
    /// `limits.virtual_s_max` is valid: it never fires, and a run that still has it
    /// ahead stops at the limit (SPEC §5).
    fn instant(self, path: &str, s: f64) -> Checked<f64> {
        Times {
            max_s: VIRTUAL_S_MAX_MAX,
        }
        .seconds(path, s)
        .map_err(|mut issue| {
            if s.is_finite() && s > VIRTUAL_S_MAX_MAX {
                issue.message = format!(
                    "{} is past the latest instant a run can reach ({} s)",
                    show(s),
                    show(VIRTUAL_S_MAX_MAX)
                );
            }
            issue
        })
    }

    fn bounded(self, path: &str, s: f64) -> Checked<f64> {
        if s > self.max_s {
            return issue(
                path,
                format!(
                    "{} is past limits.virtual_s_max ({} s)",
                    show(s),
                    show(self.max_s)
                ),
            );
        }
        Ok(s)
    }

    /// A latency in any of its forms; a bare number is named by `path` itself, an
    /// object form by its key (`path.fixed`, `path.uniform[1]`).
    fn latency(self, path: &str, raw: RawLatency) -> Checked<Latency> {
        match raw.latency {
            Latency::Fixed(s) => {
                let path = match raw.written {
                    Written::Bare => path.to_owned(),
                    Written::Tagged => format!("{path}.fixed"),
                };
                self.seconds(&path, s).map(Latency::Fixed)
            }
            Latency::Uniform(min, max) => {
                let path = format!("{path}.uniform");
                self.seconds(&format!("{path}[0]"), min)?;
                self.seconds(&format!("{path}[1]"), max)?;
                if min > max {
                    return issue(
                        path,
                        format!("min {} is greater than max {}", show(min), show(max)),
                    );
                }
                Ok(Latency::Uniform(min, max))
            }
            Latency::Exp(mean) => self.positive(&format!("{path}.exp"), mean).map(Latency::Exp),
            Latency::Never => Ok(Latency::Never),
        }
    }
}

fn limits(raw: Option<RawLimits>) -> Checked<Limits> {
    let mut limits = Limits::default();
    if let Some(raw) = raw {
        if let Some(s) = raw.virtual_s_max {
            let path = "limits.virtual_s_max";
            if s.is_finite() && s > VIRTUAL_S_MAX_MAX {
                let largest = show(VIRTUAL_S_MAX_MAX);
                let message = format!(
                    "{} is past the largest limits.virtual_s_max ({largest} s)",
                    show(s)
                );
                return issue(path, message);
            }
            let largest = Times {
                max_s: VIRTUAL_S_MAX_MAX,
            };
            limits.virtual_s_max = largest.positive(path, s)?;
        }
        if let Some(n) = raw.events_max {
            if n == 0 {
                return issue("limits.events_max", "expected a positive count, got 0");
            }
            limits.events_max = n;
        }
    }
    Ok(limits)
}

fn broker(raw: Option<RawBroker>, times: Times) -> Checked<BrokerSpec> {
    let mut broker = BrokerSpec::default();
    let Some(raw) = raw else { return Ok(broker) };
    if let Some(s) = raw.offer_timeout {
        broker.offer_timeout_s = times.positive("broker.offer_timeout", s)?;
    }
    let count = |path: &str, n: Option<u64>, max: usize| -> Checked<Option<u64>> {
        match n {
            Some(n) if n == 0 || n > max as u64 => issue(path, format!("expected 1 to {max}, got {n}")),
            n => Ok(n),
        }
    };
    broker.open_calls_max = count("broker.open_calls_max", raw.open_calls_max, OPEN_CALLS_MAX)?;
    broker.agents_per_tree_max = count(
        "broker.agents_per_tree_max",
        raw.agents_per_tree_max,
        AGENTS_PER_TREE_MAX,
    )?;
    Ok(broker)
}

/// A copy of `s` with every `key` replaced by `value`: one allocation.
fn substituted(s: &str, key: &str, value: &str) -> String {
    if s.contains(key) {
        s.replace(key, value)
    } else {
        s.to_owned()
    }
}

/// A copy of `agent` with `key` replaced by `value` in its name, its lineage
/// (only a `count` row's agent has one; a spawned child's is its spawner) and
/// the strings of its steps that name agents or calls. Copies and substitutes
/// in one pass: a clone then a substitution made each name twice and each
/// step list twice, for every repetition of a `repeat` of 10^5 spawns.
fn substituted_agent(agent: &XAgent, key: &str, value: &str) -> XAgent {
    XAgent {
        name: substituted(&agent.name, key, value),
        name_src: agent.name_src,
        lineage_parent: (agent.lineage_parent.as_deref()).map(|parent| substituted(parent, key, value)),
        script: substituted_steps(&agent.script, key, value),
        on_resume: substituted_steps(&agent.on_resume, key, value),
        leaves: agent.leaves.clone(),
    }
}

/// A copy of `steps` with `key` replaced by `value` in the strings that name
/// agents or calls.
fn substituted_steps(steps: &[XStep], key: &str, value: &str) -> Vec<XStep> {
    steps
        .iter()
        .map(|step| substituted_step(step, key, value))
        .collect()
}

fn substituted_step(step: &XStep, key: &str, value: &str) -> XStep {
    let kind = match &step.kind {
        XKind::Leaf(leaf) => XKind::Leaf(leaf.clone()),
        XKind::Spawn(child) => XKind::Spawn(Box::new(substituted_agent(child, key, value))),
        XKind::Join(name) => XKind::Join(substituted(name, key, value)),
        XKind::AwaitAnswer(call) => XKind::AwaitAnswer(substituted(call, key, value)),
    };
    XStep { src: step.src, kind }
}

/// `steps` (a template's: a `repeat` body or a `count` row's script, before it
/// is copied) with each child they spawn, at any depth, whose scripts hold
/// leaves only finished once, so that the copies share its steps as the copies
/// of a `count` row do: a `repeat` of 10^5 spawns made 10^5 lists of the same
/// steps, one more allocation for each child to hold and to read cold at its
/// every step.
fn share_spawned_leaves(steps: &mut [XStep]) {
    for step in steps {
        let XKind::Spawn(child) = &mut step.kind else {
            continue;
        };
        if child.leaves.is_some() {
            continue;
        }
        match Leaves::of(child) {
            Some(leaves) => **child = leaves.copy(child),
            None => {
                share_spawned_leaves(&mut child.script);
                share_spawned_leaves(&mut child.on_resume);
            }
        }
    }
}

/// An empty `custom` text or `options` list would submit an answer that selects
/// nothing: a skip, which is written `"skip"`.
fn selects_something(path: &str, answer: &AnswerPolicy) -> Checked<()> {
    match answer {
        AnswerPolicy::Custom(text) if text.is_empty() => issue(
            format!("{path}.answer.custom"),
            "expected a text that is not empty (\"skip\" skips the questions)",
        ),
        AnswerPolicy::Options(options) if options.is_empty() => issue(
            format!("{path}.answer.options"),
            "expected at least one index (\"skip\" skips the questions)",
        ),
        _ => Ok(()),
    }
}

/// Why an answerer without `latency` or `answer` is refused.
/// A `process` answerer: its command, and no policy key beside it.
fn process_answerer(path: &str, row: RawAnswerer) -> Checked<AnswererSpec> {
    let policy_keys = [
        ("accepts", row.accepts.is_some()),
        ("offer_latency", row.offer_latency.is_some()),
        ("latency", row.latency.is_some()),
        ("answer", row.answer.is_some()),
        ("hold", row.hold.is_some()),
        ("faults", row.faults.is_some()),
    ];
    if let Some((key, _)) = policy_keys.iter().find(|(_, given)| *given) {
        return issue(
            format!("{path}.{key}"),
            "a `process` answerer takes no policy keys: the process decides",
        );
    }
    let command = row.process.unwrap_or_default();
    if command.is_empty() || command.len() as u64 > PROCESS_WORDS_MAX {
        return issue(
            format!("{path}.process"),
            format!(
                "expected a program and its arguments (1 to {PROCESS_WORDS_MAX} words), got {}",
                command.len()
            ),
        );
    }
    if command[0].is_empty() {
        return issue(format!("{path}.process[0]"), "the program is empty");
    }
    Ok(AnswererSpec {
        name: row.name,
        policy: Policy::declining(),
        process: Some(command),
    })
}

fn missing_unless_silent(field: &str) -> String {
    format!("missing field `{field}` (only an answerer with \"accepts\": \"none\" may leave it out)")
}

/// How many copies a `count` asks for: 1 to `max`.
fn count(path: &str, count: Option<u64>, max: u64, name: &str) -> Checked<Option<u64>> {
    let Some(n) = count else { return Ok(None) };
    if n == 0 || n > max {
        return issue(path, format!("expected a count from 1 to {max}, got {n}"));
    }
    if n > 1 && !name.contains("{i}") {
        return issue(
            path,
            format!("count {n} needs `{{i}}` in the name {name:?}, or the copies share one name"),
        );
    }
    Ok(Some(n))
}

#[derive(Default)]
struct Builder {
    /// The bound on every time of the file.
    times: Times,
    /// Paths in the file, indexed by the `src` of expanded values.
    paths: Vec<String>,
    names: Names,
}

/// Every name of a run, with where it was defined and what it names: agents
/// and answerers share one namespace, so one table holds both. Hashed: a
/// `count` row of 10^5 defines 10^5 names, each looked up once, and nothing
/// reads the table in order. (A table of places and a set of each kind beside
/// it held every agent's name twice, a third of a large tree's build.)
#[derive(Default)]
struct Names(FxHashMap<String, Defined>);

/// Where a name was defined (an index into [`Builder::paths`]), and whether
/// it names an answerer or an agent.
#[derive(Clone, Copy)]
struct Defined {
    src: u32,
    answerer: bool,
}

impl Names {
    fn agent(&self, name: &str) -> bool {
        self.0.get(name).is_some_and(|defined| !defined.answerer)
    }

    fn answerer(&self, name: &str) -> bool {
        self.0.get(name).is_some_and(|defined| defined.answerer)
    }
}

impl Builder {
    fn src(&mut self, path: String) -> u32 {
        self.paths.push(path);
        // The file bounds the number of source paths far below u32::MAX.
        u32::try_from(self.paths.len() - 1).unwrap_or(u32::MAX)
    }

    fn path(&self, src: u32) -> &str {
        self.paths.get(src as usize).map_or("", String::as_str)
    }

    fn answerers(&mut self, rows: Vec<Obj<RawAnswerer>>) -> Checked<Vec<AnswererSpec>> {
        let mut out: Vec<AnswererSpec> = Vec::new();
        for (k, Obj(row)) in rows.into_iter().enumerate() {
            let path = format!("answerers[{k}]");
            let copies = count(&format!("{path}.count"), row.count, ANSWERERS_MAX, &row.name)?;
            let template = self.answerer(&path, row)?;
            let n = copies.unwrap_or(1);
            if out.len() as u64 + n > ANSWERERS_MAX {
                return issue(path, format!("more than {ANSWERERS_MAX} answerers in the run"));
            }
            let name_src = self.src(format!("{path}.name"));
            for i in 0..n {
                let mut answerer = template.clone();
                if copies.is_some() {
                    answerer.name = substituted(&answerer.name, "{i}", &i.to_string());
                }
                self.define(&answerer.name, name_src, true)?;
                out.push(answerer);
            }
        }
        Ok(out)
    }

    fn answerer(&mut self, path: &str, row: RawAnswerer) -> Checked<AnswererSpec> {
        if row.process.is_some() {
            return process_answerer(path, row);
        }
        let Some(accepts) = row.accepts.clone() else {
            return issue(
                path,
                "missing field `accepts` (or `process`, for an answerer outside asksim)",
            );
        };
        let times = self.times;
        let offer_latency = match row.offer_latency {
            Some(l) => times.latency(&format!("{path}.offer_latency"), l)?,
            None => Latency::Fixed(0.0),
        };
        // An answerer that accepts nothing never submits: `latency` and `answer`
        // are never used, so it may leave them out.
        let silent = accepts == Accepts::None;
        let latency = match row.latency {
            Some(l) => times.latency(&format!("{path}.latency"), l)?,
            None if silent => Latency::Never,
            None => return issue(path, missing_unless_silent("latency")),
        };
        let answer = match row.answer {
            Some(answer) => answer,
            None if silent => AnswerPolicy::Recommended,
            None => return issue(path, missing_unless_silent("answer")),
        };
        selects_something(path, &answer)?;
        let hold_after_s = match row.hold {
            Some(Obj(hold)) => Some(times.seconds(&format!("{path}.hold.after"), hold.after)?),
            None => None,
        };
        let (mut crash_at_s, mut crash_after_accepts) = (None, None);
        if let Some(Obj(faults)) = row.faults {
            if let Some(t) = faults.crash_at {
                crash_at_s = Some(times.instant(&format!("{path}.faults.crash_at"), t)?);
            }
            if let Some(n) = faults.crash_after_accepts {
                if n == 0 {
                    return issue(
                        format!("{path}.faults.crash_after_accepts"),
                        "expected at least 1 (use crash_at: 0 to crash at once)",
                    );
                }
                crash_after_accepts = Some(n);
            }
        }
        Ok(AnswererSpec {
            name: row.name,
            process: None,
            policy: Policy {
                accepts,
                offer_latency,
                latency,
                answer,
                hold_after_s,
                crash_at_s,
                crash_after_accepts,
            },
        })
    }

    fn agents(&mut self, rows: Vec<Obj<RawAgent>>) -> Checked<Vec<XAgent>> {
        let mut out = Vec::new();
        let mut total = Size::default();
        for (k, Obj(row)) in rows.into_iter().enumerate() {
            let path = format!("agents[{k}]");
            let copies = count(&format!("{path}.count"), row.count, AGENTS_MAX, &row.name)?;
            let mut template = XAgent {
                name: row.name,
                name_src: self.src(format!("{path}.name")),
                lineage_parent: row.lineage.map(|l| l.0.parent),
                script: self.script(row.script, &format!("{path}.script"), 1)?,
                on_resume: self.script(row.on_resume, &format!("{path}.on_resume"), 1)?,
                leaves: None,
            };
            let n = copies.unwrap_or(1);
            let what = if copies.is_some() {
                "this count"
            } else {
                "this agent"
            };
            total = total.grow(n, Size::of_agent(&template), &path, what)?;
            // Checked before: the copies of a row of 10^5 share one script
            // rather than each holding its own (SPEC §6 "Cost").
            let shared = copies.and_then(|_| Leaves::of(&template));
            if copies.is_some() && shared.is_none() {
                share_spawned_leaves(&mut template.script);
                share_spawned_leaves(&mut template.on_resume);
            }
            let Some(copies) = copies else {
                out.push(template);
                continue;
            };
            if let Some(leaves) = &shared {
                template = leaves.copy(&template);
            }
            for i in 0..copies {
                out.push(substituted_agent(&template, "{i}", &i.to_string()));
            }
        }
        Ok(out)
    }

    /// Converts a script, unrolling its repeats, within the run's limits.
    fn script(&mut self, raw: Vec<RawStep>, path: &str, depth: usize) -> Checked<Vec<XStep>> {
        if depth > NESTING_MAX && !raw.is_empty() {
            return issue(
                path,
                format!("spawn and repeat nest deeper than {NESTING_MAX} levels"),
            );
        }
        let mut out = Vec::new();
        let mut size = Size::default();
        for (k, step) in raw.into_iter().enumerate() {
            let path = format!("{path}[{k}]");
            match step {
                RawStep::Repeat(Obj(repeat)) => {
                    let times_path = format!("{path}.repeat.times");
                    if repeat.times > REPEAT_TIMES_MAX {
                        let times = repeat.times;
                        let message = format!("expected at most {REPEAT_TIMES_MAX}, got {times}");
                        return issue(times_path, message);
                    }
                    let body_path = format!("{path}.repeat.script");
                    let mut body = self.script(repeat.script, &body_path, depth + 1)?;
                    if body.is_empty() {
                        continue;
                    }
                    // Checked before copying: an absurd product allocates nothing.
                    let each = Size::of_steps(&body);
                    size = size.grow(repeat.times, each, &times_path, "this repeat")?;
                    share_spawned_leaves(&mut body);
                    out.reserve(body.len().saturating_mul(repeat.times as usize));
                    for r in 0..repeat.times {
                        let r = r.to_string();
                        out.extend(body.iter().map(|step| substituted_step(step, "{r}", &r)));
                    }
                }
                step => {
                    let step = self.step(step, &path, depth)?;
                    let each = Size::of_steps(std::slice::from_ref(&step));
                    size = size.grow(1, each, &path, "this step")?;
                    out.push(step);
                }
            }
        }
        Ok(out)
    }

    /// Converts one step other than `repeat`.
    fn step(&mut self, step: RawStep, path: &str, depth: usize) -> Checked<XStep> {
        let (kind, key) = match step {
            RawStep::Ask(value) => (
                Step::Ask {
                    arguments: compact(&value).into(),
                }
                .into(),
                "ask",
            ),
            RawStep::AskRaw(value) => (
                Step::AskRaw {
                    arguments: compact(&value).into(),
                }
                .into(),
                "ask_raw",
            ),
            RawStep::AskUnresolved(Obj(ask)) => {
                let timeout = match ask.timeout {
                    Some(t) => Some(unresolved_timeout(path, t)?),
                    None => None,
                };
                (Step::AskUnresolved { timeout }.into(), "ask_unresolved")
            }
            RawStep::Work(s) => {
                let s = self.times.seconds(&format!("{path}.work"), s)?;
                (Step::Work(s).into(), "work")
            }
            RawStep::Join(name) => (XKind::Join(name), "join"),
            RawStep::AwaitAnswer(call) => (XKind::AwaitAnswer(call), "await_answer"),
            RawStep::Spawn(Obj(spawn)) => {
                let child = XAgent {
                    name: spawn.name,
                    name_src: self.src(format!("{path}.spawn.name")),
                    lineage_parent: None,
                    script: self.script(spawn.script, &format!("{path}.spawn.script"), depth + 1)?,
                    on_resume: self.script(spawn.on_resume, &format!("{path}.spawn.on_resume"), depth + 1)?,
                    leaves: None,
                };
                (XKind::Spawn(Box::new(child)), "spawn")
            }
            RawStep::Repeat(_) => unreachable!("script() unrolls repeat before calling step()"),
        };
        Ok(XStep {
            src: self.src(format!("{path}.{key}")),
            kind,
        })
    }
}

impl From<Step> for XKind {
    fn from(step: Step) -> XKind {
        XKind::Leaf(step)
    }
}

fn compact(value: &Value) -> String {
    // Serialising a Value to a String cannot fail: its keys are strings.
    serde_json::to_string(value).unwrap_or_default()
}

fn unresolved_timeout(path: &str, t: f64) -> Checked<f64> {
    let value = serde_json::Number::from_f64(t).map_or(Value::Null, Value::Number);
    Timeout::from_json(&value)
        .map(Timeout::as_f64)
        .or_else(|reason| issue(format!("{path}.ask_unresolved.timeout"), reason))
}

/// `items` at their own size. A `collect` of a mapped `Vec` reuses the source's
/// buffer when it can: a script of 32-byte steps would keep the 112 bytes a step
/// took while it was built, for every copy of a `count` row.
fn exact<T>(mut items: Vec<T>) -> Vec<T> {
    items.shrink_to_fit();
    items
}

/// A root as the scenario holds it, shared by the run's agents.
fn finish_root(agent: XAgent) -> Arc<AgentSpec> {
    Arc::new(finish(agent, None))
}

/// The output shape of an expanded agent; a spawned child's lineage is its spawner.
fn finish(agent: XAgent, spawner: Option<&str>) -> AgentSpec {
    let name = agent.name;
    let steps = |steps: Vec<XStep>| -> Arc<[Step]> {
        (steps.into_iter())
            .map(|step| match step.kind {
                XKind::Leaf(step) => step,
                XKind::Spawn(child) => Step::Spawn(Arc::new(finish(*child, Some(&name)))),
                XKind::Join(child) => Step::Join(child),
                XKind::AwaitAnswer(call) => Step::AwaitAnswer(
                    own_call(&call, &name).expect("an await_answer checked against its agent"),
                ),
            })
            .collect()
    };
    let (script, on_resume) = match agent.leaves {
        Some(leaves) => (leaves.script, leaves.on_resume),
        None => (steps(agent.script), steps(agent.on_resume)),
    };
    AgentSpec {
        script,
        on_resume,
        lineage_parent: (agent.lineage_parent.as_deref())
            .or(spawner)
            .map(crate::protocol::Text::from),
        name: name.into(),
    }
}

impl Builder {
    /// Records a name of the run, an answerer's or an agent's: non-empty, no
    /// `/`, nothing left to substitute, unique among agents and answerers.
    fn define(&mut self, name: &str, src: u32, answerer: bool) -> Checked<()> {
        let path = || self.path(src).to_owned();
        if name.is_empty() {
            return issue(path(), "expected a non-empty name");
        }
        if name.contains('/') {
            return issue(path(), format!("name {name:?} contains `/`"));
        }
        if let Some(message) = control_character(name) {
            return issue(path(), message);
        }
        if name.contains("{i}") {
            return issue(
                path(),
                format!("name {name:?} holds `{{i}}`, which only a row with `count` substitutes"),
            );
        }
        if name.contains("{r}") {
            return issue(
                path(),
                format!("name {name:?} holds `{{r}}`, which is only substituted inside `repeat`"),
            );
        }
        if let Some(&Defined { src: first, .. }) = self.names.0.get(name) {
            // The same place twice: a `repeat` unrolled it (a `count` row
            // without `{i}` is refused before), and its name varies with nothing.
            if first == src {
                return issue(
                    path(),
                    format!(
                        "duplicate name {name:?}: a repeat spawns it at every repetition; \
                         put `{{r}}` in the name (the repeat's index)"
                    ),
                );
            }
            let first = self.path(first).to_owned();
            return issue(
                path(),
                format!(
                    "duplicate name {name:?} (agents and answerers share one namespace; first at {first})"
                ),
            );
        }
        self.names.0.insert(name.to_owned(), Defined { src, answerer });
        Ok(())
    }

    /// Defines an agent and every child it spawns, in script order.
    fn define_agent(&mut self, agent: &XAgent) -> Checked<()> {
        self.define(&agent.name, agent.name_src, false)?;
        for step in agent.script.iter().chain(&agent.on_resume) {
            if let XKind::Spawn(child) = &step.kind {
                self.define_agent(child)?;
            }
        }
        Ok(())
    }

    /// `join` names a child spawned earlier in the same script; `await_answer` a
    /// call of this agent. For the agent and, recursively, its children.
    fn check_references(&self, agent: &XAgent) -> Checked<()> {
        for script in [&agent.script, &agent.on_resume] {
            let mut spawned = FxHashSet::default();
            for step in script {
                match &step.kind {
                    XKind::Leaf(_) => {}
                    XKind::Spawn(child) => {
                        spawned.insert(child.name.as_str());
                        self.check_references(child)?;
                    }
                    XKind::Join(child) => {
                        if !spawned.contains(child.as_str()) {
                            return issue(
                                self.path(step.src),
                                format!(
                                    "no child {child:?} spawned earlier in this script of {:?}",
                                    agent.name
                                ),
                            );
                        }
                    }
                    XKind::AwaitAnswer(call) => {
                        if call_agent(call) != Some(agent.name.as_str()) {
                            return issue(
                                self.path(step.src),
                                format!(
                                    "expected a call of this agent, \"{}/<n>\" with n ≥ 1, got {call:?}",
                                    agent.name
                                ),
                            );
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// The agent of a well-formed callId `"<agent>/<n>"` (n ≥ 1, decimal, no leading
/// zeros), or `None`.
/// The number of `call` if it is exactly a call of agent `name`
/// (`"<name>/<n>"`, n ≥ 1 without leading zeros): on a `count` row's template,
/// the same substitution turns both into a copy's own call and name, so every
/// copy awaits its own call n.
/// Why a name with a control character (a line break, a tab, a terminal's
/// escape) is refused: names head the report and every line of a timeline, which
/// such a character would break or recolour.
fn control_character(name: &str) -> Option<String> {
    (name.chars().find(|c| c.is_control()))
        .map(|c| format!("name {name:?} contains the control character {:?}", c))
}

fn own_call(call: &str, name: &str) -> Option<u64> {
    let n = call.strip_prefix(name)?.strip_prefix('/')?;
    call_agent(call)?;
    n.parse().ok()
}

fn call_agent(call: &str) -> Option<&str> {
    let (agent, n) = call.rsplit_once('/')?;
    let digits = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0');
    (digits && n.parse::<u64>().is_ok() && !agent.is_empty()).then_some(agent)
}

/// A callId of some agent of the run, or why not.
fn known_call(call: &str, names: &Names) -> Result<(), String> {
    match call_agent(call) {
        None => Err(format!(
            "expected a callId \"<agent>/<n>\" with n ≥ 1, got {call:?}"
        )),
        Some(agent) if !names.agent(agent) => Err(format!("callId {call:?} names no agent of this run")),
        Some(_) => Ok(()),
    }
}

fn known_agent(name: &str, names: &Names) -> Result<(), String> {
    if names.agent(name) {
        Ok(())
    } else {
        Err(format!("no agent {name:?} in this run"))
    }
}

fn events(raw: Vec<Obj<RawEvent>>, names: &Names, times: Times) -> Checked<Vec<EventSpec>> {
    if raw.len() as u64 > EVENTS_MAX {
        return issue("events", format!("more than {EVENTS_MAX} events"));
    }
    let mut out = Vec::with_capacity(raw.len());
    for (k, Obj(event)) in raw.into_iter().enumerate() {
        let path = format!("events[{k}]");
        let at_s = times.instant(&format!("{path}.at"), event.at)?;
        let mut kinds = Vec::new();
        if let Some(agent) = event.cancel_turn {
            let checked = known_agent(&agent, names);
            kinds.push(("cancel_turn", checked, Action::CancelTurn(agent)));
        }
        if let Some(call) = event.cancel_call {
            let checked = known_call(&call, names);
            kinds.push(("cancel_call", checked, Action::CancelCall(call)));
        }
        if let Some(Obj(loss)) = event.process_loss {
            let restart_after_s =
                times.seconds(&format!("{path}.process_loss.restart_after"), loss.restart_after)?;
            kinds.push(("process_loss", Ok(()), Action::ProcessLoss { restart_after_s }));
        }
        if let Some(agent) = event.stop_agent {
            let checked = known_agent(&agent, names);
            kinds.push(("stop_agent", checked, Action::StopAgent(agent)));
        }
        if let Some(answerer) = event.crash_answerer {
            let checked = if names.answerer(&answerer) {
                Ok(())
            } else {
                Err(format!("no answerer {answerer:?} in this run"))
            };
            kinds.push(("crash_answerer", checked, Action::CrashAnswerer(answerer)));
        }
        let Ok([(key, checked, kind)]) = <[_; 1]>::try_from(kinds) else {
            return issue(
                path,
                "expected exactly one of cancel_turn, cancel_call, process_loss, stop_agent, crash_answerer",
            );
        };
        checked.or_else(|message| issue(format!("{path}.{key}"), message))?;
        out.push(EventSpec { at_s, action: kind });
    }
    // A stable sort: events at the same time keep their file order.
    out.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    Ok(out)
}

fn expect_block(raw: RawExpect, names: &Names) -> Checked<Expect> {
    for key in raw.counts.keys() {
        if !OUTCOME_NAMES.contains(&key.as_str()) && ErrorCode::parse(key).is_none() {
            let hint = closest(
                key,
                OUTCOME_NAMES
                    .into_iter()
                    .chain(ErrorCode::ALL.map(ErrorCode::as_str)),
            )
            .map(|name| format!("; did you mean `{name}`?"))
            .unwrap_or_default();
            return issue(
                format!("expect.counts.{key}"),
                format!(
                    "{key:?} is not an outcome ({}) or an error code{hint}",
                    OUTCOME_NAMES.join(", ")
                ),
            );
        }
    }
    let expect = Expect {
        results: raw.results,
        user_messages: raw.user_messages,
        counts: raw.counts,
        final_results: raw.final_results,
    };
    for Reference { path, name, kind, of } in calls::expect_references(&expect) {
        let checked = match kind {
            Named::Call => known_call(&name, names),
            Named::Agent => known_agent(&name, names),
        };
        (checked.and_then(|()| belongs(&name, kind, of.as_deref())))
            .or_else(|message| issue(path, message))?;
    }
    Ok(expect)
}

/// Whether `name` (a known call or agent) is what a place of agent `of` can
/// hold: `of` itself, or one of `of`'s calls (see [`Reference::of`]).
fn belongs(name: &str, kind: Named, of: Option<&str>) -> Result<(), String> {
    let Some(of) = of else { return Ok(()) };
    match kind {
        Named::Agent if name != of => Err(format!(
            "{of}'s final result names its own agent, {of:?}, never {name:?}: this can never match"
        )),
        Named::Call => match call_agent(name) {
            Some(agent) if agent != of => Err(format!(
                "{name:?} is a call of {agent}, and only {of}'s own calls can be here: this can never match"
            )),
            _ => Ok(()),
        },
        Named::Agent => Ok(()),
    }
}
