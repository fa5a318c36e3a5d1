//! asksim's built-in answerer behind the wire (`asksim actor answerer --policy
//! JSON`): the [`PolicyAnswerer`] of a policy, taking each line as an
//! [`Input`] and replying with what it wrote into its [`Replies`]. Its timers go
//! out as its own ids (a `crash_at` as a fault timer), as they do in process.

use std::collections::HashSet;
use std::sync::Arc;

use crate::answerer::{Answerer, PolicyAnswerer, Replies};
use crate::effect::{Effect, Out};
use crate::policy::Policy;
use crate::protocol::{AnswererInput as Input, AnswererIx, AnswererMsg, BrokerMsg, Envelope, Offer, Sent};
use crate::wire::answerer_msg::{AnswererEffect, AnswererInput};
use crate::wire::common::{Line, PROTOCOL_VERSION, Reply};

/// The answerer and its running timers.
#[derive(Debug)]
pub struct ActorAnswerer {
    policy: Policy,
    state: Option<(AnswererIx, PolicyAnswerer)>,
    timers: HashSet<u64>,
    out: Out,
    order: super::lines::LineOrder,
}

impl ActorAnswerer {
    /// An answerer acting on `policy`, waiting for its `hello`.
    pub fn new(policy: Policy) -> ActorAnswerer {
        ActorAnswerer {
            policy,
            state: None,
            timers: HashSet::new(),
            out: Out::new(0),
            order: super::lines::LineOrder::default(),
        }
    }

    /// One line in, its reply out; `Err` says why the line is not one asksim
    /// writes.
    pub fn handle_line(&mut self, line: &str) -> Result<String, String> {
        let Line { stamp, msg } = serde_json::from_str::<Line<AnswererInput>>(line)
            .map_err(|e| format!("not an answerer message: {e}"))?;
        let hello = match &msg {
            AnswererInput::Hello(hello) => Some(hello.protocol),
            _ => None,
        };
        self.order.take(stamp.t_ns, hello)?;
        self.out.reset(stamp.t_ns, None);
        let mut reply = Reply::effects(Vec::new());
        let msg = match msg {
            AnswererInput::Hello(hello) => {
                let setup = hello.config;
                let mut state = PolicyAnswerer::new(setup.index, setup.name, self.policy.clone(), setup.seed);
                state.start(&mut Replies::new(&mut self.out, setup.index));
                self.state = Some((setup.index, state));
                self.timers.clear();
                reply.protocol = Some(PROTOCOL_VERSION);
                None
            }
            AnswererInput::Offer(offer) => Some(Input::Broker(AnswererMsg::Offer(Box::new(Offer {
                ticket: offer.ticket,
                answerer: self.index()?,
                call_id: offer.call_id,
                agent: offer.agent,
                schema: offer.schema,
                questions: offer.questions.0,
                broker: None,
            })))),
            AnswererInput::Withdraw { ticket } => Some(Input::Broker(AnswererMsg::Withdraw { ticket })),
            AnswererInput::Refused { ticket, what, reason } => Some(Input::Broker(AnswererMsg::Refused {
                ticket,
                what: match what.as_str() {
                    "hold" => Sent::Hold,
                    "accept" => Sent::Accept,
                    _ => Sent::Submit,
                },
                reason: crate::wire::outside_broker::refusal(reason),
            })),
            AnswererInput::Timer { id } => match self.timers.remove(&id) {
                true => Some(Input::Timer(id)),
                false => return Err(format!("no timer {id} runs")),
            },
        };
        if let Some(msg) = msg {
            let (index, state) = self.state.as_mut().ok_or("a message before hello")?;
            state.handle(msg, &mut Replies::new(&mut self.out, *index));
        }
        reply.effects = self.translate();
        Ok(serde_json::to_string(&reply).expect("replies serialise"))
    }

    fn index(&self) -> Result<AnswererIx, String> {
        self.state
            .as_ref()
            .map(|(i, _)| *i)
            .ok_or_else(|| "an offer before hello".into())
    }

    /// What the answerer did, as the wire's effects, in its order.
    fn translate(&mut self) -> Vec<AnswererEffect> {
        let effects: Vec<Effect> = self.out.drain().collect();
        let mut wire = Vec::new();
        for effect in effects {
            wire.push(match effect {
                Effect::Send(Envelope::Broker(msg)) => match msg {
                    BrokerMsg::Accept { ticket, .. } => AnswererEffect::Accept { ticket },
                    BrokerMsg::Decline { ticket, .. } => AnswererEffect::Decline { ticket },
                    BrokerMsg::Hold { ticket, .. } => AnswererEffect::Hold { ticket },
                    BrokerMsg::Submit { ticket, batch, .. } => AnswererEffect::Submit {
                        ticket,
                        batch: Arc::unwrap_or_clone(batch),
                    },
                    _ => continue,
                },
                Effect::Timer { id, after, fault, .. } => {
                    self.timers.insert(id);
                    AnswererEffect::StartTimer {
                        id,
                        after_ns: after,
                        fault,
                    }
                }
                Effect::Cancel(id) => {
                    self.timers.remove(&id);
                    AnswererEffect::CancelTimer { id }
                }
                Effect::Die => AnswererEffect::Die {},
                _ => continue,
            });
        }
        wire
    }
}
