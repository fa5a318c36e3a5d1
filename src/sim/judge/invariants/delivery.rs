//! User messages about pending calls (SPEC §2.4, §3.9): what a late answer or a
//! withdrawal decided for the calling agent, and whether it reached it.
//!
//! - `late_answer_reaches_caller`: a decided message is exactly the text SPEC §2.4
//!   gives (compact JSON, its keys in SPEC's order): the late answer's, with its
//!   call's callId and questions exactly as the model sent them, or the
//!   withdrawal's, with its call's callId and its reason (see `message`).
//! - `pending_end_reaches_caller`: every late answer, and every withdrawal the
//!   agent must be told of (`NO_ANSWERER`), reaches the agent as a user message
//!   exactly once; a withdrawal by `cancel_call` or a stopped agent decides none;
//!   nothing reaches an agent that was not decided for it, nor twice.
//!
//! Each message is owed from its decision until its receipt, in a list per call
//! (one or two long); what is still owed at the end never arrived.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use super::Violations;
use super::calls::CallInfo;
use super::texts::message::{self, Decided};
use crate::event::RawQuestions;
use crate::protocol::{CallId, Name};

/// `pending_end_reaches_caller`.
pub const PENDING_END_REACHES_CALLER: &str = "pending_end_reaches_caller";
/// `late_answer_reaches_caller`.
pub const LATE_ANSWER_REACHES_CALLER: &str = "late_answer_reaches_caller";

/// A decided user message owed to an agent.
struct Owed {
    seq: u64,
    agent: Name,
    message: Arc<str>,
}

/// The messages decided and not yet received, by call.
#[derive(Default)]
pub struct Delivery {
    owed: FxHashMap<CallId, Vec<Owed>>,
}

impl Delivery {
    /// A withdrawal for `reason`, with the message decided for its agent if any.
    /// A message where none may be decided is named once, for being there.
    pub fn withdrawn(
        &mut self,
        (call_id, info): (&CallId, &CallInfo),
        seq: u64,
        reason: &str,
        message: Option<&Arc<str>>,
        out: &mut Violations,
    ) {
        match (reason, message) {
            ("NO_ANSWERER", None) => {
                let detail = "withdrawn for NO_ANSWERER without telling its agent".to_owned();
                out.push(PENDING_END_REACHES_CALLER, call_id, seq, detail);
            }
            ("cancel_call" | "agent_stopped", Some(message)) => {
                let detail = format!("withdrawn by {reason}, yet a user message was decided for it");
                out.push(PENDING_END_REACHES_CALLER, call_id, seq, detail);
                self.owe((call_id, info), seq, message);
            }
            (_, Some(message)) => {
                let decided = Decided::Withdrawal(reason);
                self.decided((call_id, info), seq, message, decided, out);
            }
            (_, None) => {}
        }
    }

    /// A user message was decided: it must be exactly the text SPEC §2.4 gives
    /// for its call (its callId, a late answer's questions as the model sent
    /// them, a withdrawal's reason), and it is owed to the call's agent.
    pub fn decided(
        &mut self,
        (call_id, info): (&CallId, &CallInfo),
        seq: u64,
        message: &Arc<str>,
        decided: Decided<'_>,
        out: &mut Violations,
    ) {
        let questions = info.questions.as_ref().map(RawQuestions::text);
        if let Some(detail) = message::problem(call_id, questions, decided, message) {
            out.push(LATE_ANSWER_REACHES_CALLER, call_id, seq, detail);
        }
        self.owe((call_id, info), seq, message);
    }

    fn owe(&mut self, (call_id, info): (&CallId, &CallInfo), seq: u64, message: &Arc<str>) {
        self.owed.entry(call_id.clone()).or_default().push(Owed {
            seq,
            agent: info.agent.clone(),
            message: message.clone(),
        });
    }

    /// A user message reached `agent`: it pays what was owed, or breaks
    /// exactly-once delivery.
    pub fn received(
        &mut self,
        (call_id, info): (&CallId, Option<&mut CallInfo>),
        seq: u64,
        agent: &str,
        message: &str,
        out: &mut Violations,
    ) {
        let paid = self.owed.get_mut(&**call_id).and_then(|owed| {
            let at = owed
                .iter()
                .position(|o| &*o.agent == agent && &*o.message == message)?;
            owed.remove(at);
            Some(owed.is_empty())
        });
        let delivered = info.map_or(0, |info| {
            info.delivered += 1;
            info.delivered - 1
        });
        match paid {
            Some(true) => {
                self.owed.remove(&**call_id);
            }
            Some(false) => {}
            None if delivered > 0 => {
                let detail = format!("a user message about the call reached {agent} a second time");
                out.push(PENDING_END_REACHES_CALLER, call_id, seq, detail);
            }
            None => {
                let detail =
                    format!("a user message reached {agent} that no late answer or withdrawal decided");
                out.push(PENDING_END_REACHES_CALLER, call_id, seq, detail);
            }
        }
    }

    /// A process loss: a message owed to an agent that was stopped can never
    /// arrive (a stopped agent does not come back), and is owed no more.
    pub fn process_loss(&mut self, stopped: &FxHashSet<Name>) {
        self.owed.retain(|_, owed| {
            owed.retain(|o| !stopped.contains(&o.agent));
            !owed.is_empty()
        });
    }

    /// What never arrived.
    pub fn finish(self, out: &mut Violations) {
        for (call_id, owed) in self.owed {
            for o in owed {
                let detail = format!("no user message reached {}", o.agent);
                out.push(PENDING_END_REACHES_CALLER, &call_id, o.seq, detail);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Schema;

    fn call() -> CallInfo {
        CallInfo::new("root".into(), Schema::Timed, 1, 0.0)
    }

    fn message(call_id: &str) -> Arc<str> {
        format!(r#"{{"kind":"pending_question_withdrawn","tool":"ask_user_question","callId":"{call_id}","reason":"NO_ANSWERER"}}"#).into()
    }

    #[test]
    fn a_decided_message_is_owed_until_it_arrives_once() {
        let (mut delivery, mut out) = (Delivery::default(), Violations::default());
        let id: CallId = "root/1".into();
        let mut info = call();
        delivery.withdrawn((&id, &info), 5, "NO_ANSWERER", Some(&message("root/1")), &mut out);
        assert!(out.0.is_empty());
        delivery.received((&id, Some(&mut info)), 6, "root", &message("root/1"), &mut out);
        assert!(out.0.is_empty() && delivery.owed.is_empty());
        delivery.received((&id, Some(&mut info)), 7, "root", &message("root/1"), &mut out);
        assert_eq!(out.0.len(), 1);
        assert!(out.0[0].detail.contains("a second time"));
    }

    #[test]
    fn a_message_for_another_agent_pays_nothing() {
        let (mut delivery, mut out) = (Delivery::default(), Violations::default());
        let id: CallId = "root/1".into();
        let mut info = call();
        delivery.decided(
            (&id, &info),
            5,
            &message("root/1"),
            Decided::Withdrawal("NO_ANSWERER"),
            &mut out,
        );
        delivery.received((&id, Some(&mut info)), 6, "other", &message("root/1"), &mut out);
        assert_eq!(out.0.len(), 1, "{:?}", out.0);
        assert!(
            out.0[0]
                .detail
                .contains("that no late answer or withdrawal decided")
        );
        delivery.finish(&mut out);
        assert_eq!(out.0.len(), 2);
        assert!(out.0[1].detail.contains("no user message reached root"));
    }

    #[test]
    fn a_loss_forgives_what_is_owed_to_stopped_agents_only() {
        let (mut delivery, mut out) = (Delivery::default(), Violations::default());
        for (call_id, agent) in [("root/1", "root"), ("kid/1", "kid")] {
            let mut info = call();
            info.agent = agent.into();
            let decided = Decided::Withdrawal("NO_ANSWERER");
            delivery.decided((&call_id.into(), &info), 5, &message(call_id), decided, &mut out);
        }
        let stopped: FxHashSet<Name> = ["kid".into()].into_iter().collect();
        delivery.process_loss(&stopped);
        delivery.finish(&mut out);
        let owed: Vec<Option<&str>> = out.0.iter().map(|v| v.call_id.as_deref()).collect();
        assert_eq!(owed, [Some("root/1")]);
    }
}
