//! The waterfall (SPEC §3.2): offers in order, one at a time; the first accept
//! owns the request; a decline, an offer timeout or a death moves on; an owner's
//! death fails the request over to the rest of the waterfall.

use super::calls::{Call, End};
use super::{BrokerState, Phase};
use crate::effect::Out;
use crate::event::EventKind;
use crate::protocol::{
    AnswererIx, AnswererMsg, BrokerMsg, DeclineReason, Envelope, Offer, Refusal, Sent, Ticket,
};

impl BrokerState {
    /// Offers the request to the next live answerer, or closes it as `NO_ANSWERER`
    /// when the waterfall ran out.
    pub(super) fn offer_next(&mut self, ticket: Ticket, out: &mut Out) {
        let timer = self.timer_id();
        let offer_timeout = self.offer_timeout;
        let call = self.calls.offer(ticket, None);
        while (call.next as usize) < self.answerers.len() {
            let index = call.next;
            call.next += 1;
            let slot = &self.answerers[index as usize];
            if !slot.alive {
                continue;
            }
            let call = self.calls.offer(ticket, Some(index));
            call.attempt += 1;
            call.offer_timer.set(timer);
            let offer = Offer {
                ticket,
                answerer: index,
                call_id: call.ask.keyed().then(|| call.call_id.clone()),
                agent: call.agent_name.clone(),
                schema: call.ask.schema,
                questions: call.ask.questions.clone(),
                broker: None,
            };
            out.record(EventKind::Offer {
                call_id: call.call_id.clone(),
                answerer: slot.name.clone(),
            });
            let attempt = call.attempt;
            let msg = BrokerMsg::OfferTimeout { ticket, attempt };
            out.timer(timer, offer_timeout, Envelope::Broker(msg));
            out.tell_answerer(index, AnswererMsg::Offer(Box::new(offer)));
            return;
        }
        self.end_call(ticket, End::NoAnswerer, out);
    }

    pub(super) fn accept(&mut self, ticket: Ticket, answerer: AnswererIx, out: &mut Out) {
        let offered = self.calls.get(ticket).map(Call::offered);
        if offered != Some(Some(answerer)) {
            // Closed before the accept arrived, or a late accept after the offer
            // timed out (the waterfall moved on): nothing to own. It is logged, so a
            // run shows which side of the race won, and the answerer stops.
            let reason = match offered {
                Some(_) => Refusal::OfferTimedOut,
                None => self.closed_reason(ticket),
            };
            self.record_refusal(ticket, answerer, Sent::Accept, &reason, out);
            out.tell_answerer(answerer, AnswererMsg::Withdraw { ticket });
            return;
        }
        let call = self.calls.own(ticket, answerer);
        if let Some(timer) = call.offer_timer.take() {
            out.cancel(timer);
        }
        out.record(EventKind::Accept {
            call_id: call.call_id.clone(),
            answerer: self.answerers[answerer as usize].name.clone(),
            mbox: out.mbox(),
        });
    }

    pub(super) fn decline(&mut self, ticket: Ticket, answerer: AnswererIx, out: &mut Out) {
        let Some(call) = self
            .calls
            .get_mut(ticket)
            .filter(|c| c.offered() == Some(answerer))
        else {
            return;
        };
        if let Some(timer) = call.offer_timer.take() {
            out.cancel(timer);
        }
        let name = &self.answerers[answerer as usize].name;
        out.record(EventKind::decline(
            &call.call_id,
            name,
            DeclineReason::Declined,
            out.mbox(),
        ));
        self.offer_next(ticket, out);
    }

    pub(super) fn offer_timeout(&mut self, ticket: Ticket, attempt: u32, out: &mut Out) {
        let Some(call) = self.calls.get_mut(ticket) else {
            return;
        };
        let Some(answerer) = call.offered().filter(|_| call.attempt == attempt) else {
            return;
        };
        call.offer_timer.clear();
        let name = &self.answerers[answerer as usize].name;
        out.record(EventKind::decline(
            &call.call_id,
            name,
            DeclineReason::OfferTimeout,
            None,
        ));
        out.tell_answerer(answerer, AnswererMsg::Withdraw { ticket });
        self.offer_next(ticket, out);
    }

    /// An answerer died: it owns and is offered nothing any more. Its calls fail
    /// over to the rest of the waterfall; a hold it had dies with it (SPEC §3.5).
    pub(super) fn answerer_died(&mut self, index: AnswererIx, out: &mut Out) {
        let Some(slot) = self.answerers.get_mut(index as usize).filter(|s| s.alive) else {
            return;
        };
        slot.alive = false;
        let name = slot.name.clone();
        out.record(EventKind::Crash {
            answerer: name.clone(),
            mbox: out.mbox(),
        });
        for ticket in self.calls.involving(index) {
            let owned = self.calls.get(ticket).and_then(Call::owner) == Some(index);
            let call = self.calls.disown(ticket);
            let held = call.held && owned;
            call.held = false;
            if let Some(timer) = call.offer_timer.take() {
                out.cancel(timer);
            }
            out.record(EventKind::decline(
                &call.call_id,
                &name,
                DeclineReason::Dead,
                None,
            ));
            if held && call.phase == Phase::Waiting {
                self.release_hold(ticket, out);
            }
            if self.calls.get(ticket).is_some() {
                self.offer_next(ticket, out);
            }
        }
    }
}
