//! The lists of a scenario's JSON the shrinker removes elements from, how to keep
//! a subset of one, and the repair that drops what a removal left dangling.
//!
//! Lists, in the order a pass visits them: `agents`, `answerers`, `events`, the
//! four maps of `expect` (their keys are the elements), then each agent's
//! `script` and `on_resume` depth-first (a spawned child's scripts right after the
//! spawn's own list), with, under each `ask`, its `questions` and each question's
//! `options`. A call keeps at least one question and two options: fewer is an
//! invalid call, a different failure (SPEC §2.3).

use std::collections::{BTreeMap, BTreeSet};

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
            map.retain(|agent, entry| names.agents.contains_key(agent) && names.entry_ok(entry));
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

/// The names of a scenario's agents (spawned children included), with the most
/// tool calls each can make in a run, and its answerers.
struct Names {
    agents: BTreeMap<String, u64>,
    answerers: BTreeSet<String>,
    /// The file's `process_loss` events: each reruns every `on_resume`.
    restarts: u64,
}

impl Names {
    fn of(scenario: &Value) -> Names {
        let events = scenario.get("events").and_then(Value::as_array);
        let restarts = (events.into_iter().flatten())
            .filter(|event| event.get("process_loss").is_some())
            .count() as u64;
        let mut names = Names {
            agents: BTreeMap::new(),
            answerers: BTreeSet::new(),
            restarts,
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
        let steps = |key: &str| {
            agent
                .get(key)
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
        };
        if let Some(name) = agent.get("name").and_then(Value::as_str) {
            let most = calls(steps("script")) + self.restarts * calls(steps("on_resume"));
            self.agents.insert(name.to_owned(), most);
        }
        for key in ["script", "on_resume"] {
            for child in steps(key).iter().filter_map(|step| step.get("spawn")) {
                self.add_agent(child);
            }
        }
    }

    /// Whether `call` (`"<agent>/<n>"`) can still exist: its agent is there and
    /// makes at least `n` tool calls (as `scenario::parse` checks a reference;
    /// a removed `ask` step takes the last call of its agent with it).
    fn has_call(&self, call: &str) -> bool {
        let Some((agent, n)) = call.rsplit_once('/') else {
            return false;
        };
        match (self.agents.get(agent), n.parse::<u64>()) {
            (Some(most), Ok(n)) => n <= *most,
            (Some(_), Err(_)) => true,
            (None, _) => false,
        }
    }

    /// Whether every call and child an `expect` entry of an agent names (its
    /// user messages' `callId`s; its final result's `results`, `unresolved`
    /// and `errors`) can still exist.
    fn entry_ok(&self, entry: &Value) -> bool {
        let listed = |key: &str| entry.get(key).and_then(Value::as_array).into_iter().flatten();
        let field = |item: &Value, key: &str| item.get(key).and_then(Value::as_str).map(str::to_owned);
        let messages = entry.as_array().into_iter().flatten();
        let mut calls: Vec<String> = messages.filter_map(|m| field(m, "callId")).collect();
        calls.extend(
            entry
                .get("results")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(c, _)| c.clone()),
        );
        calls.extend(listed("unresolved").filter_map(|u| field(u, "callId")));
        let mut children = listed("errors").filter_map(|e| field(e, "spawn"));
        calls.iter().all(|call| self.has_call(call)) && children.all(|child| self.agents.contains_key(&child))
    }

    /// Whether everything the event names is there.
    fn event_ok(&self, event: &Value) -> bool {
        let named = |key: &str| event.get(key).and_then(Value::as_str);
        if let Some(agent) = named("cancel_turn").or(named("stop_agent")) {
            return self.agents.contains_key(agent);
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

/// Tool calls `steps` make at most: each `ask`, `ask_raw` and `ask_unresolved`,
/// and a `repeat`'s body as many times as it runs (a spawned child's calls are
/// its own).
fn calls(steps: &[Value]) -> u64 {
    let step_calls = |step: &Value| {
        if ["ask", "ask_raw", "ask_unresolved"]
            .iter()
            .any(|key| step.get(key).is_some())
        {
            return 1;
        }
        let Some(repeat) = step.get("repeat") else {
            return 0;
        };
        let times = repeat.get("times").and_then(Value::as_u64).unwrap_or(0);
        let body = repeat
            .get("script")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        times.saturating_mul(calls(body))
    };
    steps.iter().map(step_calls).fold(0, u64::saturating_add)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ASK: &str = r#"{"ask":{"questions":[{"id":"q","question":"Go?","header":"Go","options":[{"label":"Yes"},{"label":"No"}]}]}}"#;

    /// A root that asks twice, then once more in its `on_resume` after each of
    /// two losses, and a child that asks in a `repeat` of 2: calls `root/1` to
    /// `root/4` and `kid/1`, `kid/2`, each named somewhere in `expect`.
    fn scenario() -> Value {
        let ask: Value = serde_json::from_str(ASK).unwrap();
        json!({ "name": "repair", "tool": { "mode": "timed", "timeout": 5 },
            "answerers": [{ "name": "web", "accepts": "all", "latency": 1.0, "answer": "recommended" }],
            "agents": [{ "name": "root", "script": [ask, ask,
                    { "spawn": { "name": "kid", "script": [{ "repeat": { "times": 2, "script": [ask] } }] } }],
                "on_resume": [ask] }],
            "events": [{ "at": 0.5, "process_loss": { "restart_after": 1.0 } },
                       { "at": 3.0, "process_loss": { "restart_after": 1.0 } },
                       { "at": 4.0, "cancel_call": "root/2" }],
            "expect": { "results": { "root/4": {}, "kid/2": {} },
                "user_messages": { "root": [{ "callId": "root/2" }], "kid": [{ "callId": "kid/2" }] },
                "final_results": { "root": { "agent": "root", "results": { "root/1": {}, "root/2": {} } } } } })
    }

    #[test]
    fn a_scenario_that_names_only_what_can_exist_is_left_as_it_is() {
        let mut repaired = scenario();
        crate::scenario::parse("repair.json", &repaired.to_string()).expect("a valid scenario");
        repair(&mut repaired);
        assert_eq!(repaired, scenario());
    }

    /// Regression: the repair dropped what named a removed agent, but not what
    /// named a call its agent no longer makes, so every candidate that removed
    /// an `ask` named in `expect` was invalid and the shrink stopped short.
    #[test]
    fn a_removed_ask_takes_what_names_its_agents_last_calls_with_it() {
        let script = [Seg::Key("agents"), Seg::Index(0), Seg::Key("script")];
        let one_ask = keep(&scenario(), &script, |i| i != 1).unwrap();
        crate::scenario::parse("repair.json", &one_ask.to_string()).expect("the candidate is valid");
        assert_eq!(
            one_ask["events"],
            scenario()["events"],
            "root/2 is still made, by an on_resume"
        );
        let mut expect = scenario()["expect"].clone();
        expect["results"].as_object_mut().unwrap().remove("root/4");
        assert_eq!(
            one_ask["expect"], expect,
            "root makes 3 calls at most now: root/4 went"
        );
        let on_resume = [Seg::Key("agents"), Seg::Index(0), Seg::Key("on_resume")];
        let one_call = keep(&one_ask, &on_resume, |_| false).unwrap();
        crate::scenario::parse("repair.json", &one_call.to_string()).expect("the candidate is valid");
        assert_eq!(
            one_call["events"].as_array().unwrap().len(),
            2,
            "the cancel_call of root/2 went"
        );
        assert_eq!(
            one_call["expect"],
            json!({ "results": { "kid/2": {} }, "user_messages": { "kid": [{ "callId": "kid/2" }] } }),
            "root makes 1 call at most now: what named root/2 went, root's final result with it"
        );
        let repeat = [
            Seg::Key("agents"),
            Seg::Index(0),
            Seg::Key("script"),
            Seg::Index(2),
        ];
        let repeat = [&repeat[..], &[Seg::Key("spawn"), Seg::Key("script")]].concat();
        let no_repeat = keep(&scenario(), &repeat, |_| false).unwrap();
        crate::scenario::parse("repair.json", &no_repeat.to_string()).expect("the candidate is valid");
        assert!(no_repeat["expect"]["results"].get("kid/2").is_none());
        assert!(no_repeat["expect"]["user_messages"].get("kid").is_none());
    }
}
