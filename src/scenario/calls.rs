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

/// Every `cancel_call` names a call its agent can make; else the JSON path of the
/// first that does not, and why.
pub(super) fn check(scenario: &Scenario, cancels: &[(usize, String)]) -> Result<(), (String, String)> {
    let restarts = (scenario.events.iter())
        .filter(|event| matches!(event.action, Action::ProcessLoss { .. }))
        .count() as u64;
    let agents: BTreeMap<&str, &AgentSpec> = (scenario.all_agents().into_iter())
        .map(|agent| (agent.name.as_str(), agent))
        .collect();
    for (k, call) in cancels {
        // The build checked the callId's form and that its agent is in the run.
        let Some((name, n)) = call.rsplit_once('/') else {
            continue;
        };
        let (Some(agent), Ok(n)) = (agents.get(name), n.parse::<u64>()) else {
            continue;
        };
        let (script, on_resume) = (calls(&agent.script), calls(&agent.on_resume));
        let most = script.saturating_add(restarts.saturating_mul(on_resume));
        if n > most {
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
