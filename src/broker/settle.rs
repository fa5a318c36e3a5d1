//! Settling calls: foreground windows and holds (SPEC §3.4, §3.5), answer batches
//! (§3.6), and closing a call exactly once (§3.7) with its tool result, its late
//! answer or its withdrawal.

use std::sync::Arc;

use serde_json::Value;

use super::BrokerState;
use super::calls::{Closed, End, Phase};
use crate::effect::Out;
use crate::event::EventKind;
use crate::protocol::{
    AgentMsg, AnswererIx, AnswererMsg, BrokerMsg, Envelope, Nanos, Refusal, Sent, Ticket, WithdrawReason,
};
use crate::tool::result::{TURN_FIRED_MESSAGE, late_answer_text, withdrawal_message};
use crate::tool::{ErrorCode, Schema, ToolResult, legacy, timed, validate_batch};

impl BrokerState {
    /// Starts (or restarts) a call's window: `WindowExpired` after `after`.
    pub(super) fn start_window(&mut self, ticket: Ticket, after: Nanos, out: &mut Out) {
        let timer = self.timer_id();
        let call = self.calls.get_mut(ticket).expect("a window for an open call");
        call.window_attempt += 1;
        call.window.set(timer);
        let msg = BrokerMsg::WindowExpired {
            ticket,
            attempt: call.window_attempt,
        };
        out.timer(timer, after, Envelope::Broker(msg));
    }

    pub(super) fn window_expired(&mut self, ticket: Ticket, attempt: u32, out: &mut Out) {
        let Some(call) = self.calls.get_mut(ticket) else {
            return;
        };
        if call.held || call.phase != Phase::Waiting || call.window_attempt != attempt {
            return;
        }
        call.window.clear();
        self.go_pending(ticket, out);
    }

    /// The call returns `pending` to its caller and stays open.
    fn go_pending(&mut self, ticket: Ticket, out: &mut Out) {
        let call = self.calls.get_mut(ticket).expect("an open call goes pending");
        assert_eq!(call.phase, Phase::Waiting, "only a waiting call goes pending");
        assert!(!call.held, "a held call never returns pending");
        call.phase = Phase::Pending;
        let result = ToolResult::pending(&call.call_id);
        out.record(EventKind::result_owned(&call.call_id, &call.agent_name, result));
        let pending = AgentMsg::Pending {
            call_id: call.call_id.clone(),
        };
        out.tell_agent(call.agent, pending);
    }

    /// The holder died: the call returns to its window. If the window has passed,
    /// it goes pending at once; otherwise the rest of the window runs.
    pub(super) fn release_hold(&mut self, ticket: Ticket, out: &mut Out) {
        let now = out.now();
        let call = self.calls.get_mut(ticket).expect("a released call is open");
        call.held = false;
        let Some(end) = call.window_end else {
            return; // a blocking call: nothing counts but the answer
        };
        if end <= now {
            self.go_pending(ticket, out);
        } else {
            self.start_window(ticket, end - now, out);
        }
    }

    pub(super) fn hold(&mut self, ticket: Ticket, answerer: AnswererIx, out: &mut Out) {
        let refusal = match self.calls.get_mut(ticket) {
            _ if !self.answerers.get(answerer as usize).is_some_and(|s| s.alive) => Some(Refusal::OwnerDead),
            None => Some(self.closed_reason(ticket)),
            Some(call) if call.owner() != Some(answerer) => Some(Refusal::NotOwner),
            Some(call) if call.phase == Phase::Pending => Some(Refusal::Settled),
            Some(call) => {
                call.held = true;
                if let Some(timer) = call.window.take() {
                    out.cancel(timer);
                }
                out.record(EventKind::Hold {
                    call_id: call.call_id.clone(),
                    answerer: self.answerers[answerer as usize].name.clone(),
                    mbox: out.mbox(),
                });
                None
            }
        };
        if let Some(reason) = refusal {
            self.refuse(ticket, answerer, Sent::Hold, reason, out);
        }
    }

    pub(super) fn submit(&mut self, ticket: Ticket, answerer: AnswererIx, batch: Arc<Value>, out: &mut Out) {
        out.record(EventKind::Answer {
            call_id: self.call_id_or_unknown(ticket),
            answerer: self.answerer_or_unknown(answerer),
            batch: batch.clone(),
            mbox: out.mbox(),
        });
        // Anything from a dead answerer is refused as such, whatever became of the
        // call since its death (SPEC §3.2).
        let checked = match self.calls.get(ticket) {
            _ if !self.answerers.get(answerer as usize).is_some_and(|s| s.alive) => Err(Refusal::OwnerDead),
            None => Err(self.closed_reason(ticket)),
            Some(call) if call.owner() != Some(answerer) => Err(Refusal::NotOwner),
            Some(call) => validate_batch(&call.ask.questions, &batch).map_err(|r| Refusal::Batch(r.0)),
        };
        match checked {
            Err(reason) => self.refuse(ticket, answerer, Sent::Submit, reason, out),
            Ok(items) => self.end_call(ticket, End::Answers(items), out),
        }
    }

    /// Closes a call exactly once: settles a waiting one with its tool result, or
    /// closes a pending one with its late answer or its withdrawal.
    pub(super) fn end_call(&mut self, ticket: Ticket, end: End, out: &mut Out) {
        let answered = matches!(end, End::Answers(_));
        let phase = self.calls.get(ticket).expect("end_call on an open ticket").phase;
        let how = match (phase, &end) {
            (Phase::Pending, End::Answers(_)) => Closed::LateAnswered,
            (Phase::Pending, _) => Closed::Withdrawn,
            (Phase::Waiting, End::Answers(_)) => Closed::Answered,
            (Phase::Waiting, End::NoAnswerer) => Closed::Errored,
            (Phase::Waiting, End::TurnFired | End::Abort(..)) => Closed::Aborted,
        };
        let call = self.calls.close(ticket, how).expect("the ticket is open");
        call.timers().for_each(|timer| out.cancel(timer));
        // Whoever still works on it stops; an owner that just answered needs no word.
        if let Some(working) = call.owner().or(call.offered())
            && !answered
        {
            out.tell_answerer(working, AnswererMsg::Withdraw { ticket });
        }
        match phase {
            Phase::Waiting => settle_waiting(call, end, out),
            Phase::Pending => close_pending(call, end, out),
        }
    }

    fn refuse(&mut self, ticket: Ticket, answerer: AnswererIx, what: Sent, reason: Refusal, out: &mut Out) {
        self.record_refusal(ticket, answerer, what, &reason, out);
        if (answerer as usize) < self.answerers.len() {
            out.tell_answerer(answerer, AnswererMsg::Refused { ticket, what, reason });
        }
    }

    /// Records what was refused to whom, and why.
    pub(super) fn record_refusal(
        &self,
        ticket: Ticket,
        answerer: AnswererIx,
        what: Sent,
        reason: &Refusal,
        out: &mut Out,
    ) {
        let call_id = self.call_id_or_unknown(ticket);
        let name = self.answerer_or_unknown(answerer);
        out.record(EventKind::refused(&call_id, &name, what, reason));
    }

    pub(super) fn closed_reason(&self, ticket: Ticket) -> Refusal {
        match self.calls.closed(ticket) {
            Some(Closed::Withdrawn) => Refusal::Withdrawn,
            Some(_) => Refusal::Settled,
            None => Refusal::Unknown,
        }
    }

    fn call_id_or_unknown(&self, ticket: Ticket) -> crate::protocol::CallId {
        self.calls
            .call_id_of(ticket)
            .cloned()
            .unwrap_or_else(|| format!("?ticket-{ticket}").into())
    }

    fn answerer_or_unknown(&self, answerer: AnswererIx) -> crate::protocol::Name {
        self.answerer_name(answerer)
            .cloned()
            .unwrap_or_else(|| format!("?answerer-{answerer}").into())
    }
}

/// A waiting call returns its tool result to its caller.
fn settle_waiting(call: super::calls::Call, end: End, out: &mut Out) {
    let result = match end {
        End::Answers(items) => ToolResult::answers(match call.ask.schema {
            Schema::Legacy => legacy::render_answers(&call.ask.questions, &items),
            Schema::Timed => timed::render_answers(&items),
        }),
        End::NoAnswerer => ToolResult::error(ErrorCode::NoAnswerer, "no answerer accepted the request"),
        End::TurnFired => ToolResult::error(ErrorCode::Aborted, TURN_FIRED_MESSAGE),
        End::Abort(message, _) => ToolResult::error(ErrorCode::Aborted, message),
    };
    out.record(EventKind::result(&call.call_id, &call.agent_name, &result));
    let settled = AgentMsg::Settled {
        call_id: call.call_id,
        result,
    };
    out.tell_agent(call.agent, settled);
}

/// A pending call closes for good: its late answer, or its withdrawal (with the
/// message its agent must read, when the waterfall ran out).
fn close_pending(call: super::calls::Call, end: End, out: &mut Out) {
    let message: Option<Arc<str>> = match end {
        End::Answers(items) => {
            let message: Arc<str> = late_answer_text(&call.call_id, &call.ask.questions_raw, &items).into();
            out.record(EventKind::LateAnswer {
                call_id: call.call_id.clone(),
                agent: call.agent_name.clone(),
                answers: items,
                message: message.clone(),
            });
            Some(message)
        }
        End::NoAnswerer => {
            let message: Arc<str> = withdrawal_message(&call.call_id, ErrorCode::NoAnswerer).into();
            let reason = WithdrawReason::NoAnswerer;
            out.record(EventKind::withdraw(
                &call.call_id,
                &call.agent_name,
                reason,
                Some(message.clone()),
            ));
            Some(message)
        }
        End::Abort(_, reason) => {
            out.record(EventKind::withdraw(&call.call_id, &call.agent_name, reason, None));
            None
        }
        End::TurnFired => unreachable!("a pending call belongs to no turn"),
    };
    let closed = AgentMsg::Closed {
        call_id: call.call_id,
        message,
    };
    out.tell_agent(call.agent, closed);
}
