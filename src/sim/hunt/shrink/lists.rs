//! The lists of a scenario's JSON the shrinker removes elements from, how to keep
//! a subset of one, and the repair that drops what a removal left dangling.
//!
//! Lists, in the order a pass visits them: `agents`, `answerers`, `events`, the
//! four maps of `expect` (their keys are the elements), then each agent's
//! `script` and `on_resume` depth-first (a spawned child's scripts right after the
//! spawn's own list), with, under each `ask`, its `questions` and each question's
//! `options`. A call keeps at least one question and two options: fewer is an
//! invalid call, a different failure (SPEC §2.3).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// Which kind of element a list holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Root agents (`agents`).
    Agents,
    /// Answerers (`answerers`).
    Answerers,
    /// Scheduled events (`events`).
    Events,
    /// Entries of `expect.results`, `user_messages`, `counts`, `final_results`.
    Expect,
    /// Script steps (`script`, `on_resume`, spawned children's included).
    Steps,
    /// Questions of an `ask`.
    Questions,
    /// Options of a question.
    Options,
}

/// One step of a path into the JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Seg {
    Key(&'static str),
    Index(usize),
}

/// A list of the scenario: where it is, what it holds, how short it may get.
#[derive(Clone, Debug)]
pub(super) struct List {
    pub path: Vec<Seg>,
    pub kind: Kind,
    pub len_min: usize,
}

/// Every list of the scenario, in visiting order.
pub(super) fn lists(scenario: &Value) -> Vec<List> {
    let mut out = Vec::new();
    let top = [
        ("agents", Kind::Agents),
        ("answerers", Kind::Answerers),
        ("events", Kind::Events),
    ];
    for (key, kind) in top {
        if scenario.get(key).is_some_and(Value::is_array) {
            out.push(list(vec![Seg::Key(key)], kind, 0));
        }
    }
    if let Some(expect) = scenario.get("expect") {
        for key in ["results", "user_messages", "counts", "final_results"] {
            if expect.get(key).is_some_and(Value::is_object) {
                out.push(list(vec![Seg::Key("expect"), Seg::Key(key)], Kind::Expect, 0));
            }
        }
    }
    let agents = scenario.get("agents").and_then(Value::as_array);
    for (k, agent) in agents.into_iter().flatten().enumerate() {
        agent_lists(agent, vec![Seg::Key("agents"), Seg::Index(k)], &mut out);
    }
    out
}

fn list(path: Vec<Seg>, kind: Kind, len_min: usize) -> List {
    List { path, kind, len_min }
}

/// The step lists of an agent or spawned child at `at`, and what lies under them.
fn agent_lists(agent: &Value, at: Vec<Seg>, out: &mut Vec<List>) {
    for key in ["script", "on_resume"] {
        let Some(steps) = agent.get(key).and_then(Value::as_array) else {
            continue;
        };
        let path = [at.clone(), vec![Seg::Key(key)]].concat();
        out.push(list(path.clone(), Kind::Steps, 0));
        for (s, step) in steps.iter().enumerate() {
            let step_path = [path.clone(), vec![Seg::Index(s)]].concat();
            if let Some(child) = step.get("spawn") {
                agent_lists(child, [step_path, vec![Seg::Key("spawn")]].concat(), out);
            } else if let Some(ask) = step.get("ask") {
                ask_lists(ask, [step_path, vec![Seg::Key("ask")]].concat(), out);
            }
        }
    }
}

fn ask_lists(ask: &Value, at: Vec<Seg>, out: &mut Vec<List>) {
    let Some(questions) = ask.get("questions").and_then(Value::as_array) else {
        return;
    };
    let path = [at, vec![Seg::Key("questions")]].concat();
    out.push(list(path.clone(), Kind::Questions, 1));
    for (q, question) in questions.iter().enumerate() {
        if question.get("options").is_some_and(Value::is_array) {
            let options = [path.clone(), vec![Seg::Index(q), Seg::Key("options")]].concat();
            out.push(list(options, Kind::Options, 2));
        }
    }
}

fn at<'v>(value: &'v Value, path: &[Seg]) -> Option<&'v Value> {
    path.iter().try_fold(value, |value, seg| match seg {
        Seg::Key(key) => value.get(*key),
        Seg::Index(i) => value.get(*i),
    })
}

fn at_mut<'v>(value: &'v mut Value, path: &[Seg]) -> Option<&'v mut Value> {
    path.iter().try_fold(value, |value, seg| match seg {
        Seg::Key(key) => value.get_mut(*key),
        Seg::Index(i) => value.get_mut(*i),
    })
}

/// How many elements the list at `path` holds, if it is there.
pub(super) fn len_at(scenario: &Value, path: &[Seg]) -> Option<usize> {
    match at(scenario, path)? {
        Value::Array(items) => Some(items.len()),
        Value::Object(map) => Some(map.len()),
        _ => None,
    }
}

/// The scenario with the list at `path` cut to the elements `keep` says, and the
/// references the cut left dangling dropped ([`repair`]); `None` if there is no
/// list there.
pub(super) fn keep(scenario: &Value, path: &[Seg], keep: impl Fn(usize) -> bool) -> Option<Value> {
    let mut candidate = scenario.clone();
    match at_mut(&mut candidate, path)? {
        Value::Array(items) => {
            let kept = std::mem::take(items).into_iter().enumerate();
            *items = kept.filter(|(i, _)| keep(*i)).map(|(_, item)| item).collect();
        }
        Value::Object(map) => {
            let kept = std::mem::take(map).into_iter().enumerate();
            *map = kept.filter(|(i, _)| keep(*i)).map(|(_, entry)| entry).collect();
        }
        _ => return None,
    }
    repair(&mut candidate);
    Some(candidate)
}

/// Drops what names an agent, answerer or child no longer there: scheduled events
/// about them or their calls, `expect` entries about them or their calls, and
/// `join` steps of a child no longer spawned earlier in the same script. A valid
/// scenario names nothing that is not there, so on one this changes nothing; after
/// a removal it removes exactly what depended on the removed element. Empty `expect`
/// maps, and an `expect` left empty, go too (absent and empty mean the same).
pub(super) fn repair(scenario: &mut Value) {
    let names = Names::of(scenario);
    if let Some(agents) = scenario.get_mut("agents").and_then(Value::as_array_mut) {
        for agent in agents {
            repair_agent(agent);
        }
    }
    if let Some(events) = scenario.get_mut("events").and_then(Value::as_array_mut) {
        events.retain(|event| names.event_ok(event));
    }
    let Some(object) = scenario.as_object_mut() else {
        return;
    };
    let Some(expect) = object.get_mut("expect").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(results) = expect.get_mut("results").and_then(Value::as_object_mut) {
        results.retain(|call, _| names.has_call(call));
    }
    for key in ["user_messages", "final_results"] {
        if let Some(map) = expect.get_mut(key).and_then(Value::as_object_mut) {
            map.retain(|agent, _| names.agents.contains(agent));
        }
    }
    expect.retain(|_, map| !map.as_object().is_some_and(Map::is_empty));
    if expect.is_empty() {
        object.shift_remove("expect");
    }
}

fn repair_agent(agent: &mut Value) {
    for key in ["script", "on_resume"] {
        let Some(steps) = agent.get_mut(key).and_then(Value::as_array_mut) else {
            continue;
        };
        let mut spawned = BTreeSet::new();
        steps.retain_mut(|step| {
            if let Some(child) = step.get_mut("spawn") {
                if let Some(name) = child.get("name").and_then(Value::as_str) {
                    spawned.insert(name.to_owned());
                }
                repair_agent(child);
            }
            match step.get("join").and_then(Value::as_str) {
                Some(child) => spawned.contains(child),
                None => true,
            }
        });
    }
}

/// The names of a scenario's agents (spawned children included) and answerers.
struct Names {
    agents: BTreeSet<String>,
    answerers: BTreeSet<String>,
}

impl Names {
    fn of(scenario: &Value) -> Names {
        let mut names = Names {
            agents: BTreeSet::new(),
            answerers: BTreeSet::new(),
        };
        let agents = scenario.get("agents").and_then(Value::as_array);
        for agent in agents.into_iter().flatten() {
            names.add_agent(agent);
        }
        let answerers = scenario.get("answerers").and_then(Value::as_array);
        for answerer in answerers.into_iter().flatten() {
            if let Some(name) = answerer.get("name").and_then(Value::as_str) {
                names.answerers.insert(name.to_owned());
            }
        }
        names
    }

    fn add_agent(&mut self, agent: &Value) {
        if let Some(name) = agent.get("name").and_then(Value::as_str) {
            self.agents.insert(name.to_owned());
        }
        for key in ["script", "on_resume"] {
            let steps = agent.get(key).and_then(Value::as_array);
            for child in steps.into_iter().flatten().filter_map(|step| step.get("spawn")) {
                self.add_agent(child);
            }
        }
    }

    /// Whether `call` (`"<agent>/<n>"`) is a call of an agent that is there.
    fn has_call(&self, call: &str) -> bool {
        call.rsplit_once('/')
            .is_some_and(|(agent, _)| self.agents.contains(agent))
    }

    /// Whether everything the event names is there.
    fn event_ok(&self, event: &Value) -> bool {
        let named = |key: &str| event.get(key).and_then(Value::as_str);
        if let Some(agent) = named("cancel_turn").or(named("stop_agent")) {
            return self.agents.contains(agent);
        }
        if let Some(call) = named("cancel_call") {
            return self.has_call(call);
        }
        if let Some(answerer) = named("crash_answerer") {
            return self.answerers.contains(answerer);
        }
        true
    }
}

/// How many elements of each kind a scenario holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Root agents.
    pub agents: usize,
    /// Answerers.
    pub answerers: usize,
    /// Scheduled events.
    pub events: usize,
    /// `expect` entries.
    pub expect: usize,
    /// Script steps, spawned children's included.
    pub steps: usize,
    /// Questions of `ask` steps.
    pub questions: usize,
    /// Options of those questions.
    pub options: usize,
}

impl Tally {
    /// Counts the elements of every list of `scenario`.
    pub(super) fn of(scenario: &Value) -> Tally {
        let mut tally = Tally::default();
        for list in lists(scenario) {
            let n = len_at(scenario, &list.path).unwrap_or(0);
            *tally.slot(list.kind) += n;
        }
        tally
    }

    fn slot(&mut self, kind: Kind) -> &mut usize {
        match kind {
            Kind::Agents => &mut self.agents,
            Kind::Answerers => &mut self.answerers,
            Kind::Events => &mut self.events,
            Kind::Expect => &mut self.expect,
            Kind::Steps => &mut self.steps,
            Kind::Questions => &mut self.questions,
            Kind::Options => &mut self.options,
        }
    }

    /// Every element, of every kind.
    pub fn total(&self) -> usize {
        self.agents + self.answerers + self.events + self.expect + self.steps + self.questions + self.options
    }

    /// `(name, count)` for each kind, in report order.
    pub fn named(&self) -> [(&'static str, usize); 7] {
        [
            ("agents", self.agents),
            ("answerers", self.answerers),
            ("events", self.events),
            ("script steps", self.steps),
            ("questions", self.questions),
            ("options", self.options),
            ("expect entries", self.expect),
        ]
    }
}
