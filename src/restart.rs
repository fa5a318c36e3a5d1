//! What a restart after a process loss rebuilds from the log (SPEC §3.9): a pure
//! plan from the projection, carried out alike by the simulator and the actor
//! runtime.
//!
//! Every agent that was live comes back as a runtime root carrying its lineage,
//! with its callId counter, the calls of its earlier life that are still pending,
//! and the user messages decided for it and never received (delivered first, once).
//! Every open timed question is re-offered from the exact text the model sent; one
//! whose record lacks the shape is withdrawn by the broker (`not_restorable`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::event::RawQuestions;
use crate::projection::Projection;
use crate::protocol::{AgentId, CallId, Restored};
use crate::tool::{Ask, Question, Schema, Wait};

/// One agent coming back.
#[derive(Clone, Debug, PartialEq)]
pub struct Resumed {
    /// Its name.
    pub name: String,
    /// Its lineage: the recorded lineage, else its former owner.
    pub lineage: Option<String>,
    /// Calls it made in its earlier life.
    pub calls_made: u64,
    /// Its calls still pending (for `await_answer`).
    pub pending: BTreeSet<CallId>,
    /// User messages decided for it and never received, in callId order.
    pub redeliver: Vec<(CallId, Arc<str>)>,
}

/// One timed question re-offered.
#[derive(Clone, Debug)]
pub struct Reopened {
    /// The call.
    pub call_id: CallId,
    /// The agent that asked it.
    pub agent: String,
    /// The question rebuilt from its text, or `None` if the record lacks the shape.
    pub ask: Option<Ask>,
}

impl Reopened {
    /// The broker's `Restore` for it, once its agent came back as `resumed` (an
    /// agent not resumed leaves it for the broker to withdraw).
    pub fn restored(self, resumed: &std::collections::BTreeMap<String, AgentId>) -> Restored {
        Restored {
            agent: resumed.get(&self.agent).copied().unwrap_or(0),
            agent_name: self.agent.as_str().into(),
            call_id: self.call_id,
            ask: self.ask,
        }
    }
}

/// The restart's plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The agents that come back, by name.
    pub agents: Vec<Resumed>,
    /// The questions re-offered, by callId.
    pub reopened: Vec<Reopened>,
}

/// The plan for a restart from `projection`: one pass over the open questions
/// and the undelivered messages, grouped by agent, then one over the agents, so
/// a restart costs O(questions + agents), never their product.
pub fn plan(projection: &Projection) -> Plan {
    let mut pending: BTreeMap<&str, BTreeSet<CallId>> = BTreeMap::new();
    for (call_id, question) in projection.answerable() {
        pending
            .entry(question.agent.as_str())
            .or_default()
            .insert(call_id.clone());
    }
    let mut redeliver: BTreeMap<&str, Vec<(CallId, Arc<str>)>> = BTreeMap::new();
    for (call_id, question, message) in projection.undelivered() {
        redeliver
            .entry(question.agent.as_str())
            .or_default()
            .push((call_id.clone(), message.clone()));
    }
    let agents = projection
        .agents
        .iter()
        .filter(|(_, a)| a.live)
        .map(|(name, record)| Resumed {
            name: name.to_string(),
            lineage: (record.lineage.as_ref().or(record.owner.as_ref())).map(|l| l.to_string()),
            calls_made: record.calls_made,
            pending: pending.remove(name.as_str()).unwrap_or_default(),
            redeliver: redeliver.remove(name.as_str()).unwrap_or_default(),
        })
        .collect();
    let mut asks = RestoredAsks::default();
    let reopened = projection
        .answerable()
        .map(|(call_id, question)| Reopened {
            call_id: call_id.clone(),
            agent: question.agent.to_string(),
            ask: question.questions.as_ref().and_then(|q| asks.get(q)),
        })
        .collect();
    Plan { agents, reopened }
}

/// The questions a restart re-offers, each text parsed once: the copies of a
/// scenario's `count` row, or a host's agents asking the same thing, share one
/// [`Ask`] (its questions and the recorded text are reference-counted), as they
/// did before the loss. A restart of 10^5 open questions of one text rebuilt
/// and held 10^5 copies of it, ~280 bytes a call.
#[derive(Default)]
struct RestoredAsks<'p>(FxHashMap<&'p str, Option<Ask>>);

impl<'p> RestoredAsks<'p> {
    fn get(&mut self, raw: &'p RawQuestions) -> Option<Ask> {
        let ask = self.0.entry(raw.text()).or_insert_with(|| {
            let mut ask = restored_ask(raw.text())?;
            ask.questions_raw = raw.shared();
            Some(ask)
        });
        ask.clone()
    }
}

/// A timed question rebuilt from the questions text of its request, or `None` if
/// the record lacks the shape. No limit of SPEC §2.3 is applied again (they held
/// when the model asked); the text is kept exactly, for the late answer's message.
pub fn restored_ask(text: &str) -> Option<Ask> {
    let recorded: Value = serde_json::from_str(text).ok()?;
    let questions: Vec<Question> = recorded
        .as_array()?
        .iter()
        .map(Question::from_recorded)
        .collect::<Option<_>>()?;
    Some(Ask {
        schema: Schema::Timed,
        questions: questions.into(),
        questions_raw: RawValue::from_string(text.to_owned()).ok()?.into(),
        timeout_arg: None,
        wait: Wait::Blocking,
    })
}
