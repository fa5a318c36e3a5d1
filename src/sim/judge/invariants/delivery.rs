//! User messages about pending calls (SPEC §2.4, §3.9): what a late answer or a
//! withdrawal decided for the calling agent, and whether it reached it.
//!
//! - `late_answer_reaches_caller`: a decided message names its call's callId, and
//!   a late answer carries the call's questions exactly as the model sent them.
//! - `pending_end_reaches_caller`: every late answer, and every withdrawal the
//!   agent must be told of (`NO_ANSWERER`), reaches the agent as a user message
//!   exactly once; a withdrawal by `cancel_call` or a stopped agent decides none;
//!   nothing reaches an agent that was not decided for it, nor twice.
//!
//! Each message is owed from its decision until its receipt, in a list per call
//! (one or two long); what is still owed at the end never arrived.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::value::RawValue;

use super::Violations;
use super::calls::CallInfo;
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
            ("cancel_call" | "agent_stopped", Some(_)) => {
                let detail = format!("withdrawn by {reason}, yet a user message was decided for it");
                out.push(PENDING_END_REACHES_CALLER, call_id, seq, detail);
            }
            _ => {}
        }
        if let Some(message) = message {
            self.decided((call_id, info), seq, message, out);
        }
    }

    /// A user message was decided: it is owed to the call's agent, and a late
    /// answer must carry the call's callId and its questions exactly as asked.
    pub fn decided(
        &mut self,
        (call_id, info): (&CallId, &CallInfo),
        seq: u64,
        message: &Arc<str>,
        out: &mut Violations,
    ) {
        #[derive(serde::Deserialize)]
        struct Sent<'a> {
            kind: &'a str,
            #[serde(rename = "callId")]
            call_id: &'a str,
            #[serde(borrow)]
            questions: Option<&'a RawValue>,
        }
        let mismatch = match serde_json::from_str::<Sent>(message) {
            Ok(sent) if sent.kind == "answer_to_pending_question" => {
                sent.call_id != &**call_id
                    || sent.questions.map(RawValue::get) != info.questions.as_ref().map(RawQuestions::text)
            }
            Ok(sent) => sent.call_id != &**call_id,
            Err(_) => true,
        };
        if mismatch {
            let detail = "the message's callId or questions differ from the call's".into();
            out.push(LATE_ANSWER_REACHES_CALLER, call_id, seq, detail);
        }
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
        delivery.decided((&id, &info), 5, &message("root/1"), &mut out);
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
            delivery.decided((&call_id.into(), &info), 5, &message(call_id), &mut out);
        }
        let stopped: FxHashSet<Name> = ["kid".into()].into_iter().collect();
        delivery.process_loss(&stopped);
        delivery.finish(&mut out);
        let owed: Vec<Option<&str>> = out.0.iter().map(|v| v.call_id.as_deref()).collect();
        assert_eq!(owed, [Some("root/1")]);
    }
}
