//! What a queued timer delivers when it fires, in 16 bytes: nearly every timer of
//! a run is a window, an offer timeout, an answerer's own timer or a `work` step,
//! and each of those messages is told by its owner and timer id (the queue's key
//! for the timer) and at most a ticket and an attempt. Any other message is kept
//! whole, behind a pointer. A whole [`Envelope`] is 64 bytes, so a timer held one
//! boxed: an allocation per timer, and at a tie's peak (every open call has its
//! window and its answerer's latency running) ~100 bytes a call in boxes.

use crate::effect::TimerId;
use crate::protocol::{Addr, AgentMsg, AnswererInput, BrokerMsg, Envelope};

/// A timer's message, told apart from its owner and id.
#[derive(Debug)]
pub(super) enum Fired {
    /// `BrokerMsg::WindowExpired`, to the broker.
    Window { ticket: u64, attempt: u32 },
    /// `BrokerMsg::OfferTimeout`, to the broker.
    Offer { ticket: u64, attempt: u32 },
    /// `AnswererInput::Timer` with the timer's own id, to its answerer.
    Answerer,
    /// `AgentMsg::WorkDone`, to its agent.
    Work { step: u64 },
    /// Anything else, whole.
    Other(Box<Envelope>),
}

impl Fired {
    /// The message timer `id` of `owner` delivers.
    pub(super) fn pack(owner: Addr, id: TimerId, envelope: Envelope) -> Fired {
        match (owner, envelope) {
            (Addr::Broker, Envelope::Broker(BrokerMsg::WindowExpired { ticket, attempt })) => {
                Fired::Window { ticket, attempt }
            }
            (Addr::Broker, Envelope::Broker(BrokerMsg::OfferTimeout { ticket, attempt })) => {
                Fired::Offer { ticket, attempt }
            }
            (Addr::Answerer(mine), Envelope::Answerer(to, AnswererInput::Timer(timer)))
                if mine == to && timer == id =>
            {
                Fired::Answerer
            }
            (Addr::Agent(mine), Envelope::Agent(to, AgentMsg::WorkDone { step }))
                if mine == to && u64::try_from(step).is_ok() =>
            {
                Fired::Work { step: step as u64 }
            }
            (_, envelope) => Fired::Other(Box::new(envelope)),
        }
    }

    /// The message again, as [`Fired::pack`] was given it.
    pub(super) fn unpack(self, owner: Addr, id: TimerId) -> Envelope {
        match (self, owner) {
            (Fired::Window { ticket, attempt }, _) => {
                Envelope::Broker(BrokerMsg::WindowExpired { ticket, attempt })
            }
            (Fired::Offer { ticket, attempt }, _) => {
                Envelope::Broker(BrokerMsg::OfferTimeout { ticket, attempt })
            }
            (Fired::Answerer, Addr::Answerer(index)) => Envelope::Answerer(index, AnswererInput::Timer(id)),
            (Fired::Work { step }, Addr::Agent(agent)) => {
                Envelope::Agent(agent, AgentMsg::WorkDone { step: step as usize })
            }
            (Fired::Other(envelope), _) => *envelope,
            (fired, owner) => unreachable!("{fired:?} was packed for another owner than {owner:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(owner: Addr, id: TimerId, envelope: Envelope) -> (bool, String) {
        let text = format!("{envelope:?}");
        let fired = Fired::pack(owner, id, envelope);
        let boxed = matches!(fired, Fired::Other(_));
        let back = fired.unpack(owner, id);
        assert_eq!(format!("{back:?}"), text, "the same message back");
        (boxed, text)
    }

    #[test]
    fn every_timer_gives_back_the_message_it_was_given() {
        let window = Envelope::Broker(BrokerMsg::WindowExpired {
            ticket: 7,
            attempt: 2,
        });
        let offer = Envelope::Broker(BrokerMsg::OfferTimeout {
            ticket: u64::MAX,
            attempt: u32::MAX,
        });
        let cases = [
            (Addr::Broker, 1, window, false),
            (Addr::Broker, 2, offer, false),
            (
                Addr::Answerer(4),
                9,
                Envelope::Answerer(4, AnswererInput::Timer(9)),
                false,
            ),
            (
                Addr::Agent(5),
                3,
                Envelope::Agent(5, AgentMsg::WorkDone { step: 11 }),
                false,
            ),
            // What the compact forms cannot say is kept whole.
            (
                Addr::Driver,
                1,
                Envelope::Broker(BrokerMsg::OfferTimeout {
                    ticket: 1,
                    attempt: 1,
                }),
                true,
            ),
            (
                Addr::Answerer(4),
                9,
                Envelope::Answerer(4, AnswererInput::Timer(8)),
                true,
            ),
            (
                Addr::Answerer(4),
                9,
                Envelope::Answerer(5, AnswererInput::Timer(9)),
                true,
            ),
            (
                Addr::Agent(5),
                3,
                Envelope::Agent(6, AgentMsg::WorkDone { step: 11 }),
                true,
            ),
            (Addr::Driver, 1, Envelope::Broker(BrokerMsg::Stop(5)), true),
        ];
        for (owner, id, envelope, boxed) in cases {
            let (was_boxed, text) = round_trip(owner, id, envelope);
            assert_eq!(was_boxed, boxed, "{text} kept whole: {was_boxed}");
        }
        assert_eq!(std::mem::size_of::<Fired>(), 16);
    }
}
