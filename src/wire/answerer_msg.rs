//! The answerer role of PROTOCOL.md: what asksim writes to an outside answerer
//! (offers, withdrawals, refusals, its own timers) and what it may reply with
//! (accept, decline, hold, submit; timers; dying). Pure data.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{Hello, Questions};
use crate::protocol::{CallId, Name, Ticket};
use crate::tool::Schema;

/// What an answerer is configured with (the `config` of its `hello`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswererSetup {
    /// Its name in the scenario.
    pub name: Name,
    /// Its place in the waterfall, from 0.
    pub index: crate::protocol::AnswererIx,
    /// A seed for its own random draws: the same in every life of one run.
    pub seed: u64,
}

/// A request offered to the answerer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireOffer {
    /// The broker's handle on the request; every reply names it.
    pub ticket: Ticket,
    /// The callId for keyed (timed) calls, null for legacy ones.
    #[serde(rename = "callId")]
    pub call_id: Option<CallId>,
    /// The calling agent's name.
    pub agent: Name,
    /// The definition the call came through.
    pub schema: Schema,
    /// The questions.
    pub questions: Questions,
}

/// Every message asksim writes to an answerer (`msg` names it).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum AnswererInput {
    /// The first line of a life.
    Hello(Hello<AnswererSetup>),
    /// A request is offered: accept or decline it (or say nothing, and the
    /// broker's offer timeout counts it as a decline).
    Offer(Box<WireOffer>),
    /// Stop working on the ticket: it settled, was cancelled, or the offer ended.
    Withdraw {
        /// The ticket.
        ticket: Ticket,
    },
    /// Something the answerer sent was refused.
    Refused {
        /// The ticket it named.
        ticket: Ticket,
        /// `hold` or `submit`.
        what: String,
        /// Why.
        reason: String,
    },
    /// A timer the answerer started fired.
    Timer {
        /// The id it chose.
        id: u64,
    },
}

/// Every effect an answerer may reply with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswererEffect {
    /// Accept the ticket's request: it owns it.
    Accept {
        /// The ticket.
        ticket: Ticket,
    },
    /// Decline it: the broker offers the next answerer.
    Decline {
        /// The ticket.
        ticket: Ticket,
    },
    /// Hold the caller's window open (owner only, while the call waits).
    Hold {
        /// The ticket.
        ticket: Ticket,
    },
    /// Submit the one batch that answers it.
    Submit {
        /// The ticket.
        ticket: Ticket,
        /// One item per question: `{"id", "selected"?, "custom"?}`.
        batch: Value,
    },
    /// Wake the answerer with `timer` after this long.
    StartTimer {
        /// Its id, unique among its running timers.
        id: u64,
        /// The delay.
        after_ns: u64,
        /// A scheduled fault: it keeps no run going (SPEC §5 "faults are not work").
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        fault: bool,
    },
    /// Cancel a running timer.
    CancelTimer {
        /// Its id.
        id: u64,
    },
    /// The answerer dies (a scheduled fault): asksim stops the process and the
    /// broker hears of the death behind everything it sent before.
    Die {},
}
