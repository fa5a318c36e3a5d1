//! The broker's call table: every open call by ticket, the callId index, and how
//! closed tickets closed (for the reason a late message is refused with).

use std::collections::BTreeSet;
use std::num::NonZeroU64;

use rustc_hash::FxHashMap;

use crate::effect::TimerId;
use crate::protocol::{AgentId, AnswererIx, CallId, Name, Nanos, Ticket, Turn, TurnId, WithdrawReason};
use crate::tool::{AnswerItem, Ask};

use super::open_calls::OpenCalls;
use super::turn_index::TurnIndex;
use crate::dense::Dense;

/// Where an open call stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// In its window or blocking: the caller waits for its tool result.
    Waiting,
    /// Returned `pending`: open until answered late or withdrawn.
    Pending,
}

/// How a closed call closed, as the projection names the state it ended in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closed {
    /// Its answers were returned to the tool call.
    Answered,
    /// Its late answer, after `pending`.
    LateAnswered,
    /// It was withdrawn after going pending.
    Withdrawn,
    /// It settled as `ABORTED`.
    Aborted,
    /// It settled with another error.
    Errored,
}

impl Closed {
    /// The state's name, as the projection and `BrokerStatus::closed` print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Closed::Answered => "answered",
            Closed::LateAnswered => "late_answered",
            Closed::Withdrawn => "withdrawn",
            Closed::Aborted => "aborted",
            Closed::Errored => "errored",
        }
    }
}

/// One open call.
#[derive(Debug)]
pub struct Call {
    pub call_id: CallId,
    pub agent: AgentId,
    pub agent_name: Name,
    pub ask: Ask,
    pub phase: Phase,
    /// The caller's turn; `None` for a question restored after a restart, which
    /// belongs to no turn (it is pending). Fixed when the call opens (the table
    /// indexes it).
    pub turn: Option<Turn>,
    /// The next waterfall place to offer.
    pub next: AnswererIx,
    /// The answerer whose reply to an offer is awaited: set only by the
    /// table ([`CallTable::offer`], [`CallTable::own`]), which counts it.
    offered: Option<AnswererIx>,
    /// Offers made so far; an offer timeout names the one it is for.
    pub attempt: u32,
    /// The answerer that accepted it: set only by the table
    /// ([`CallTable::own`], [`CallTable::disown`]), which counts it.
    owner: Option<AnswererIx>,
    /// Held by its owner: the window does not count.
    pub held: bool,
    /// When the window ends, for a call with one.
    pub window_end: Option<Nanos>,
    /// Windows started so far; a window timer names the one it is for.
    pub window_attempt: u32,
    pub window: TimerSlot,
    pub offer_timer: TimerSlot,
}

/// A running timer's id, if any, in 8 bytes where `Option<TimerId>` takes 16
/// (two per open call): the broker numbers its timers from 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimerSlot(Option<NonZeroU64>);

impl TimerSlot {
    /// Holds `id`, a timer the broker numbered (from 1).
    pub fn set(&mut self, id: TimerId) {
        self.0 = Some(NonZeroU64::new(id).expect("the broker numbers its timers from 1"));
    }

    /// The timer held, if any, leaving none.
    pub fn take(&mut self) -> Option<TimerId> {
        self.0.take().map(NonZeroU64::get)
    }

    /// Holds none.
    pub fn clear(&mut self) {
        self.0 = None;
    }

    /// The timer held, if any.
    pub fn get(self) -> Option<TimerId> {
        self.0.map(NonZeroU64::get)
    }
}

impl Call {
    /// A call not yet offered: waiting (with its caller's turn) or pending (a
    /// question restored after a restart, in no turn).
    pub fn new(call_id: CallId, agent: AgentId, agent_name: Name, ask: Ask, turn: Option<Turn>) -> Call {
        Call {
            call_id,
            agent,
            agent_name,
            ask,
            phase: if turn.is_some() {
                Phase::Waiting
            } else {
                Phase::Pending
            },
            turn,
            next: 0,
            offered: None,
            attempt: 0,
            owner: None,
            held: false,
            window_end: None,
            window_attempt: 0,
            window: TimerSlot::default(),
            offer_timer: TimerSlot::default(),
        }
    }

    /// The answerer whose reply to an offer is awaited.
    pub fn offered(&self) -> Option<AnswererIx> {
        self.offered
    }

    /// The answerer that accepted it.
    pub fn owner(&self) -> Option<AnswererIx> {
        self.owner
    }

    /// The timers the call has running.
    pub fn timers(&self) -> impl Iterator<Item = TimerId> {
        self.window.get().into_iter().chain(self.offer_timer.get())
    }
}

/// Every open call, and what became of closed ones.
#[derive(Debug, Default)]
pub struct CallTable {
    /// By ticket, boxed: a slot of the window from the oldest open ticket is
    /// 8 bytes, a hole where a call closed too, not a 192-byte call.
    open: OpenCalls<Call>,
    by_call_id: FxHashMap<CallId, Ticket>,
    /// By ticket, in place: tickets are issued from 1 in order, so a closed
    /// call's record is one index away, where a hash table's look-up read a
    /// control group and then a bucket (at 10^5 calls closing in the random
    /// order a strategy picks, a miss for each), and cost ~50 bytes a ticket
    /// with its slack against this one's 24. A ticket still open is a hole.
    /// Never iterated into output in its own order (`BrokerStatus` sorts).
    closed: Dense<Ticket, (CallId, Closed)>,
    /// Calls closed without ever being opened: refused at their request, or
    /// withdrawn at a restart as not restorable.
    unopened: Vec<(CallId, Closed)>,
    next_ticket: Ticket,
    /// Open calls with a turn, by it: what a fired turn ends.
    by_turn: TurnIndex<Ticket>,
    /// Open calls by agent, of those `by_turn` does not find by their agent:
    /// a call's turn is its agent's own (`TurnId::agent`), so only a call with
    /// no turn (restored after a restart) or another's is kept here. What a
    /// stopped agent ends; a second index of every call was ~34 bytes a call.
    by_agent: BTreeSet<(AgentId, Ticket)>,
    /// How many open calls each answerer (by its index) owns or is offered:
    /// whether a fault of an answerer can still change anything (SPEC §5),
    /// told without a look at every open call. Kept by the only ways a call's
    /// `offered` and `owner` change: [`CallTable::offer`], [`CallTable::own`],
    /// [`CallTable::disown`] and [`CallTable::close`].
    involved: Vec<u32>,
}

/// Counts one more open call involving `answerer`, if any.
fn tally(involved: &mut Vec<u32>, answerer: Option<AnswererIx>) {
    if let Some(answerer) = answerer.map(|a| a as usize) {
        if involved.len() <= answerer {
            involved.resize(answerer + 1, 0);
        }
        involved[answerer] += 1;
    }
}

/// Counts one open call fewer involving `answerer`, if any.
fn untally(involved: &mut [u32], answerer: Option<AnswererIx>) {
    if let Some(answerer) = answerer {
        involved[answerer as usize] -= 1;
    }
}

impl CallTable {
    /// Opens a call and returns its ticket.
    pub fn open(&mut self, call: Call) -> Ticket {
        self.next_ticket += 1;
        let ticket = self.next_ticket;
        let previous = self.by_call_id.insert(call.call_id.clone(), ticket);
        assert!(previous.is_none(), "callId {} opened twice", call.call_id);
        if let Some(turn) = &call.turn {
            self.by_turn.insert(turn, ticket);
        }
        if call
            .turn
            .as_ref()
            .is_none_or(|turn| turn.id().agent != call.agent)
        {
            self.by_agent.insert((call.agent, ticket));
        }
        self.open.insert(ticket, Box::new(call));
        ticket
    }

    /// Closes a call, remembering how; the call comes back to be settled.
    pub fn close(&mut self, ticket: Ticket, how: Closed) -> Option<Call> {
        let call = self.open.remove(ticket)?;
        untally(&mut self.involved, call.offered);
        untally(&mut self.involved, call.owner);
        self.by_call_id.remove(&call.call_id);
        if let Some(turn) = &call.turn {
            self.by_turn.remove(turn, ticket);
        }
        self.by_agent.remove(&(call.agent, ticket));
        self.closed.insert(ticket, (call.call_id.clone(), how));
        Some(*call)
    }

    /// A call closed without being opened (refused at its request, or not
    /// restorable after a restart).
    pub fn closed_unopened(&mut self, call_id: CallId, how: Closed) {
        self.unopened.push((call_id, how));
    }

    /// How every call this table closed closed, in no set order.
    pub fn closed_states(&self) -> impl Iterator<Item = (&CallId, Closed)> {
        self.closed
            .iter()
            .map(|(_, closed)| closed)
            .chain(&self.unopened)
            .map(|(call_id, how)| (call_id, *how))
    }

    pub fn get(&self, ticket: Ticket) -> Option<&Call> {
        self.open.get(ticket)
    }

    pub fn get_mut(&mut self, ticket: Ticket) -> Option<&mut Call> {
        self.open.get_mut(ticket)
    }

    /// Marks the open call `ticket` offered to `answerer` (`None`: to nobody).
    pub fn offer(&mut self, ticket: Ticket, answerer: Option<AnswererIx>) -> &mut Call {
        let call = self.open.get_mut(ticket).expect("an offer of an open call");
        untally(&mut self.involved, std::mem::replace(&mut call.offered, answerer));
        tally(&mut self.involved, answerer);
        call
    }

    /// `answerer` accepted its offer of the open call `ticket`: it owns it.
    pub fn own(&mut self, ticket: Ticket, answerer: AnswererIx) -> &mut Call {
        let call = self.open.get_mut(ticket).expect("an accept of an open call");
        assert!(call.owner.is_none(), "an offered call has no owner");
        untally(&mut self.involved, call.offered.take());
        call.owner = Some(answerer);
        tally(&mut self.involved, call.owner);
        call
    }

    /// The open call `ticket` has no owner any more (its owner died).
    pub fn disown(&mut self, ticket: Ticket) -> &mut Call {
        let call = self.open.get_mut(ticket).expect("a disowned call is open");
        untally(&mut self.involved, call.owner.take());
        call
    }

    /// Whether `answerer` owns or is offered an open call: the one thing its
    /// death changes.
    pub fn involves(&self, answerer: AnswererIx) -> bool {
        self.involved.get(answerer as usize).is_some_and(|n| *n > 0)
    }

    /// The open call with this callId.
    pub fn ticket_of(&self, call_id: &str) -> Option<Ticket> {
        self.by_call_id.get(call_id).copied()
    }

    /// How a closed ticket closed, or `None` if it is open or was never issued.
    pub fn closed(&self, ticket: Ticket) -> Option<Closed> {
        self.closed.get(ticket).map(|(_, how)| *how)
    }

    /// The callId of an open or closed ticket.
    pub fn call_id_of(&self, ticket: Ticket) -> Option<&CallId> {
        self.open
            .get(ticket)
            .map(|c| &c.call_id)
            .or_else(|| self.closed.get(ticket).map(|(id, _)| id))
    }

    /// Waiting calls whose turn `turn` fires, in ticket order.
    /// Costs the open calls at or below `turn` (a pending call stays indexed
    /// under its turn until it closes), never every open call.
    pub fn waiting_fired_by(&self, turn: TurnId) -> Vec<Ticket> {
        let mut tickets = self.by_turn.at_or_below(turn);
        tickets.retain(|t| self.open.get(*t).is_some_and(|c| c.phase == Phase::Waiting));
        tickets
    }

    /// Open calls of `agent`, in ticket order. Costs its open calls (and any
    /// other agent's indexed under one of its turns), never every open call.
    pub fn of_agent(&self, agent: AgentId) -> Vec<Ticket> {
        let mut tickets: Vec<Ticket> = (self.by_turn.of_agent(agent))
            .filter(|t| self.open.get(*t).is_some_and(|c| c.agent == agent))
            .chain(
                self.by_agent
                    .range((agent, Ticket::MIN)..=(agent, Ticket::MAX))
                    .map(|(_, t)| *t),
            )
            .collect();
        tickets.sort_unstable();
        tickets.dedup();
        tickets
    }

    /// Open calls `answerer` owns or has been offered, in ticket order.
    pub fn involving(&self, answerer: AnswererIx) -> Vec<Ticket> {
        if !self.involves(answerer) {
            return Vec::new();
        }
        self.open
            .iter()
            .filter(|(_, c)| c.owner == Some(answerer) || c.offered == Some(answerer))
            .map(|(t, _)| t)
            .collect()
    }

    /// Every open call, in ticket order.
    pub fn iter(&self) -> impl Iterator<Item = &Call> {
        self.open.iter().map(|(_, call)| call)
    }

    /// How many calls are open.
    pub fn len(&self) -> usize {
        self.open.len()
    }
}

/// How a call ends.
pub(super) enum End {
    /// A valid batch from its owner.
    Answers(Vec<AnswerItem>),
    /// The waterfall ran out: `NO_ANSWERER`, or a withdrawal the agent is told of.
    NoAnswerer,
    /// Its turn fired; only a waiting call has a turn.
    TurnFired,
    /// Cancelled or its agent stopped: `ABORTED` with the message if waiting,
    /// withdrawn without a message for this reason if pending.
    Abort(&'static str, WithdrawReason),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{Timeout, ToolConfig};

    fn call(call_id: &str) -> Call {
        let ask = ToolConfig::timed(Timeout::Window(5.0))
            .prepare(r#"{"questions":[{"id":"q","question":"Go?","header":"Go","options":[{"label":"Yes"},{"label":"No"}]}]}"#)
            .expect("valid arguments");
        let turn = crate::protocol::Turn::root(crate::protocol::TurnId { agent: 1, n: 1 });
        Call::new(call_id.into(), 1, "root".into(), ask, Some(turn))
    }

    #[test]
    fn a_closed_ticket_remembers_its_call_and_how_it_closed() {
        let mut table = CallTable::default();
        let ticket = table.open(call("root/1"));
        assert_eq!(table.ticket_of("root/1"), Some(ticket));
        assert!(table.close(ticket, Closed::Withdrawn).is_some());
        assert_eq!(table.ticket_of("root/1"), None);
        assert_eq!(table.closed(ticket), Some(Closed::Withdrawn));
        assert_eq!(table.call_id_of(ticket).map(|c| &**c), Some("root/1"));
        assert!(
            table.close(ticket, Closed::Answered).is_none(),
            "a call closes once"
        );
        assert_eq!(table.closed(ticket + 1), None);
    }

    /// Calls closed out of their tickets' order, past a chunk of the table by
    /// ticket, each keep their own record; an open ticket among them has none,
    /// nor does one never issued; a record is 24 bytes in place.
    #[test]
    fn closed_tickets_keep_their_records_in_any_order() {
        let mut table = CallTable::default();
        let count = crate::dense::CHUNK as u64 + 10;
        let tickets: Vec<Ticket> = (1..=count)
            .map(|n| table.open(call(&format!("root/{n}"))))
            .collect();
        let still_open = tickets[5];
        for &ticket in tickets.iter().rev().filter(|&&t| t != still_open) {
            let how = if ticket % 2 == 0 {
                Closed::Answered
            } else {
                Closed::Aborted
            };
            assert!(table.close(ticket, how).is_some());
        }
        for &ticket in &tickets {
            let expected = (ticket != still_open).then_some(if ticket % 2 == 0 {
                Closed::Answered
            } else {
                Closed::Aborted
            });
            assert_eq!(table.closed(ticket), expected, "ticket {ticket}");
            assert_eq!(
                table.call_id_of(ticket).map(|c| c.to_string()),
                Some(format!("root/{ticket}")),
                "open or closed, a ticket names its call"
            );
        }
        assert_eq!(table.closed(count + 1), None);
        assert_eq!(table.closed(Ticket::MAX), None, "a ticket never issued");
        assert_eq!(table.closed_states().count() as u64, count - 1);
        assert_eq!(std::mem::size_of::<Option<(CallId, Closed)>>(), 24);
    }

    /// The table counts who owns or is offered each open call: an offer, a
    /// move down the waterfall, an accept, an owner's death and a close each
    /// keep `involves` equal to a look at every open call.
    #[test]
    fn the_table_knows_who_is_involved_in_its_open_calls() {
        let mut table = CallTable::default();
        let scan = |table: &CallTable, a: AnswererIx| {
            table.iter().any(|c| c.owner == Some(a) || c.offered == Some(a))
        };
        let agree = |table: &CallTable| {
            for a in 0..4 {
                assert_eq!(table.involves(a), scan(table, a), "answerer {a}");
                assert_eq!(table.involving(a).is_empty(), !scan(table, a), "answerer {a}");
            }
        };
        let first = table.open(call("root/1"));
        let second = table.open(call("root/2"));
        agree(&table);
        table.offer(first, Some(0));
        table.offer(second, Some(0));
        agree(&table);
        table.offer(first, Some(1));
        assert!(table.involves(0) && table.involves(1));
        table.own(second, 0);
        agree(&table);
        table.disown(second);
        assert!(!table.involves(0), "its owner died");
        table.offer(second, Some(2));
        agree(&table);
        table.own(second, 2);
        agree(&table);
        table.close(first, Closed::Withdrawn);
        table.close(second, Closed::Answered);
        agree(&table);
        assert!(
            !(0..4).any(|a| table.involves(a)),
            "no open call, nobody involved"
        );
    }

    /// A call of `agent` under the turn `(turn_agent, 1)`, or none.
    fn call_of(call_id: &str, agent: AgentId, turn_agent: Option<AgentId>) -> Call {
        let mut call = call(call_id);
        call.agent = agent;
        call.turn =
            turn_agent.map(|a| crate::protocol::Turn::root(crate::protocol::TurnId { agent: a, n: 1 }));
        call
    }

    #[test]
    fn an_agents_open_calls_are_found_by_its_turns_and_the_rest_by_agent() {
        let mut table = CallTable::default();
        let own = table.open(call_of("a/1", 1, Some(1)));
        let restored = table.open(call_of("a/2", 1, None));
        let foreign = table.open(call_of("b/1", 2, Some(1)));
        let later = table.open(call_of("a/3", 1, Some(1)));
        let other = table.open(call_of("c/1", 3, Some(3)));
        assert_eq!(table.of_agent(1), [own, restored, later], "in ticket order");
        assert_eq!(table.of_agent(2), [foreign], "under another's turn");
        assert_eq!(table.of_agent(3), [other]);
        table.close(restored, Closed::Withdrawn);
        table.close(own, Closed::Answered);
        assert_eq!(table.of_agent(1), [later]);
        assert!(table.of_agent(4).is_empty());
    }

    #[test]
    #[should_panic(expected = "opened twice")]
    fn one_call_id_opens_once() {
        let mut table = CallTable::default();
        table.open(call("root/1"));
        table.open(call("root/1"));
    }
}
