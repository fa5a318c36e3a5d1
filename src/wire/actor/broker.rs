//! asksim's own broker behind the wire (`asksim actor broker`): each line in
//! becomes a [`BrokerMsg`] for [`BrokerState::handle`], and what it wrote into
//! its [`Out`] becomes the reply's effects. The proof that PROTOCOL.md says
//! enough: asksim judging its own broker through the wire gets the same log,
//! byte for byte, as it does in process (`tests/outside.rs`).
//!
//! The broker's events are not sent (an outside broker writes none); its
//! decisions that deliver nothing become verdicts (`accepted`, `declined`,
//! `held`), its refusals and closings carry their reasons, and its timers go out
//! as ids while their messages wait here until the timer fires.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::broker::{BrokerConfig, BrokerLimits, BrokerState};
use crate::effect::{Effect, Out};
use crate::event::EventKind;
use crate::protocol::{
    AgentMsg, AnswererInput, AnswererIx, AnswererMsg, BrokerMsg, CallId, Envelope, Name, Registration,
    Request, Restored, Ticket, seconds,
};
use crate::tool::{Ask, Schema, ToolResult, Wait};
use crate::wire::broker_msg::{BrokerEffect, BrokerInput, FromAnswerer, WireRequest, WireRestore};
use crate::wire::common::{Line, PROTOCOL_VERSION, Reply, parse_turn};

/// The broker and what the wire needs beside it.
#[derive(Debug)]
pub struct ActorBroker {
    state: Option<BrokerState>,
    answerers: Vec<Name>,
    /// Running timers: what each delivers when it fires.
    timers: HashMap<u64, BrokerMsg>,
    /// The ticket of each call offered, for verdicts (events name calls).
    tickets: HashMap<CallId, Ticket>,
    out: Out,
    order: super::lines::LineOrder,
}

impl Default for ActorBroker {
    fn default() -> Self {
        ActorBroker::new()
    }
}

impl ActorBroker {
    /// A broker waiting for its `hello`.
    pub fn new() -> ActorBroker {
        ActorBroker {
            state: None,
            answerers: Vec::new(),
            timers: HashMap::new(),
            tickets: HashMap::new(),
            out: Out::new(0),
            order: super::lines::LineOrder::default(),
        }
    }

    /// One line in, its reply out; `Err` says why the line is not one asksim
    /// writes.
    pub fn handle_line(&mut self, line: &str) -> Result<String, String> {
        let Line { stamp, msg } = serde_json::from_str::<Line<BrokerInput>>(line)
            .map_err(|e| format!("not a broker message: {e}"))?;
        let hello = match &msg {
            BrokerInput::Hello(hello) => Some(hello.protocol),
            _ => None,
        };
        self.order.take(stamp.t_ns, hello)?;
        let reply = match msg {
            BrokerInput::Hello(hello) => {
                let config = BrokerConfig {
                    answerers: hello.config.answerers.clone(),
                    offer_timeout_s: seconds(hello.config.offer_timeout_ns),
                    limits: BrokerLimits {
                        open_calls_max: usize::try_from(hello.config.limits.open_calls_max)
                            .unwrap_or(usize::MAX),
                        agents_per_tree_max: usize::try_from(hello.config.limits.agents_per_tree_max)
                            .unwrap_or(usize::MAX),
                    },
                };
                self.state = Some(BrokerState::new(config).map_err(|e| e.to_string())?);
                self.answerers = hello.config.answerers;
                self.timers.clear();
                self.tickets.clear();
                Reply {
                    protocol: Some(PROTOCOL_VERSION),
                    ..Reply::effects(Vec::new())
                }
            }
            BrokerInput::Status {} => {
                let state = self.state.as_ref().ok_or("status before hello")?;
                let open = state
                    .status()
                    .open
                    .into_iter()
                    .map(|(id, s)| (id, s.to_owned()))
                    .collect();
                Reply {
                    open: Some(open),
                    ..Reply::effects(Vec::new())
                }
            }
            msg => {
                let msg = self.broker_msg(msg)?;
                let state = self.state.as_mut().ok_or("a message before hello")?;
                self.out.reset(stamp.t_ns, None);
                state.handle(msg, &mut self.out);
                Reply::effects(self.translate())
            }
        };
        Ok(serde_json::to_string(&reply).expect("replies serialise"))
    }

    fn answerer(&self, name: &str) -> Result<AnswererIx, String> {
        self.answerers
            .iter()
            .position(|a| a == name)
            .map(|i| i as AnswererIx)
            .ok_or_else(|| format!("no answerer {name:?} in the waterfall"))
    }

    fn from(&self, from: FromAnswerer) -> Result<(Ticket, AnswererIx), String> {
        Ok((from.ticket, self.answerer(&from.answerer)?))
    }

    /// The message a line names, as the broker takes it.
    fn broker_msg(&mut self, msg: BrokerInput) -> Result<BrokerMsg, String> {
        let turn = |chain: &[String]| parse_turn(chain).ok_or_else(|| format!("{chain:?} is not a turn"));
        Ok(match msg {
            BrokerInput::Register {
                agent,
                name,
                owner,
                lineage,
                turn: chain,
            } => BrokerMsg::Register(Box::new(Registration {
                agent,
                name,
                owner,
                lineage,
                turn: turn(&chain)?,
            })),
            BrokerInput::Stop { agent } => BrokerMsg::Stop(agent),
            BrokerInput::Request(request) => BrokerMsg::Request(Box::new(request_of(*request)?)),
            BrokerInput::Accept(from) => {
                let (ticket, answerer) = self.from(from)?;
                BrokerMsg::Accept { ticket, answerer }
            }
            BrokerInput::Decline(from) => {
                let (ticket, answerer) = self.from(from)?;
                BrokerMsg::Decline { ticket, answerer }
            }
            BrokerInput::Hold(from) => {
                let (ticket, answerer) = self.from(from)?;
                BrokerMsg::Hold { ticket, answerer }
            }
            BrokerInput::Submit {
                ticket,
                answerer,
                batch,
            } => BrokerMsg::Submit {
                ticket,
                answerer: self.answerer(&answerer)?,
                batch: Arc::new(batch),
            },
            BrokerInput::Timer { id } => self.timers.remove(&id).ok_or(format!("no timer {id} runs"))?,
            BrokerInput::CancelTurn { agent, turn: chain } => BrokerMsg::CancelTurn {
                agent,
                turn: turn(&chain)?,
            },
            BrokerInput::NewTurn { agent, turn: chain } => BrokerMsg::NewTurn {
                agent,
                turn: turn(&chain)?,
            },
            BrokerInput::CancelCall { call_id } => BrokerMsg::CancelCall { call_id },
            BrokerInput::Restore(restore) => BrokerMsg::Restore(Box::new(restored_of(*restore)?)),
            BrokerInput::AnswererDied { answerer } => BrokerMsg::AnswererDied {
                answerer: self.answerer(&answerer)?,
            },
            BrokerInput::Hello(_) | BrokerInput::Status {} => unreachable!("handled by handle_line"),
        })
    }

    /// What the broker did, as the wire's effects, in its order.
    fn translate(&mut self) -> Vec<BrokerEffect> {
        let effects: Vec<Effect> = self.out.drain().collect();
        let mut iter = effects.into_iter().peekable();
        let mut wire = Vec::new();
        let mut offered: Option<CallId> = None;
        while let Some(effect) = iter.next() {
            match effect {
                Effect::Record(EventKind::Offer { call_id, .. }) => offered = Some(call_id),
                Effect::Record(event) => {
                    // A refusal or a closing is told by the send right after it.
                    let paired = iter.next_if(|next| pairs(&event, next));
                    wire.extend(self.decision(event, paired));
                }
                Effect::Send(Envelope::Answerer(index, AnswererInput::Broker(AnswererMsg::Offer(offer)))) => {
                    let call_id = offered.take().expect("an offer is recorded before it is sent");
                    self.tickets.insert(call_id.clone(), offer.ticket);
                    wire.push(BrokerEffect::Offer {
                        answerer: self.answerers[index as usize].clone(),
                        ticket: offer.ticket,
                        call_id,
                    });
                }
                Effect::Send(envelope) => wire.extend(self.message(envelope)),
                Effect::Timer { id, after, msg, .. } => {
                    if let Envelope::Broker(msg) = msg {
                        self.timers.insert(id, msg);
                    }
                    wire.push(BrokerEffect::StartTimer { id, after_ns: after });
                }
                Effect::Cancel(id) => {
                    self.timers.remove(&id);
                    wire.push(BrokerEffect::CancelTimer { id });
                }
                Effect::Spawn(_) | Effect::Die | Effect::Finished { .. } => {}
            }
        }
        wire
    }

    /// An event the broker recorded, as the wire tells it: a verdict, a refusal
    /// or a closing (with the send that carried it), or nothing (an event the
    /// other side writes from the input alone, or from the send itself).
    fn decision(&self, event: EventKind, paired: Option<Effect>) -> Option<BrokerEffect> {
        let ticket = |call_id: &CallId| self.tickets.get(call_id).copied().unwrap_or(0);
        Some(match event {
            EventKind::Accept {
                call_id, answerer, ..
            } => BrokerEffect::Accepted {
                ticket: ticket(&call_id),
                answerer,
            },
            EventKind::Hold {
                call_id, answerer, ..
            } => BrokerEffect::Held {
                ticket: ticket(&call_id),
                answerer,
            },
            EventKind::Decline {
                call_id,
                answerer,
                reason,
                ..
            } => BrokerEffect::Declined {
                ticket: ticket(&call_id),
                answerer,
                reason,
            },
            EventKind::Refused {
                answerer,
                what,
                reason,
                ..
            } => BrokerEffect::Refused {
                answerer,
                ticket: refused_ticket(paired)?,
                what,
                reason,
            },
            EventKind::LateAnswer {
                call_id,
                answers,
                message,
                ..
            } => BrokerEffect::LateAnswer {
                agent: closed_agent(paired)?,
                call_id,
                answers,
                message: message.to_string(),
            },
            EventKind::Withdraw {
                call_id,
                reason,
                message,
                ..
            } => BrokerEffect::Withdrawn {
                agent: closed_agent(paired),
                call_id,
                reason,
                message: message.map(|m| m.to_string()),
            },
            _ => return None,
        })
    }

    /// A message the broker sent, as its effect.
    fn message(&self, envelope: Envelope) -> Option<BrokerEffect> {
        let name = |index: AnswererIx| self.answerers[index as usize].clone();
        Some(match envelope {
            Envelope::Agent(agent, AgentMsg::Registered(result)) => BrokerEffect::Registered {
                agent,
                error: result.err().map(|e| e.as_str().to_owned()),
            },
            Envelope::Agent(owner, AgentMsg::Spawned { child, result }) => BrokerEffect::Spawned {
                owner,
                child,
                error: result.err().map(|e| e.as_str().to_owned()),
            },
            Envelope::Agent(agent, AgentMsg::TurnFired(turn)) => BrokerEffect::TurnFired {
                agent,
                turn: crate::wire::common::turn_id_text(turn),
            },
            Envelope::Agent(agent, AgentMsg::Settled { call_id, result }) => BrokerEffect::Settled {
                agent,
                call_id,
                result: serde_json::from_str::<Value>(&result.text).expect("a tool result is JSON"),
            },
            Envelope::Agent(agent, AgentMsg::Pending { call_id }) => BrokerEffect::Settled {
                agent,
                result: serde_json::from_str::<Value>(&ToolResult::pending(&call_id).text)
                    .expect("a tool result is JSON"),
                call_id,
            },
            Envelope::Answerer(index, AnswererInput::Broker(AnswererMsg::Withdraw { ticket })) => {
                BrokerEffect::Withdraw {
                    answerer: name(index),
                    ticket,
                }
            }
            Envelope::Answerer(
                index,
                AnswererInput::Broker(AnswererMsg::Refused { ticket, what, reason }),
            ) => BrokerEffect::Refused {
                answerer: name(index),
                ticket,
                what: what.as_str().to_owned(),
                reason: reason.as_str().to_owned(),
            },
            _ => return None,
        })
    }
}

/// Whether `next` is the send that tells what `event` decided.
fn pairs(event: &EventKind, next: &Effect) -> bool {
    match (event, next) {
        (
            EventKind::Refused { what, .. },
            Effect::Send(Envelope::Answerer(_, AnswererInput::Broker(AnswererMsg::Withdraw { .. }))),
        ) => what == "accept",
        (
            EventKind::Refused { what, .. },
            Effect::Send(Envelope::Answerer(_, AnswererInput::Broker(AnswererMsg::Refused { .. }))),
        ) => what != "accept",
        (
            EventKind::LateAnswer { call_id, .. } | EventKind::Withdraw { call_id, .. },
            Effect::Send(Envelope::Agent(_, AgentMsg::Closed { call_id: closed, .. })),
        ) => call_id == closed,
        _ => false,
    }
}

/// The ticket of the withdrawal or refusal that carried a refusal, if one did.
fn refused_ticket(paired: Option<Effect>) -> Option<Ticket> {
    match paired {
        Some(Effect::Send(Envelope::Answerer(
            _,
            AnswererInput::Broker(AnswererMsg::Withdraw { ticket }),
        )))
        | Some(Effect::Send(Envelope::Answerer(
            _,
            AnswererInput::Broker(AnswererMsg::Refused { ticket, .. }),
        ))) => Some(ticket),
        _ => None,
    }
}

/// The agent a closing was sent to, if it was.
fn closed_agent(paired: Option<Effect>) -> Option<u64> {
    match paired {
        Some(Effect::Send(Envelope::Agent(agent, AgentMsg::Closed { .. }))) => Some(agent),
        _ => None,
    }
}

/// The questions text a line carries, which must be JSON (the broker's
/// `request` event embeds it).
fn questions_text(text: String) -> Result<std::sync::Arc<RawValue>, String> {
    let raw = RawValue::from_string(text).map_err(|e| format!("questions_text is not JSON: {e}"))?;
    Ok(raw.into())
}

fn request_of(request: WireRequest) -> Result<Request, String> {
    let turn = parse_turn(&request.turn).ok_or_else(|| format!("{:?} is not a turn", request.turn))?;
    Ok(Request {
        agent: request.agent,
        call_id: request.call_id,
        ask: Ask {
            schema: request.schema,
            questions: request.questions.0,
            questions_raw: questions_text(request.questions_text)?,
            timeout_arg: request.timeout,
            wait: request
                .window_ns
                .map_or(Wait::Blocking, |ns| Wait::Window(seconds(ns))),
        },
        turn,
    })
}

fn restored_of(restore: WireRestore) -> Result<Restored, String> {
    let ask = match (restore.questions, restore.questions_text) {
        (Some(questions), Some(text)) => Some(Ask {
            schema: Schema::Timed,
            questions: questions.0,
            questions_raw: questions_text(text)?,
            timeout_arg: None,
            wait: Wait::Blocking,
        }),
        _ => None,
    };
    Ok(Restored {
        agent: restore.agent.unwrap_or(0),
        agent_name: restore.agent_name,
        call_id: restore.call_id,
        ask,
    })
}
