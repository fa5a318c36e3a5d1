//! An answerer outside this process, in the waterfall beside asksim's built-in
//! ones: it takes one [`AnswererMsg`] at a time (an offer, a withdrawal, a
//! refusal, its own timer) and writes what it replied (accept, decline, hold,
//! submit to the broker; timers; dying) into an [`Out`]. Its replies reach the
//! broker through the delivery queue like any answerer's, so the broker judges
//! them (an accept of a ticket nobody offered is the broker's to refuse); this
//! adapter only checks that the lines are the protocol.

use std::collections::HashSet;

use super::answerer_msg::{AnswererEffect, AnswererInput, AnswererSetup, WireOffer};
use super::common::{Life, PROTOCOL_VERSION, Questions, Role};
use super::failure::ProcessFailure;
use super::peer::Peer;
use crate::effect::Out;
use crate::protocol::{AnswererIx, AnswererMsg, BrokerMsg, Envelope};

/// The outside answerer of one life of a run.
#[derive(Debug)]
pub struct OutsideAnswerer {
    peer: Peer,
    index: AnswererIx,
    timers: HashSet<u64>,
}

impl OutsideAnswerer {
    /// Says `hello` to the process behind `peer` (the answerer at `setup.index`),
    /// checks its version, and carries out what it does on starting.
    pub fn start(
        mut peer: Peer,
        setup: AnswererSetup,
        life: &Life,
        out: &mut Out,
    ) -> Result<OutsideAnswerer, Box<ProcessFailure>> {
        let index = setup.index;
        let msg = AnswererInput::Hello(life.hello(Role::Answerer, setup));
        let answered = peer.exchange::<_, AnswererEffect>(out.now(), msg)?;
        match answered.reply.protocol {
            Some(PROTOCOL_VERSION) => {}
            other => {
                let reason = match other {
                    Some(v) => format!("it speaks protocol {v}; asksim speaks {PROTOCOL_VERSION}"),
                    None => "the reply to hello names no protocol version".into(),
                };
                return Err(peer.failure(reason, Some(answered.line)));
            }
        }
        let mut answerer = OutsideAnswerer {
            peer,
            index,
            timers: HashSet::new(),
        };
        answerer.apply_all(answered.reply.effects, answered.line, out)?;
        Ok(answerer)
    }

    /// Handles one message: the exchange, and the reply's effects.
    pub fn handle(&mut self, msg: AnswererMsg, out: &mut Out) -> Result<(), Box<ProcessFailure>> {
        let input = match msg {
            AnswererMsg::Offer(offer) => AnswererInput::Offer(Box::new(WireOffer {
                ticket: offer.ticket,
                call_id: offer.call_id,
                agent: offer.agent,
                schema: offer.schema,
                questions: Questions(offer.questions),
            })),
            AnswererMsg::Withdraw { ticket } => AnswererInput::Withdraw { ticket },
            AnswererMsg::Refused { ticket, what, reason } => AnswererInput::Refused {
                ticket,
                what: what.as_str().to_owned(),
                reason: reason.as_str().to_owned(),
            },
            AnswererMsg::OutsideTimer { id } => {
                self.timers.remove(&id);
                AnswererInput::Timer { id }
            }
            // The built-in answerer's own timers: an outside one never starts them.
            AnswererMsg::Decide(_)
            | AnswererMsg::HoldNow(_)
            | AnswererMsg::SubmitNow(_)
            | AnswererMsg::Crash => {
                return Ok(());
            }
        };
        let answered = self.peer.exchange::<_, AnswererEffect>(out.now(), input)?;
        self.apply_all(answered.reply.effects, answered.line, out)
    }

    fn apply_all(
        &mut self,
        effects: Vec<AnswererEffect>,
        line: String,
        out: &mut Out,
    ) -> Result<(), Box<ProcessFailure>> {
        for effect in effects {
            if let Err(reason) = self.apply(effect, out) {
                let reason = format!("a line that is not the protocol: {reason}");
                return Err(self.peer.failure(reason, Some(line)));
            }
        }
        Ok(())
    }

    fn apply(&mut self, effect: AnswererEffect, out: &mut Out) -> Result<(), String> {
        let answerer = self.index;
        match effect {
            AnswererEffect::Accept { ticket } => out.tell_broker(BrokerMsg::Accept { ticket, answerer }),
            AnswererEffect::Decline { ticket } => out.tell_broker(BrokerMsg::Decline { ticket, answerer }),
            AnswererEffect::Hold { ticket } => out.tell_broker(BrokerMsg::Hold { ticket, answerer }),
            AnswererEffect::Submit { ticket, batch } => out.tell_broker(BrokerMsg::Submit {
                ticket,
                answerer,
                batch,
            }),
            AnswererEffect::StartTimer { id, after_ns, fault } => {
                if !self.timers.insert(id) {
                    return Err(format!("timer {id} started while it runs"));
                }
                let fired = Envelope::Answerer(answerer, AnswererMsg::OutsideTimer { id });
                match fault {
                    true => out.fault_timer(id, after_ns, fired),
                    false => out.timer(id, after_ns, fired),
                }
            }
            AnswererEffect::CancelTimer { id } => {
                self.timers.remove(&id);
                out.cancel(id);
            }
            AnswererEffect::Die {} => out.die(),
        }
        Ok(())
    }
}
