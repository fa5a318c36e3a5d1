//! A broker outside this process, behind the same interface as asksim's own
//! ([`crate::broker::BrokerState`]): it takes one [`BrokerMsg`] at a time and
//! writes what the broker did into an [`Out`]. In between, the message goes over
//! the wire (PROTOCOL.md) and the reply's effects come back as sends and timers.
//!
//! The outside broker writes no events: this adapter writes them from what
//! crosses the boundary, exactly where asksim's broker writes its own, so every
//! invariant and protocol rule judges the outside broker as it judges asksim's
//! (and `asksim actor broker` gives the same log byte for byte). Events that
//! follow from an input alone come from [`View::input`]; every decision comes
//! from the broker's reply: its messages (`settled`, `offer`, `refused`, …) and
//! its verdicts (`accepted`, `declined`, `held`), which deliver nothing.
//!
//! It never decides anything itself and never panics on what the process
//! writes: a line that is not the protocol, names a call, an agent, an
//! answerer or a ticket that does not exist, or breaks a rule of PROTOCOL.md
//! 3.3 (an effect nobody asked for, or one the line owed left out:
//! [`super::outside`]), fails the run.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::broker_msg::{
    BrokerEffect, BrokerInput, BrokerSetup, FromAnswerer, WireLimits, WireRequest, WireRestore,
};
use super::broker_view::{CallView, View};
use super::common::{Life, PROTOCOL_VERSION, Questions, Role, parse_turn_id, turn_chain};
use super::failure::ProcessFailure;
use super::outside::answering::{Answering, Verdict};
use super::outside::messages;
use super::peer::Peer;
use crate::broker::BrokerConfig;
use crate::effect::Out;
use crate::event::EventKind;
use crate::protocol::{
    AgentId, AgentMsg, AnswererIx, AnswererMsg, BrokerMsg, DeclineReason, Envelope, Nanos, Offer, Refusal,
    Sent, SpawnError, Ticket, WithdrawReason, nanos,
};
use crate::tool::{ErrorCode, ResultKind, ToolResult, Wait};

/// The outside broker of one life of a run.
#[derive(Debug)]
pub struct OutsideBroker {
    peer: Peer,
    view: View,
    agents_per_tree_max: usize,
    /// The line the reply at hand answers: what it allows and owes.
    answering: Answering,
}

impl OutsideBroker {
    /// Says `hello` to the process behind `peer` and checks its version.
    pub fn start(
        mut peer: Peer,
        config: &BrokerConfig,
        life: &Life,
        now: Nanos,
    ) -> Result<OutsideBroker, Box<ProcessFailure>> {
        let setup = BrokerSetup {
            answerers: config.answerers.clone(),
            offer_timeout_ns: nanos(config.offer_timeout_s),
            limits: WireLimits {
                open_calls_max: config.limits.open_calls_max as u64,
                agents_per_tree_max: config.limits.agents_per_tree_max as u64,
            },
        };
        let msg = BrokerInput::Hello(life.hello(Role::Broker, setup));
        let answered = peer.exchange::<_, BrokerEffect>(now, msg)?;
        let version = answered.reply.protocol;
        if version != Some(PROTOCOL_VERSION) || !answered.reply.effects.is_empty() {
            let reason = match version {
                Some(v) if v != PROTOCOL_VERSION => {
                    format!("it speaks protocol {v}; asksim speaks {PROTOCOL_VERSION}")
                }
                None => "the reply to hello names no protocol version".into(),
                Some(_) => "the reply to hello does something (its `do` must be empty)".into(),
            };
            return Err(peer.failure(reason, Some(answered.line)));
        }
        Ok(OutsideBroker {
            peer,
            view: View::new(config.answerers.clone()),
            agents_per_tree_max: config.limits.agents_per_tree_max,
            answering: Answering::none(),
        })
    }

    /// Whether any call is open, as far as the boundary shows.
    pub fn has_open_calls(&self) -> bool {
        self.view.has_open_calls()
    }

    /// The broker's own account of its open calls (`status`).
    pub fn status(&mut self, now: Nanos) -> Result<BTreeMap<String, &'static str>, Box<ProcessFailure>> {
        let answered = self
            .peer
            .exchange::<_, BrokerEffect>(now, BrokerInput::Status {})?;
        let mut open = BTreeMap::new();
        let Some(listed) = answered.reply.open.filter(|_| answered.reply.effects.is_empty()) else {
            let reason = "the reply to status must carry `open` and an empty `do`".to_owned();
            return Err(self.peer.failure(reason, Some(answered.line)));
        };
        for (call_id, state) in listed {
            let state = match state.as_str() {
                "waiting" => "waiting",
                "pending" => "pending",
                other => {
                    let reason = format!("status: {other:?} is neither \"waiting\" nor \"pending\"");
                    return Err(self.peer.failure(reason, Some(answered.line)));
                }
            };
            open.insert(call_id, state);
        }
        Ok(open)
    }

    /// Handles one message: its own events, the exchange, and the reply's effects.
    pub fn handle(&mut self, msg: BrokerMsg, out: &mut Out) -> Result<(), Box<ProcessFailure>> {
        self.answering = Answering::to(&msg, &self.view);
        self.view.input(&msg, out);
        let fired = matches!(msg, BrokerMsg::OutsideTimer { .. });
        let Some(input) = self.wire_input(msg) else {
            return Ok(());
        };
        let answered = self.peer.exchange::<_, BrokerEffect>(out.now(), input)?;
        let at_once = (answered.reply.effects.iter())
            .filter(|e| matches!(e, BrokerEffect::StartTimer { after_ns: 0, .. }))
            .count();
        let mut applied = self.peer.chain_zero_timers(fired, at_once);
        for effect in answered.reply.effects {
            if applied.is_err() {
                break;
            }
            applied = self.apply(effect, out);
        }
        let answering = std::mem::replace(&mut self.answering, Answering::none());
        let applied = applied.and_then(|()| answering.owed(&self.view));
        applied.map_err(|reason| {
            let reason = format!("a line that is not the protocol: {reason}");
            self.peer.failure(reason, Some(answered.line))
        })
    }

    /// The message as the wire writes it; `None` for what an outside broker
    /// never hears (asksim's own broker's timers and wake-ups, library queries).
    fn wire_input(&self, msg: BrokerMsg) -> Option<BrokerInput> {
        let name = |index: AnswererIx| self.view.answerer_name(index);
        let from = |ticket, answerer| FromAnswerer {
            ticket,
            answerer: name(answerer),
        };
        Some(match msg {
            BrokerMsg::Register(reg) => BrokerInput::Register {
                agent: reg.agent,
                name: reg.name,
                owner: reg.owner,
                lineage: reg.lineage,
                turn: turn_chain(&reg.turn),
            },
            BrokerMsg::Stop(agent) => BrokerInput::Stop { agent },
            BrokerMsg::Request(request) => BrokerInput::Request(Box::new(WireRequest {
                agent: request.agent,
                call_id: request.call_id,
                schema: request.ask.schema,
                questions: Questions(request.ask.questions.clone()),
                questions_text: request.ask.questions_raw.get().to_owned(),
                timeout: request.ask.timeout_arg,
                window_ns: match request.ask.wait {
                    Wait::Window(s) => Some(nanos(s)),
                    Wait::Blocking => None,
                },
                turn: turn_chain(&request.turn),
            })),
            BrokerMsg::Accept { ticket, answerer } => BrokerInput::Accept(from(ticket, answerer)),
            BrokerMsg::Decline { ticket, answerer } => BrokerInput::Decline(from(ticket, answerer)),
            BrokerMsg::Hold { ticket, answerer } => BrokerInput::Hold(from(ticket, answerer)),
            BrokerMsg::Submit {
                ticket,
                answerer,
                batch,
            } => BrokerInput::Submit {
                ticket,
                answerer: name(answerer),
                batch: Arc::unwrap_or_clone(batch),
            },
            BrokerMsg::OutsideTimer { id } => BrokerInput::Timer { id },
            BrokerMsg::CancelTurn { agent, turn } => BrokerInput::CancelTurn {
                agent,
                turn: turn_chain(&turn),
            },
            BrokerMsg::NewTurn { agent, turn } => BrokerInput::NewTurn {
                agent,
                turn: turn_chain(&turn),
            },
            BrokerMsg::CancelCall { call_id } => BrokerInput::CancelCall { call_id },
            BrokerMsg::Restore(restored) => BrokerInput::Restore(Box::new(WireRestore {
                agent: (restored.agent != 0).then_some(restored.agent),
                agent_name: restored.agent_name,
                call_id: restored.call_id,
                questions: restored.ask.as_ref().map(|a| Questions(a.questions.clone())),
                questions_text: restored.ask.as_ref().map(|a| a.questions_raw.get().to_owned()),
            })),
            BrokerMsg::AnswererDied { answerer } => BrokerInput::AnswererDied {
                answerer: name(answerer),
            },
            BrokerMsg::OfferTimeout { .. }
            | BrokerMsg::WindowExpired { .. }
            | BrokerMsg::Wake
            | BrokerMsg::Status(_) => return None,
        })
    }

    /// Carries out one effect of the reply: checks what it names, writes its
    /// event (if it makes one) and its send or timer.
    fn apply(&mut self, effect: BrokerEffect, out: &mut Out) -> Result<(), String> {
        match effect {
            BrokerEffect::Registered { agent, error } => self.registered(agent, error.as_deref(), out),
            BrokerEffect::Spawned { owner, child, error } => {
                self.known_agent(owner)?;
                let result = spawn_result(error.as_deref(), &child, self.agents_per_tree_max)?;
                self.answering.spawned(owner, &child, error.as_deref())?;
                out.tell_agent(owner, AgentMsg::Spawned { child, result });
                Ok(())
            }
            BrokerEffect::TurnFired { agent, turn } => {
                self.known_agent(agent)?;
                let id = parse_turn_id(&turn).ok_or_else(|| format!("{turn:?} is not a turn id"))?;
                self.answering.turn_fired(agent, id, &self.view)?;
                out.tell_agent(agent, AgentMsg::TurnFired(id));
                Ok(())
            }
            BrokerEffect::Settled {
                agent,
                call_id,
                result,
            } => self.settled(agent, call_id, result, out),
            BrokerEffect::LateAnswer {
                agent,
                call_id,
                answers,
                message,
            } => self.late_answer(agent, call_id, answers, message, out),
            BrokerEffect::Withdrawn {
                agent,
                call_id,
                reason,
                message,
            } => self.withdrawn(agent, call_id, &reason, message, out),
            effect => self.about_answerer(effect, out),
        }
    }

    fn known_agent(&self, agent: AgentId) -> Result<(), String> {
        match self.view.agents.contains_key(&agent) {
            true => Ok(()),
            false => Err(format!("no agent {agent} was registered")),
        }
    }

    /// The call `call_id`, whose message `what` goes to `agent`: it must be
    /// the agent that asked it.
    fn caller_told(&self, what: &str, agent: AgentId, call_id: &str) -> Result<&CallView, String> {
        let call = self.view.call(call_id)?;
        match call.agent == agent {
            true => Ok(call),
            false => Err(format!(
                "`{what}` of {call_id} to agent {agent}; agent {} asked it",
                call.agent
            )),
        }
    }

    fn registered(&mut self, agent: AgentId, error: Option<&str>, out: &mut Out) -> Result<(), String> {
        // PROTOCOL.md 3.3: exactly one, in the reply to that agent's register.
        self.answering.registered(agent, error)?;
        let (name, owner, lineage) = match self.view.agents.get(&agent) {
            Some(view) => (view.name.clone(), view.owner, view.lineage.clone()),
            None => return Err(format!("no agent {agent} was registered")),
        };
        let result = spawn_result(error, &name, self.agents_per_tree_max)?;
        let owner_name = owner.and_then(|o| self.view.in_tree(o));
        out.record(match &result {
            Ok(()) => EventKind::Spawn {
                agent: name,
                owner: owner_name,
                lineage,
            },
            Err(e) => EventKind::SpawnRefused {
                agent: name,
                owner: owner_name,
                reason: e.as_str().to_owned(),
            },
        });
        self.view.registered(agent, result.is_ok());
        out.tell_agent(agent, AgentMsg::Registered(result));
        Ok(())
    }

    fn settled(
        &mut self,
        agent: AgentId,
        call_id: crate::protocol::CallId,
        result: Value,
        out: &mut Out,
    ) -> Result<(), String> {
        self.known_agent(agent)?;
        self.caller_told("settled", agent, &call_id)?;
        let result = tool_result(&result)?;
        if result.kind != ResultKind::Pending {
            self.view.close(&call_id);
        }
        out.record(EventKind::result(&call_id, &self.view.tree_name(agent), &result));
        out.tell_agent(agent, AgentMsg::Settled { call_id, result });
        Ok(())
    }

    fn late_answer(
        &mut self,
        agent: AgentId,
        call_id: crate::protocol::CallId,
        answers: Vec<crate::tool::AnswerItem>,
        message: String,
        out: &mut Out,
    ) -> Result<(), String> {
        self.known_agent(agent)?;
        let call = self.caller_told("late_answer", agent, &call_id)?;
        messages::late_answer(&call_id, call.questions_text.as_deref(), &answers, &message)?;
        self.view.close(&call_id);
        let message: Arc<str> = message.into();
        out.record(EventKind::LateAnswer {
            call_id: call_id.clone(),
            agent: self.view.tree_name(agent),
            answers,
            message: message.clone(),
        });
        let closed = AgentMsg::Closed {
            call_id,
            message: Some(message),
        };
        out.tell_agent(agent, closed);
        Ok(())
    }

    fn withdrawn(
        &mut self,
        agent: Option<AgentId>,
        call_id: crate::protocol::CallId,
        reason: &str,
        message: Option<String>,
        out: &mut Out,
    ) -> Result<(), String> {
        let reason = withdraw_reason(reason)?;
        let call = self.view.call(&call_id)?;
        self.answering.withdrawn(reason, &call_id, call.agent)?;
        let call_agent = call.agent_name.clone();
        let agent_name = match (agent, reason) {
            (Some(_), WithdrawReason::NotRestorable) => {
                return Err(format!(
                    "{call_id} withdrawn as `not_restorable` names an agent (nobody is told)"
                ));
            }
            (Some(agent), _) => {
                self.known_agent(agent)?;
                self.caller_told("withdrawn", agent, &call_id)?;
                self.view.tree_name(agent)
            }
            (None, WithdrawReason::NotRestorable) => call_agent,
            (None, _) => {
                return Err(format!(
                    "{call_id} withdrawn for `{}` tells nobody (`agent` null is for `not_restorable` only)",
                    reason.as_str()
                ));
            }
        };
        // PROTOCOL.md 3.3: a `NO_ANSWERER` withdrawal tells the agent, with
        // the withdrawal message; no other one tells anybody anything.
        match (reason, &message) {
            (WithdrawReason::NoAnswerer, Some(message)) => messages::withdrawal(&call_id, message)?,
            (WithdrawReason::NoAnswerer, None) => {
                return Err(format!(
                    "{call_id} withdrawn for `NO_ANSWERER` without the withdrawal message (its agent must be told)"
                ));
            }
            (_, Some(_)) => {
                return Err(format!(
                    "{call_id} withdrawn for `{}` with a message (only a `NO_ANSWERER` withdrawal has one)",
                    reason.as_str()
                ));
            }
            (_, None) => {}
        }
        self.view.close(&call_id);
        let message: Option<Arc<str>> = message.map(Arc::from);
        out.record(EventKind::withdraw(
            &call_id,
            &agent_name,
            reason,
            message.clone(),
        ));
        if let Some(agent) = agent {
            out.tell_agent(agent, AgentMsg::Closed { call_id, message });
        }
        Ok(())
    }

    /// Effects about answerers: offers, withdrawals, refusals, the verdicts; and
    /// timers.
    fn about_answerer(&mut self, effect: BrokerEffect, out: &mut Out) -> Result<(), String> {
        match effect {
            BrokerEffect::Offer {
                answerer,
                ticket,
                call_id,
            } => self.offer(&answerer, ticket, call_id, out),
            BrokerEffect::Withdraw { answerer, ticket } => {
                let index = self.view.answerer(&answerer)?;
                out.tell_answerer(index, AnswererMsg::Withdraw { ticket });
                Ok(())
            }
            BrokerEffect::Refused {
                answerer,
                ticket,
                what,
                reason,
            } => self.refused(&answerer, ticket, &what, reason, out),
            BrokerEffect::Accepted { .. } | BrokerEffect::Declined { .. } | BrokerEffect::Held { .. } => {
                self.verdict_effect(effect, out)
            }
            BrokerEffect::StartTimer { id, after_ns } => {
                if !self.view.timers.insert(id) {
                    return Err(format!("timer {id} started while it runs"));
                }
                let fired = Envelope::Broker(BrokerMsg::OutsideTimer { id });
                // A timer left running once no call is open (a stale offer
                // timer) can change nothing a run judges: it keeps no finished
                // run going (PROTOCOL.md §1), like a fault.
                out.fault_timer(id, after_ns, fired);
                Ok(())
            }
            BrokerEffect::CancelTimer { id } => {
                self.view.timers.remove(&id);
                out.cancel(id);
                Ok(())
            }
            _ => unreachable!("apply hands on only effects about answerers and timers"),
        }
    }

    /// A verdict on what an answerer sent: its event, nothing delivered.
    fn verdict_effect(&mut self, effect: BrokerEffect, out: &mut Out) -> Result<(), String> {
        match effect {
            BrokerEffect::Accepted { answerer, ticket } => {
                let (index, call_id) = self.verdict(&answerer, ticket)?;
                self.answering
                    .verdict(Verdict::Accepted, ticket, index, &answerer)?;
                let answerer = self.view.answerer_name(index);
                let mbox = out.mbox();
                out.record(EventKind::Accept {
                    call_id,
                    answerer,
                    mbox,
                });
                Ok(())
            }
            BrokerEffect::Declined {
                answerer,
                ticket,
                reason,
            } => {
                let (index, call_id) = self.verdict(&answerer, ticket)?;
                let (reason, mbox) = match reason.as_str() {
                    "declined" => (DeclineReason::Declined, out.mbox()),
                    "offer_timeout" => (DeclineReason::OfferTimeout, None),
                    "dead" => (DeclineReason::Dead, None),
                    other => return Err(format!("{other:?} is not a reason to decline")),
                };
                self.answering
                    .verdict(Verdict::Declined(reason), ticket, index, &answerer)?;
                let name = self.view.answerer_name(index);
                out.record(EventKind::decline(&call_id, &name, reason, mbox));
                Ok(())
            }
            BrokerEffect::Held { answerer, ticket } => {
                let (index, call_id) = self.verdict(&answerer, ticket)?;
                self.answering.verdict(Verdict::Held, ticket, index, &answerer)?;
                let answerer = self.view.answerer_name(index);
                let mbox = out.mbox();
                out.record(EventKind::Hold {
                    call_id,
                    answerer,
                    mbox,
                });
                Ok(())
            }
            _ => unreachable!("verdict_effect takes verdicts only"),
        }
    }

    /// The answerer and the call a verdict names: both must exist.
    fn verdict(
        &self,
        answerer: &str,
        ticket: Ticket,
    ) -> Result<(AnswererIx, crate::protocol::CallId), String> {
        let index = self.view.answerer(answerer)?;
        match self.view.tickets.get(&ticket) {
            Some(call_id) => Ok((index, call_id.clone())),
            None => Err(format!("no offer named ticket {ticket}")),
        }
    }

    fn offer(
        &mut self,
        answerer: &str,
        ticket: Ticket,
        call_id: crate::protocol::CallId,
        out: &mut Out,
    ) -> Result<(), String> {
        let index = self.view.answerer(answerer)?;
        let call = self.view.call(&call_id)?;
        let offer = Offer {
            ticket,
            answerer: index,
            call_id: (call.schema == crate::tool::Schema::Timed).then(|| call_id.clone()),
            agent: call.agent_name.clone(),
            schema: call.schema,
            questions: call.questions.clone(),
            broker: None,
        };
        match self.view.tickets.get(&ticket) {
            Some(named) if *named != call_id => {
                return Err(format!("ticket {ticket} names {named} already, not {call_id}"));
            }
            Some(_) => {}
            None => {
                self.view.tickets.insert(ticket, call_id.clone());
            }
        }
        let answerer = self.view.answerer_name(index);
        out.record(EventKind::Offer { call_id, answerer });
        out.tell_answerer(index, AnswererMsg::Offer(Box::new(offer)));
        Ok(())
    }

    fn refused(
        &mut self,
        answerer: &str,
        ticket: Ticket,
        what: &str,
        reason: String,
        out: &mut Out,
    ) -> Result<(), String> {
        let index = self.view.answerer(answerer)?;
        let what = match what {
            "accept" => Sent::Accept,
            "hold" => Sent::Hold,
            "submit" => Sent::Submit,
            other => {
                return Err(format!(
                    "{other:?} is not something an answerer sends (accept, hold, submit)"
                ));
            }
        };
        self.answering
            .verdict(Verdict::Refused(what), ticket, index, answerer)?;
        let reason = refusal(reason);
        let call_id = self.view.call_of(ticket);
        out.record(EventKind::refused(
            &call_id,
            &self.view.answerer_name(index),
            what,
            &reason,
        ));
        // A refused accept reaches the answerer as the end of its offer.
        let msg = match what {
            Sent::Accept => AnswererMsg::Withdraw { ticket },
            _ => AnswererMsg::Refused { ticket, what, reason },
        };
        out.tell_answerer(index, msg);
        Ok(())
    }
}

/// A registration's outcome from the `error` of `registered` or `spawned`.
fn spawn_result(
    error: Option<&str>,
    name: &str,
    agents_max: usize,
) -> Result<Result<(), SpawnError>, String> {
    Ok(Err(match error {
        None => return Ok(Ok(())),
        Some("duplicate_name") => SpawnError::DuplicateName(name.to_owned()),
        Some("bad_name") => SpawnError::BadName(name.to_owned()),
        Some("owner_not_live") => SpawnError::OwnerNotLive,
        Some("LIMIT_EXCEEDED") => SpawnError::LimitExceeded(agents_max),
        Some(other) => return Err(format!("{other:?} is not a registration error")),
    }))
}

/// A tool result from its JSON: `{"answers":…}`, `{"pending":true,…}` or
/// `{"error":{"code":…,…}}`; its text is the compact serialisation.
fn tool_result(value: &Value) -> Result<ToolResult, String> {
    let kind = match value {
        Value::Object(map) if map.contains_key("error") => {
            let code = value.pointer("/error/code").and_then(Value::as_str).unwrap_or("");
            match ErrorCode::parse(code) {
                Some(code) => ResultKind::Error(code),
                None => return Err(format!("{code:?} is not an error code")),
            }
        }
        Value::Object(map) if map.get("pending") == Some(&Value::Bool(true)) => ResultKind::Pending,
        Value::Object(map) if map.contains_key("answers") => ResultKind::Answers,
        _ => {
            return Err(
                "a tool result is {\"answers\":…}, {\"pending\":true,…} or {\"error\":{\"code\":…}}".into(),
            );
        }
    };
    Ok(ToolResult {
        text: value.to_string(),
        kind,
    })
}

fn withdraw_reason(reason: &str) -> Result<WithdrawReason, String> {
    Ok(match reason {
        "NO_ANSWERER" => WithdrawReason::NoAnswerer,
        "cancel_call" => WithdrawReason::CancelCall,
        "agent_stopped" => WithdrawReason::AgentStopped,
        "not_restorable" => WithdrawReason::NotRestorable,
        other => return Err(format!("{other:?} is not a reason to withdraw")),
    })
}

/// A refusal's reason: one of the named ones, else a batch's defect.
pub(crate) fn refusal(reason: String) -> Refusal {
    match reason.as_str() {
        "settled" => Refusal::Settled,
        "withdrawn" => Refusal::Withdrawn,
        "unknown" => Refusal::Unknown,
        "not_owner" => Refusal::NotOwner,
        "owner_dead" => Refusal::OwnerDead,
        "offer_timeout" => Refusal::OfferTimedOut,
        "not_in_window" => Refusal::NotInWindow,
        _ => Refusal::Batch(reason),
    }
}
