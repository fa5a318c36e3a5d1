//! What a window expiry may overtake in the broker's mailbox (its actor's, or
//! its inbox when it is stepped in place, [`super::seat`]: either is one FIFO
//! queue, called the mailbox here).
//!
//! A timer used to be a message queued at its deadline, so FIFO order put it
//! after everything sent before its deadline and before everything sent after.
//! The broker keeps that order ([`super::wheel`]), but lets a timer go ahead of
//! messages it commutes with: requests, registrations, new turns and messages
//! about other calls (and, for a window expiry, its own call's accept). It must
//! not overtake, if they were sent before its deadline, another message about its
//! own call
//! nor one that may touch any call (stop, turn or call cancelled, restore,
//! answerer death, status). This module keeps the send times of those messages
//! while they wait in the mailbox, in mailbox order: a stamp is pushed under the
//! same lock as the send, and the broker pops it when it handles the message.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::protocol::{BrokerMsg, Nanos, Ticket};
use crate::trim::Trim;

/// What a broker message is to a window expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// It commutes with every window expiry.
    Free,
    /// It accepts one call's offer: it sets the call's owner, which a window
    /// expiry (it sets the phase) neither reads nor writes; an offer timeout does.
    Accept(Ticket),
    /// It reads or ends one call's phase (decline, hold, submit).
    Ticket(Ticket),
    /// It may touch any call.
    Global,
}

/// Which [`Kind`] `msg` is.
pub(crate) fn kind(msg: &BrokerMsg) -> Kind {
    match msg {
        BrokerMsg::Accept { ticket, .. } => Kind::Accept(*ticket),
        BrokerMsg::Decline { ticket, .. }
        | BrokerMsg::Hold { ticket, .. }
        | BrokerMsg::Submit { ticket, .. } => Kind::Ticket(*ticket),
        BrokerMsg::Stop(_)
        | BrokerMsg::CancelTurn { .. }
        | BrokerMsg::CancelCall { .. }
        | BrokerMsg::Restore(_)
        | BrokerMsg::AnswererDied { .. }
        | BrokerMsg::Status(_)
        | BrokerMsg::Wake
        | BrokerMsg::OutsideTimer { .. } => Kind::Global,
        BrokerMsg::Register(_)
        | BrokerMsg::Request(_)
        | BrokerMsg::NewTurn { .. }
        | BrokerMsg::OfferTimeout { .. }
        | BrokerMsg::WindowExpired { .. } => Kind::Free,
    }
}

/// Send times of the stamped messages still in the broker's mailbox.
#[derive(Debug, Default)]
pub(crate) struct Stamps {
    global: VecDeque<Nanos>,
    /// Per call: send time, and whether it is an accept.
    tickets: FxHashMap<Ticket, VecDeque<(Nanos, bool)>>,
    /// Send times of the wheel's wake-ups, in mailbox order.
    wakes: VecDeque<Nanos>,
}

impl Stamps {
    /// A message of `kind` sent at `now` enters the mailbox.
    pub(crate) fn push(&mut self, kind: Kind, now: Nanos) {
        match kind {
            Kind::Free => {}
            Kind::Global => self.global.push_back(now),
            Kind::Ticket(t) => self.tickets.entry(t).or_default().push_back((now, false)),
            Kind::Accept(t) => self.tickets.entry(t).or_default().push_back((now, true)),
        }
    }

    /// The oldest message of `kind` left the mailbox (handled, or never sent).
    pub(crate) fn pop(&mut self, kind: Kind) {
        match kind {
            Kind::Free => {}
            Kind::Global => {
                self.global.pop_front();
            }
            Kind::Ticket(t) | Kind::Accept(t) => {
                if let Some(queue) = self.tickets.get_mut(&t) {
                    queue.pop_front();
                    if queue.is_empty() {
                        self.tickets.remove(&t);
                        self.tickets.trim();
                    }
                }
            }
        }
    }

    /// Whether a timer of `ticket` due at `deadline` may be handled now: nothing
    /// it must follow is still in the mailbox. A window expiry (`window`) may
    /// overtake an accept; an offer timeout may not.
    pub(crate) fn may_overtake(&self, ticket: Ticket, deadline: Nanos, window: bool) -> bool {
        let global_older = self.global.front().is_some_and(|&t| t < deadline);
        let call_older = self.tickets.get(&ticket).is_some_and(|queue| {
            queue
                .iter()
                .take_while(|(t, _)| *t < deadline)
                .any(|(_, accept)| !(window && *accept))
        });
        !global_older && !call_older
    }

    /// A wake-up sent at `now` enters the mailbox.
    pub(crate) fn push_wake(&mut self, now: Nanos) {
        self.wakes.push_back(now);
    }

    /// A wake-up never entered the mailbox.
    pub(crate) fn pop_wake_back(&mut self) {
        self.wakes.pop_back();
    }

    /// The send time of the wake-up being handled.
    pub(crate) fn pop_wake(&mut self) -> Option<Nanos> {
        self.wakes.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stamps of a burst of calls, all handled, leave no table at the burst's size.
    #[test]
    fn a_burst_of_stamps_gives_its_table_back() {
        let mut stamps = Stamps::default();
        let burst = 4 * crate::trim::TRIM_MIN as u64;
        for ticket in 0..burst {
            stamps.push(Kind::Ticket(ticket), ticket);
        }
        let full = stamps.tickets.capacity();
        for ticket in 0..burst {
            assert!(
                !stamps.may_overtake(ticket, ticket + 1, true),
                "its own stamp is older"
            );
            stamps.pop(Kind::Ticket(ticket));
        }
        assert!(stamps.tickets.is_empty());
        assert!(
            stamps.tickets.capacity() < full / 4,
            "{} of {full}",
            stamps.tickets.capacity()
        );
    }
}
