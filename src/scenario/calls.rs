//! Which calls a scenario can make, and where a file names a call or an agent.
//!
//! A callId the scenario shows can never exist (`root/7` when root's scripts
//! make one call) is a bad reference wherever the file names it: a
//! `cancel_call`, and every place of `expect` (a key of `results`, the
//! `callId` of a user message, a call in a final result). It is reported like a
//! `join` of an unknown child, not as a run that passes without having
//! cancelled anything, or one that fails its expectation with `got null`.
//!
//! An agent numbers its tool calls from 1 (SPEC §1), every `ask`, `ask_raw` and
//! `ask_unresolved` step counting at most once. Its script runs once; its
//! `on_resume` once after each restart, so at most once per `process_loss` event.
//! A call past `script + restarts × on_resume` calls of its agent cannot exist.
//! Whether a call that can exist does is a run-time matter (a race may make it
//! on some seeds only): the timeline says when a `cancel_call` matched no open
//! call, and a missed expectation says `got null`.
//!
//! Never edits the scenario; reads the built one.

use std::collections::BTreeMap;

use serde_json::Value;

use super::raw::{Obj, RawEvent};
use super::{Action, AgentSpec, Expect, Scenario, Step};

/// A place in the file that names a call or an agent: its JSON path, the name
/// it holds, and the agent the place belongs to, if it belongs to one.
pub(super) struct Reference {
    pub path: String,
    pub name: String,
    pub kind: Named,
    /// The agent whose call (a [`Named::Call`]) or which agent (a
    /// [`Named::Agent`]) this place can only hold: an agent's final result
    /// names that agent and holds its calls, and a late answer reaches the
    /// agent that made the call (SPEC §3, §5). Anything else can never match.
    pub of: Option<String>,
}

/// What a [`Reference`] names.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Named {
    /// A callId, `"<agent>/<n>"`.
    Call,
    /// An agent of the run.
    Agent,
}

/// The `cancel_call` events of a file, with their path in the file (the built
/// scenario keeps events sorted by time, so the file's index is taken first).
pub(super) fn cancel_calls(raw: &[Obj<RawEvent>]) -> Vec<Reference> {
    (raw.iter().enumerate())
        .filter_map(|(k, Obj(event))| {
            (event.cancel_call.clone()).map(|call| Reference {
                path: format!("events[{k}].cancel_call"),
                name: call,
                kind: Named::Call,
                of: None,
            })
        })
        .collect()
}

/// Every place of `expect` that names a call or an agent, in the order the
/// checks report them: the keys of `results`; each key of `user_messages`, then
/// the `callId` of its messages; each key of `final_results`, then, in its final
/// result (SPEC §5), the `agent`, the keys of `results`, the `callId` of each
/// `unresolved` entry and the `spawn` of each entry of `errors`. A value of
/// another shape names nothing here: the run compares it as it is.
pub(super) fn expect_references(expect: &Expect) -> Vec<Reference> {
    let mut out = Vec::new();
    let mut add = |path: String, name: &str, kind: Named, of: Option<&str>| {
        out.push(Reference {
            path,
            name: name.to_owned(),
            kind,
            of: of.map(str::to_owned),
        })
    };
    for call in expect.results.keys() {
        add(format!("expect.results.{call}"), call, Named::Call, None);
    }
    for (agent, messages) in &expect.user_messages {
        let path = format!("expect.user_messages.{agent}");
        add(path.clone(), agent, Named::Agent, None);
        for (k, message) in messages.iter().enumerate() {
            if let Some(call) = message.get("callId").and_then(Value::as_str) {
                add(format!("{path}[{k}].callId"), call, Named::Call, Some(agent));
            }
        }
    }
    for (agent, result) in &expect.final_results {
        let path = format!("expect.final_results.{agent}");
        add(path.clone(), agent, Named::Agent, None);
        if let Some(name) = result.get("agent").and_then(Value::as_str) {
            add(format!("{path}.agent"), name, Named::Agent, Some(agent));
        }
        for call in (result.get("results").and_then(Value::as_object))
            .into_iter()
            .flatten()
            .map(|(call, _)| call)
        {
            add(format!("{path}.results.{call}"), call, Named::Call, Some(agent));
        }
        let entries = |key: &str| {
            result
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
        };
        for (k, entry) in entries("unresolved") {
            if let Some(call) = entry.get("callId").and_then(Value::as_str) {
                add(
                    format!("{path}.unresolved[{k}].callId"),
                    call,
                    Named::Call,
                    Some(agent),
                );
            }
        }
        for (k, entry) in entries("errors") {
            if let Some(child) = entry.get("spawn").and_then(Value::as_str) {
                add(format!("{path}.errors[{k}].spawn"), child, Named::Agent, None);
            }
        }
    }
    out
}

/// How many tool calls each agent of a built scenario can make at most.
pub(crate) struct Reach<'s> {
    restarts: u64,
    agents: BTreeMap<&'s str, &'s AgentSpec>,
}

impl<'s> Reach<'s> {
    /// The reach of `scenario`'s agents (children included).
    pub(crate) fn of(scenario: &'s Scenario) -> Reach<'s> {
        let restarts = (scenario.events.iter())
            .filter(|event| matches!(event.action, Action::ProcessLoss { .. }))
            .count() as u64;
        let agents = (scenario.all_agents().into_iter())
            .map(|agent| (agent.name.as_str(), agent))
            .collect();
        Reach { restarts, agents }
    }

    /// Most calls `agent` makes in a run, with what its script and its
    /// `on_resume` make; `None` if no agent has that name.
    fn most(&self, agent: &str) -> Option<(u64, u64, u64)> {
        let agent = self.agents.get(agent)?;
        let (script, on_resume) = (calls(&agent.script), calls(&agent.on_resume));
        Some((
            script.saturating_add(self.restarts.saturating_mul(on_resume)),
            script,
            on_resume,
        ))
    }

    /// Whether `call` (`"<agent>/<n>"`) can exist in a run: its agent is there and
    /// makes at least `n` calls at most. (A callId of another form: `false`.)
    pub(crate) fn can_exist(&self, call: &str) -> bool {
        let Some((name, n)) = call.rsplit_once('/') else {
            return false;
        };
        match (self.most(name), n.parse::<u64>()) {
            (Some((most, _, _)), Ok(n)) => n >= 1 && n <= most,
            _ => false,
        }
    }
}

/// Every call `named` names is one its agent can make; else the JSON path of
/// the first that is not, and why. (The build checked each callId's form and
/// that its agent is in the run; references to agents are its alone.)
pub(super) fn check(scenario: &Scenario, named: &[Reference]) -> Result<(), (String, String)> {
    let mut calls = named.iter().filter(|r| r.kind == Named::Call).peekable();
    // A load of 10^5 agents that names no call builds no reach.
    if calls.peek().is_none() {
        return Ok(());
    }
    let reach = Reach::of(scenario);
    for Reference { path, name: call, .. } in calls {
        let Some((name, n)) = call.rsplit_once('/') else {
            continue;
        };
        let (Some((most, script, on_resume)), Ok(n)) = (reach.most(name), n.parse::<u64>()) else {
            continue;
        };
        if n > most {
            let restarts = reach.restarts;
            let reruns = match (restarts, on_resume) {
                (0, _) => "no process_loss reruns its on_resume".to_owned(),
                (_, 0) => "its on_resume makes none".to_owned(),
                (r, c) => format!("its on_resume makes {c} after each of {r} restarts"),
            };
            return Err((
                path.clone(),
                format!(
                    "{call:?} can never exist: {name} makes at most {most} tool calls in this run \
                     (its script makes {script}; {reruns})"
                ),
            ));
        }
    }
    Ok(())
}

/// Tool calls a script makes at most: its `ask`, `ask_raw` and `ask_unresolved`
/// steps (`repeat` is unrolled already; a spawned child's calls are its own).
fn calls(steps: &[Step]) -> u64 {
    (steps.iter())
        .filter(|step| {
            matches!(
                step,
                Step::Ask { .. } | Step::AskRaw { .. } | Step::AskUnresolved { .. }
            )
        })
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_can_exist_up_to_what_its_agent_makes_in_the_run() {
        let ask = r#"{"ask":{"questions":[{"id":"q","question":"Go?","header":"Go","options":[{"label":"Yes"},{"label":"No"}]}]}}"#;
        let text = format!(
            r#"{{"name":"reach","tool":{{"mode":"timed","timeout":5}},
                "answerers":[{{"name":"web","accepts":"all","latency":1.0,"answer":"recommended"}}],
                "agents":[{{"name":"r-{{i}}","count":2,"script":[{ask},{ask}],"on_resume":[{ask}]}}],
                "events":[{{"at":1.0,"process_loss":{{"restart_after":1.0}}}},
                          {{"at":5.0,"process_loss":{{"restart_after":1.0}}}}]}}"#
        );
        let scenario = crate::scenario::parse("reach.json", &text).expect("it parses");
        let reach = Reach::of(&scenario);
        assert!(reach.can_exist("r-1/1"), "an expanded count row's agent");
        assert!(
            reach.can_exist("r-0/4"),
            "two calls, then one after each of two restarts"
        );
        assert!(!reach.can_exist("r-0/5"), "past the most it makes");
        assert!(!reach.can_exist("r-0/0"), "calls count from 1");
        assert!(!reach.can_exist("r-2/1"), "no such agent");
        assert!(!reach.can_exist("r-0"), "not a callId");
    }
}
