//! The broker's open calls by ticket. Tickets are issued in increasing order and
//! a call is opened as its ticket is issued, so the open calls are a window of
//! tickets, from the oldest still open to the newest: a deque of slots from the
//! oldest, with a hole where a call closed, and the front dropped as soon as it
//! is a hole.
//!
//! A B-tree held them before: appended to in order, its nodes stayed half full
//! (~34 bytes a call for a 16-byte entry), and each lookup walked four or five
//! nodes at 10^5 open calls, one cache miss each. Here a slot is 8 bytes and a
//! lookup one index. A hole costs 8 bytes until the calls opened before it close:
//! the closed calls' table keeps ~50 bytes per ticket for good, so the holes
//! never cost a sixth of what closed calls do.

use std::collections::VecDeque;

use crate::protocol::Ticket;
use crate::trim::Trim;

/// Values by ticket, opened in increasing ticket order.
#[derive(Debug)]
pub struct OpenCalls<V> {
    /// The ticket of `slots[0]`.
    base: Ticket,
    /// The front is never a hole; boxed values keep a slot to a pointer.
    slots: VecDeque<Option<Box<V>>>,
    len: usize,
}

impl<V> Default for OpenCalls<V> {
    fn default() -> Self {
        OpenCalls {
            base: 0,
            slots: VecDeque::new(),
            len: 0,
        }
    }
}

impl<V> OpenCalls<V> {
    fn at(&self, ticket: Ticket) -> Option<usize> {
        let offset = ticket.checked_sub(self.base)?;
        usize::try_from(offset).ok().filter(|at| *at < self.slots.len())
    }

    /// Opens `ticket` with `value`. Tickets come in increasing order: one not
    /// past every ticket opened so far is refused (a broker bug, not input).
    pub fn insert(&mut self, ticket: Ticket, value: Box<V>) {
        if self.slots.is_empty() {
            self.base = ticket;
        }
        let end = self.base + self.slots.len() as Ticket;
        assert!(ticket >= end, "ticket {ticket} opened after ticket {end}");
        for _ in end..ticket {
            self.slots.push_back(None);
        }
        self.slots.push_back(Some(value));
        self.len += 1;
    }

    /// Closes `ticket`: its value, if it was open.
    pub fn remove(&mut self, ticket: Ticket) -> Option<Box<V>> {
        let value = self.slots.get_mut(self.at(ticket)?)?.take()?;
        self.len -= 1;
        while self.slots.front().is_some_and(Option::is_none) {
            self.slots.pop_front();
            self.base += 1;
        }
        self.slots.trim(); // a burst's room back once it has closed
        Some(value)
    }

    pub fn get(&self, ticket: Ticket) -> Option<&V> {
        self.slots.get(self.at(ticket)?)?.as_deref()
    }

    pub fn get_mut(&mut self, ticket: Ticket) -> Option<&mut V> {
        let at = self.at(ticket)?;
        self.slots.get_mut(at)?.as_deref_mut()
    }

    /// Every open value, in ticket order.
    pub fn iter(&self) -> impl Iterator<Item = (Ticket, &V)> {
        let base = self.base;
        (self.slots.iter().enumerate())
            .filter_map(move |(at, slot)| Some((base + at as Ticket, slot.as_deref()?)))
    }

    /// How many are open.
    pub fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_close_in_any_order_and_the_window_follows_the_oldest_open() {
        let mut open: OpenCalls<u32> = OpenCalls::default();
        for ticket in [3, 4, 5, 9] {
            open.insert(ticket, Box::new(ticket as u32 * 10));
        }
        assert_eq!(open.len(), 4);
        assert_eq!(open.get(6), None, "a gap is no call");
        assert_eq!(open.get(2), None, "before the window is no call");
        assert_eq!(open.remove(4).as_deref(), Some(&40), "from the middle: a hole");
        assert_eq!(open.remove(4), None, "a call closes once");
        assert_eq!(open.slots.len(), 7);
        assert_eq!(open.remove(3).as_deref(), Some(&30));
        assert_eq!((open.base, open.slots.len()), (5, 5), "the front is never a hole");
        if let Some(value) = open.get_mut(9) {
            *value += 1;
        }
        let all: Vec<(Ticket, u32)> = open.iter().map(|(t, v)| (t, *v)).collect();
        assert_eq!(all, vec![(5, 50), (9, 91)], "in ticket order");
        open.remove(5);
        open.remove(9);
        assert_eq!((open.len(), open.slots.len()), (0, 0), "none open");
        open.insert(12, Box::new(120));
        assert_eq!(open.get(12), Some(&120), "a new window after an empty one");
    }

    #[test]
    fn a_burst_gives_its_room_back_once_it_closed() {
        let mut open: OpenCalls<u32> = OpenCalls::default();
        let n = 4 * crate::trim::TRIM_MIN as Ticket;
        for ticket in 1..=n {
            open.insert(ticket, Box::new(0));
        }
        for ticket in 1..n {
            open.remove(ticket);
        }
        assert!(
            open.slots.capacity() <= crate::trim::TRIM_MIN,
            "{}",
            open.slots.capacity()
        );
        assert_eq!(open.iter().map(|(t, _)| t).collect::<Vec<_>>(), vec![n]);
    }

    #[test]
    #[should_panic(expected = "opened after")]
    fn a_ticket_opens_after_every_earlier_one() {
        let mut open: OpenCalls<u32> = OpenCalls::default();
        open.insert(5, Box::new(5));
        open.insert(4, Box::new(4));
    }
}
