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

use crate::event::{EventKind, RawQuestions};
use crate::projection::{Projection, QuestionRecord, QuestionState, UnjudgedBatch};
use crate::protocol::{AgentId, CallId, Refusal, Restored};
use crate::tool::result::{DELEGATED_MESSAGE, OPEN_CALLS_MESSAGE, TURN_FIRED_MESSAGE, late_answer_message};
use crate::tool::{Ask, ErrorCode, Question, Schema, ToolResult, Wait, validate_batch};

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

/// What a recovery records right after the crash's process loss, before the
/// restart: the verdict of every batch whose verdict the crash cut off (SPEC
/// §4.1: a crash may cut the broker's step between an `answer` line and the
/// line after it; a scheduled loss never does, so nothing is left to judge
/// after one).
///
/// The batch is judged as the broker judged batches, against the state the log
/// leaves: from the live owner of a timed question (pending since the loss),
/// valid, it is that question's late answer, and its user message is delivered
/// to the resumed agent first, once, like any message decided and not
/// received. Otherwise it is refused with the broker's reason (`owner_dead`,
/// `unknown`, `withdrawn`, `settled`, `not_owner`, the batch's defect), or
/// `lost_on_restart` for a legacy question the loss took. Nobody hears a
/// refusal: the answerer that sent the batch died with the process. Either way
/// no answer is lost, and an answerer is not asked again for what it answered.
pub fn cut_short(projection: &Projection) -> Vec<EventKind> {
    projection
        .unjudged
        .iter()
        .map(|batch| {
            let question = projection.questions.get(&batch.call_id);
            match (batch.refusal.as_deref(), question) {
                (Some(reason), _) => refused(batch, reason),
                (None, Some(q)) => match q.state {
                    QuestionState::Pending => {
                        late_answer(q, batch).unwrap_or_else(|reason| refused(batch, &reason))
                    }
                    QuestionState::LostOnRestart => refused(batch, Refusal::LostOnRestart.as_str()),
                    // The call was open when the batch arrived and nothing
                    // happened to it since but the loss: it is pending or lost.
                    _ => refused(batch, Refusal::Settled.as_str()),
                },
                (None, None) => refused(batch, Refusal::Unknown.as_str()),
            }
        })
        .collect()
}

/// The late answer `batch` gives the pending `question`, or why it gives none:
/// the batch's defect (SPEC §3.6), or `withdrawn` for a question whose record
/// lacks the shape (the restart withdraws it, `not_restorable`).
fn late_answer(question: &QuestionRecord, batch: &UnjudgedBatch) -> Result<EventKind, String> {
    let withdrawn = || Refusal::Withdrawn.as_str().to_owned();
    let raw = question.questions.as_ref().ok_or_else(withdrawn)?;
    let ask = restored_ask(raw.text()).ok_or_else(withdrawn)?;
    let answers = validate_batch(&ask.questions, &batch.batch).map_err(|r| r.0)?;
    let message: Arc<str> = late_answer_message(&batch.call_id, raw.text(), &answers).into();
    Ok(EventKind::LateAnswer {
        call_id: batch.call_id.clone(),
        agent: question.agent.clone(),
        answers,
        message,
    })
}

fn refused(batch: &UnjudgedBatch, reason: &str) -> EventKind {
    EventKind::Refused {
        call_id: batch.call_id.clone(),
        answerer: batch.answerer.clone(),
        what: crate::protocol::Sent::Submit.as_str().to_owned(),
        reason: reason.to_owned(),
    }
}

/// What a recovery records before the crash's process loss: the tool result of
/// every call still waiting whose result was certain, because the crash cut the
/// broker's step after the line that decided it (SPEC §4.1). Such a call is
/// one of a delegated caller (SPEC §3.1: the broker refuses it in the step
/// that records its `request`, before anything reaches an answerer), or one of
/// a turn that fired (SPEC §3.8: the `cancel` line, then the `ABORTED` result
/// of every call waiting in that turn or a turn derived from it; a request
/// under a fired turn is aborted at once), or a request over the broker's
/// `open_calls_max` (refused `LIMIT_EXCEEDED` in the step of its `request`:
/// the log's last line is that request, and the calls open besides it are at
/// the limit). No call is left waiting otherwise, so the step is completed as
/// the broker would have: a child's question is never offered, a cancelled or
/// refused one is not offered after the restart.
pub fn results_cut_short(projection: &Projection, open_calls_max: usize) -> Vec<EventKind> {
    let delegated = ToolResult::error(ErrorCode::DelegatedCaller, DELEGATED_MESSAGE);
    let aborted = ToolResult::error(ErrorCode::Aborted, TURN_FIRED_MESSAGE);
    let over = ToolResult::error(ErrorCode::LimitExceeded, OPEN_CALLS_MESSAGE);
    let open_besides = projection.unsettled().count().saturating_sub(1);
    projection
        .unsettled()
        .filter(|(_, q)| q.state == QuestionState::Open)
        .filter_map(|(call_id, q)| {
            let result = if projection.is_delegated(&q.agent) {
                &delegated
            } else if projection.turn_fired(&q.agent, q.turn) {
                &aborted
            } else if q.request_seq == projection.seq && open_besides >= open_calls_max {
                &over
            } else {
                return None;
            };
            Some(EventKind::result(call_id, &q.agent, result))
        })
        .collect()
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
