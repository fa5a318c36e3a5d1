//! Which calls a scenario can make: a `cancel_call` of a call the scenario shows
//! can never exist (`root/7` when root's scripts make one call) is a bad
//! reference, reported like a `join` of an unknown child, not a run that passes
//! without having cancelled anything.
//!
//! An agent numbers its tool calls from 1 (SPEC §1), every `ask`, `ask_raw` and
//! `ask_unresolved` step counting at most once. Its script runs once; its
//! `on_resume` once after each restart, so at most once per `process_loss` event.
//! A call past `script + restarts × on_resume` calls of its agent cannot exist.
//! Whether a call that can exist does is a run-time matter: the timeline says
//! when a `cancel_call` matched no open call.
//!
//! Never edits the scenario; reads the built one.

use std::collections::BTreeMap;

use super::raw::{Obj, RawEvent};
use super::{Action, AgentSpec, Scenario, Step};

/// The `cancel_call` events of a file, with their index in the file (the built
/// scenario keeps events sorted by time, so the file's index is taken first).
pub(super) fn cancel_calls(raw: &[Obj<RawEvent>]) -> Vec<(usize, String)> {
    (raw.iter().enumerate())
        .filter_map(|(k, Obj(event))| event.cancel_call.clone().map(|call| (k, call)))
        .collect()
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

/// Every `cancel_call` names a call its agent can make; else the JSON path of the
/// first that does not, and why.
pub(super) fn check(scenario: &Scenario, cancels: &[(usize, String)]) -> Result<(), (String, String)> {
    let reach = Reach::of(scenario);
    for (k, call) in cancels {
        // The build checked the callId's form and that its agent is in the run.
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
                format!("events[{k}].cancel_call"),
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
