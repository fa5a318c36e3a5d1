//! A runtime recovered from its durable log after a real crash (SPEC §4.1), and
//! the restart of SPEC §3.9 it shares with a real-clock run's scheduled process
//! loss: every live agent back as a runtime root with its lineage and callId
//! counter, the user messages decided for it and never received delivered
//! first, once; every open timed question re-offered from the top of the
//! waterfall; every open legacy question lost.
//!
//! The library hands back a handle for each agent that came back, so an
//! embedder re-attaches its own model loops to them.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::runtime::Continuity;
use super::{AgentHandle, Runtime, RuntimeConfig};
use crate::agent::{AgentSetup, Script};
use crate::durable::{Expected, LogConfig, RecoverError, RecoverOptions, Torn};
use crate::event::EventKind;
use crate::projection::{Projection, QuestionState};
use crate::protocol::{AgentId, BrokerMsg, Turn, TurnId};
use crate::restart::{Plan, Resumed};

/// A runtime recovered from its log, and what it brought back.
pub struct Recovered {
    /// The runtime, running, appending to the same file.
    pub runtime: Runtime,
    /// Every agent that was live, back as a runtime root, in name order.
    pub agents: Vec<ResumedAgent>,
    /// Events the file held.
    pub events: u64,
    /// The torn last line dropped, if the crash cut one.
    pub torn: Option<Torn>,
    /// Whether the log ended without a process loss (a crash: one was recorded
    /// at the last recorded instant).
    pub crashed: bool,
    /// The timed questions re-offered, by callId: pending from now on.
    pub reopened: Vec<String>,
    /// The legacy questions open at the crash, by callId: gone for good.
    pub lost: Vec<String>,
}

/// An agent that came back after a crash.
pub struct ResumedAgent {
    /// Its handle: its callIds continue after `calls_made`.
    pub handle: AgentHandle,
    /// Its lineage (the recorded one, else its former owner).
    pub lineage: Option<String>,
    /// Calls it made before the crash.
    pub calls_made: u64,
    /// Its calls still pending, by callId: their late answers reach it as user
    /// messages.
    pub pending: Vec<String>,
    /// The user messages decided for it and never received: delivered to it
    /// first, once, before anything else (its `user_messages` start with them).
    pub redelivered: Vec<String>,
}

impl Runtime {
    /// Recovers the runtime whose durable log is at `path` after a crash: folds
    /// the log, records the crash as a process loss at its last recorded instant
    /// (unless it ends in one), starts the broker and answerers of `config`
    /// again, brings every live agent back and re-offers every open timed
    /// question, appending to the same file under `config.log`'s policy (group
    /// commit without one). A torn last line is dropped and reported; a damaged
    /// log, or one of another name (`config.log`'s, else `"library"`) or seed,
    /// is an error naming the line, and the file is left as it was.
    pub async fn recover(config: RuntimeConfig, path: impl AsRef<Path>) -> Result<Recovered, RecoverError> {
        let path = path.as_ref();
        let log_config = match &config.log {
            Some(log) => LogConfig {
                path: path.to_owned(),
                ..log.clone()
            },
            None => LogConfig::new(path),
        };
        let expected = Expected {
            scenario: log_config.name.clone(),
            seed: config.seed,
        };
        let options = RecoverOptions {
            policy: log_config.sync,
            events_max: u64::MAX,
            keep: true,
            open_calls_max: config.limits.open_calls_max,
        };
        let recovery = crate::durable::recover(path, Some(&expected), options)?;
        let (torn, crashed, events, last_t) =
            (recovery.torn, recovery.crashed, recovery.events, recovery.last_t);
        let mut recorder = (recovery.recorder)
            .keeping_at_most(config.events_max)
            .with_hashes(config.hashes);
        let lost = lost_at_last_loss(recorder.projection());
        recorder.record(last_t, EventKind::recovered(torn.map(|t| t.line as u64)));
        let plan = crate::restart::plan(recorder.projection());
        let mut continuity = Continuity::new(recorder);
        continuity.log = Some(recovery.log);
        continuity.start = resumed_clock(last_t);
        let runtime = Runtime::start_in(config, continuity)
            .await
            .map_err(|e| RecoverError::Start(e.to_string()))?;
        let reopened = plan.reopened.iter().map(|r| r.call_id.to_string()).collect();
        let agents = runtime
            .restore_plan(plan, |_| None)
            .await
            .into_iter()
            .map(|(resumed, handle)| ResumedAgent {
                handle,
                lineage: resumed.lineage,
                calls_made: resumed.calls_made,
                pending: resumed.pending.iter().map(|c| c.to_string()).collect(),
                redelivered: resumed.redeliver.iter().map(|(_, m)| m.to_string()).collect(),
            })
            .collect();
        Ok(Recovered {
            runtime,
            agents,
            events,
            torn,
            crashed,
            reopened,
            lost,
        })
    }

    /// Carries out a restart `plan` on this freshly started runtime: each agent
    /// back as a runtime root running `script(name)` (nothing: a library agent),
    /// its undelivered user messages first; then every open timed question
    /// restored to the broker. The agents that came back, with their handles.
    pub(crate) async fn restore_plan(
        &self,
        plan: Plan,
        script: impl Fn(&str) -> Option<Script>,
    ) -> Vec<(Resumed, AgentHandle)> {
        let mut back = Vec::with_capacity(plan.agents.len());
        for agent in plan.agents {
            let id = self.next_agent_id();
            let setup = AgentSetup {
                id,
                name: agent.name.as_str().into(),
                tool: self.tool(),
                turn: Turn::root(TurnId { agent: id, n: 1 }),
                owner: None,
                calls_made: agent.calls_made,
                pending: agent.pending.clone(),
                script: script(&agent.name),
                prepared: self.prepared(),
            };
            let redeliver = agent.redeliver.clone();
            if let Some(handle) = self.start_resumed(setup, agent.lineage.clone(), redeliver).await {
                back.push((agent, handle));
            }
        }
        let ids: BTreeMap<String, AgentId> = back.iter().map(|(a, h)| (a.name.clone(), h.id())).collect();
        for reopened in plan.reopened {
            self.send(BrokerMsg::Restore(Box::new(reopened.restored(&ids))));
        }
        back
    }
}

/// The legacy questions the last process loss of `projection` took.
fn lost_at_last_loss(projection: &Projection) -> Vec<String> {
    projection
        .questions
        .iter()
        .filter(|(_, q)| q.state == QuestionState::LostOnRestart && q.seq == projection.seq)
        .map(|(id, _)| id.to_string())
        .collect()
}

/// A run clock that reads `last_t` now: the recovered runtime goes on where the
/// log ends (the time the process was down is not on the log's clock).
pub(crate) fn resumed_clock(last_t: f64) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_sub(Duration::from_secs_f64(last_t.max(0.0)))
        .unwrap_or(now)
}
