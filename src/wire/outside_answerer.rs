//! An answerer outside this process, in the waterfall beside asksim's built-in
//! ones: it takes one input at a time (an offer, a withdrawal, a
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
use crate::answerer::Replies;
use crate::effect::Out;
use crate::protocol::{AnswererInput as Input, AnswererIx, AnswererMsg, Reply};

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

    /// Handles one input: the exchange, and the reply's effects. The same seam
    /// as an [`crate::answerer::Answerer`]'s (the broker's message or a timer
    /// in, replies and timers out), over a pipe, where the process can fail.
    pub fn handle(&mut self, input: Input, out: &mut Out) -> Result<(), Box<ProcessFailure>> {
        let fired = matches!(input, Input::Timer(_));
        let input = match input {
            Input::Broker(AnswererMsg::Offer(offer)) => AnswererInput::Offer(Box::new(WireOffer {
                ticket: offer.ticket,
                call_id: offer.call_id,
                agent: offer.agent,
                schema: offer.schema,
                questions: Questions(offer.questions),
            })),
            Input::Broker(AnswererMsg::Withdraw { ticket }) => AnswererInput::Withdraw { ticket },
            Input::Broker(AnswererMsg::Refused { ticket, what, reason }) => AnswererInput::Refused {
                ticket,
                what: what.as_str().to_owned(),
                reason: reason.as_str().to_owned(),
            },
            Input::Timer(id) => {
                self.timers.remove(&id);
                AnswererInput::Timer { id }
            }
        };
        let answered = self.peer.exchange::<_, AnswererEffect>(out.now(), input)?;
        let at_once = (answered.reply.effects.iter())
            .filter(|e| matches!(e, AnswererEffect::StartTimer { after_ns: 0, .. }))
            .count();
        if let Err(reason) = self.peer.chain_zero_timers(fired, at_once) {
            return Err(self.peer.failure(reason, Some(answered.line)));
        }
        self.apply_all(answered.reply.effects, answered.line, out)
    }

    fn apply_all(
        &mut self,
        effects: Vec<AnswererEffect>,
        line: String,
        out: &mut Out,
    ) -> Result<(), Box<ProcessFailure>> {
        let mut replies = Replies::new(out, self.index);
        let mut died = false;
        for effect in effects {
            // PROTOCOL.md 5: `die` ends the reply; a dead answerer sends nothing.
            let applied = match died {
                true => Err(format!(
                    "an effect after `die` ({}): `die` is the last thing an answerer does",
                    serde_json::to_string(&effect).unwrap_or_default()
                )),
                false => {
                    died = matches!(effect, AnswererEffect::Die {});
                    self.apply(effect, &mut replies)
                }
            };
            if let Err(reason) = applied {
                let reason = format!("a line that is not the protocol: {reason}");
                return Err(self.peer.failure(reason, Some(line)));
            }
        }
        Ok(())
    }

    fn apply(&mut self, effect: AnswererEffect, out: &mut Replies) -> Result<(), String> {
        match effect {
            AnswererEffect::Accept { ticket } => out.reply(ticket, Reply::Accept),
            AnswererEffect::Decline { ticket } => out.reply(ticket, Reply::Decline),
            AnswererEffect::Hold { ticket } => out.reply(ticket, Reply::Hold),
            AnswererEffect::Submit { ticket, batch } => out.reply(ticket, Reply::Submit(batch.into())),
            AnswererEffect::StartTimer { id, after_ns, fault } => {
                if !self.timers.insert(id) {
                    return Err(format!("timer {id} started while it runs"));
                }
                let after = std::time::Duration::from_nanos(after_ns);
                match fault {
                    true => out.start_fault_timer(id, after),
                    false => out.start_timer(id, after),
                }
            }
            AnswererEffect::CancelTimer { id } => {
                self.timers.remove(&id);
                out.cancel_timer(id);
            }
            AnswererEffect::Die {} => out.die(),
        }
        Ok(())
    }
}
