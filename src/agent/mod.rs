//! Agents: the callers. An agent numbers its tool calls, applies the tool's
//! argument rules (before the broker checks identity), carries its turn, receives
//! its tool results and user messages, and runs its model script ([`script`]):
//! the scenario's steps, or nothing when a library user drives it.

pub(crate) mod call_map;
mod prepared;
mod script;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::effect::{Out, Spawn, TimerId};
use crate::event::EventKind;
use crate::final_result::Got;
use crate::protocol::{
    AgentId, AgentMsg, BrokerMsg, CallId, CallReply, Name, Request, SpawnError, Turn, TurnId,
};
use crate::tool::{ArgumentError, Ask, ResultKind, ToolConfig, ToolResult};

pub use prepared::Prepared;
pub use script::Script;

/// Pushes `item`, with room for exactly one at the first push: most agents
/// gather one result and one user message, and a first push would take room
/// for four (`Vec`'s smallest growth), held by every agent of a run. Later
/// pushes grow as usual, so a long list stays amortised O(1).
fn push_sized<T>(list: &mut Vec<T>, item: T) {
    if list.capacity() == 0 {
        list.reserve_exact(1);
    }
    list.push(item);
}

/// What an agent keeps of one of its calls: who waits for its result while it
/// is in flight, whether it went pending, whether it closed for good. In 16
/// bytes: an agent driven by a library keeps one per pending question, and
/// a [`Waiter`] in place (24 bytes and its tag) took 32 of each slot of its
/// table (issue #23: heap per pending question).
#[derive(Debug, Default)]
struct CallState {
    /// A library caller waiting for the result, boxed while it waits.
    caller: Option<Box<CallReply>>,
    /// The agent's own script waits for the result.
    script_waits: bool,
    pending: bool,
    closed: bool,
}

impl CallState {
    fn is_empty(&self) -> bool {
        self.caller.is_none() && !self.script_waits && !self.pending && !self.closed
    }

    /// `waiter` waits for the result now.
    fn wait(&mut self, waiter: Waiter) {
        match waiter {
            Waiter::Script => self.script_waits = true,
            Waiter::Caller(reply) => self.caller = Some(Box::new(reply)),
        }
    }

    /// Who waited for the result, no longer waiting.
    fn take_waiter(&mut self) -> Option<Waiter> {
        if let Some(reply) = self.caller.take() {
            return Some(Waiter::Caller(*reply));
        }
        std::mem::take(&mut self.script_waits).then_some(Waiter::Script)
    }
}

/// The calls of an earlier life that are pending, as an agent keeps them.
fn calls_pending(pending: BTreeSet<CallId>) -> call_map::CallMap<CallState> {
    let mut calls = call_map::CallMap::default();
    for call_id in pending {
        let state = CallState {
            pending: true,
            ..CallState::default()
        };
        calls.insert(call_id, state);
    }
    calls
}

/// Who waits for a call's result.
#[derive(Debug)]
enum Waiter {
    /// The agent's own script.
    Script,
    /// A library caller.
    Caller(CallReply),
}

/// What an agent starts from.
#[derive(Debug)]
pub struct AgentSetup {
    /// Its id.
    pub id: AgentId,
    /// Its unique name.
    pub name: Name,
    /// The registered tool.
    pub tool: ToolConfig,
    /// Its first turn.
    pub turn: Turn,
    /// Its owner, to tell when its script ends.
    pub owner: Option<AgentId>,
    /// Calls made in an earlier life (after a restart the counter continues).
    pub calls_made: u64,
    /// Calls of an earlier life that are pending (restored after a restart).
    pub pending: BTreeSet<CallId>,
    /// The script it runs once registered, if any.
    pub script: Option<Script>,
    /// The run's memo of validated script arguments (a fresh one shares nothing).
    pub prepared: Prepared,
}

/// An agent's state.
#[derive(Debug)]
pub struct AgentState {
    id: AgentId,
    name: Name,
    tool: ToolConfig,
    turn: Turn,
    turns: u32,
    /// Its turn's outermost turn, kept beside it: a `TurnFired` for a tree
    /// reaches each agent of it (the cancel of a tree of 10^5, in random
    /// order), and comparing with this needs no read of the turn's chain, an
    /// allocation of its own behind the agent's slot. Where an owner's turn
    /// was kept before (its turns derive from the same outer turns as its
    /// current one: [`Turn::renewed`]), so the slot is no larger.
    outermost: TurnId,
    /// Its owner: an id, which counts from 1, held as a non-zero number so
    /// that it takes 8 bytes where an `Option<u64>` took 16.
    owner: Option<std::num::NonZeroU64>,
    calls_made: u64,
    /// Its calls in flight, those that returned `pending` (and may still
    /// close), and the pending calls closed for good: one map for the three
    /// (three maps took 96 bytes of every agent of a run, one takes 56).
    calls: call_map::CallMap<CallState>,
    /// What only a library's agent keeps, boxed (most agents of a run never
    /// hold any of it: 8 bytes in place, and an allocation only while it does).
    library: Option<Box<Library>>,
    messages: Vec<Arc<str>>,
    /// Its script while it runs: boxed, and dropped once it ends (nothing of an
    /// ended script is read again, and a run holds many agents that finished
    /// theirs while their pending calls wait for late answers).
    script: Option<Box<Script>>,
    prepared: Prepared,
    /// Its timers so far (a script's `work` steps: at most
    /// [`STEPS_MAX`](crate::scenario::STEPS_MAX) a script).
    next_timer: u32,
    /// A child's place among its owner's spawns, which it names itself by
    /// when its script ends (0 for an agent nobody spawned).
    place: u32,
}

/// Who waits for a library agent's registration, and library callers awaiting
/// a pending call's close.
#[derive(Debug, Default)]
struct Library {
    registered: Option<oneshot::Sender<Result<(), SpawnError>>>,
    await_closed: BTreeMap<CallId, Closers>,
}

/// Who awaits one call's close, in the order they came: nearly always one
/// caller, kept with no allocation of a vector (an empty one has none).
#[derive(Debug)]
struct Closers {
    first: oneshot::Sender<()>,
    rest: Vec<oneshot::Sender<()>>,
}

impl Closers {
    /// Tells each, in the order they came, that the call closed.
    fn send(self) {
        for reply in std::iter::once(self.first).chain(self.rest) {
            let _ = reply.send(());
        }
    }
}

impl Library {
    fn is_empty(&self) -> bool {
        self.registered.is_none() && self.await_closed.is_empty()
    }
}

impl AgentState {
    /// An agent not yet registered.
    pub fn new(setup: AgentSetup) -> AgentState {
        AgentState {
            id: setup.id,
            name: setup.name,
            tool: setup.tool,
            turns: setup.turn.id().n,
            outermost: setup.turn.outermost(),
            turn: setup.turn,
            owner: setup.owner.map(|owner| {
                std::num::NonZeroU64::new(owner).expect("agent ids count from 1, so no owner is 0")
            }),
            calls_made: setup.calls_made,
            calls: calls_pending(setup.pending),
            library: None,
            messages: Vec::new(),
            script: setup.script.map(Box::new),
            prepared: setup.prepared,
            next_timer: 0,
            place: 0,
        }
    }

    /// The scenario entry of a script-driven agent that `spawn` asked for,
    /// with `id`: its first turn derives from its owner's.
    pub fn child(id: AgentId, spawn: &Spawn, tool: ToolConfig, prepared: Prepared) -> AgentState {
        let (spec, owner) = (&spawn.spec, spawn.owner);
        let own = spawn.turn.derive(TurnId { agent: id, n: 1 });
        let mut agent = AgentState::new(AgentSetup {
            id,
            name: spec.name.clone(),
            tool,
            turn: own,
            owner: Some(owner),
            calls_made: 0,
            pending: BTreeSet::new(),
            script: Some(Script::new(spec, false)),
            prepared,
        });
        agent.place = spawn.place;
        agent
    }

    /// Its id.
    pub fn id(&self) -> AgentId {
        self.id
    }

    /// The address of its script while one runs (0 once it ended): a hint
    /// for whoever holds many agents to ask for the script's lines before the
    /// agent's slot is read (never a way to reach the script).
    pub fn script_addr(&self) -> usize {
        self.script
            .as_deref()
            .map_or(0, |script| std::ptr::from_ref(script).addr())
    }

    /// Its name.
    pub fn name(&self) -> &Name {
        &self.name
    }

    /// Whether firing `turn` fires its current turn.
    pub fn fired_by(&self, turn: TurnId) -> bool {
        turn == self.outermost || self.turn.fired_by(turn)
    }

    /// Its current turn.
    pub fn turn(&self) -> &Turn {
        &self.turn
    }

    /// Starts a new turn (derived from its owner's turn at spawn, for a child).
    pub fn new_turn(&mut self) -> &Turn {
        self.turns += 1;
        let id = TurnId {
            agent: self.id,
            n: self.turns,
        };
        self.turn = self.turn.renewed(id);
        self.outermost = self.turn.outermost();
        &self.turn
    }

    /// Replies to `reply` once the broker answered its registration.
    pub fn on_registered(&mut self, reply: oneshot::Sender<Result<(), SpawnError>>) {
        self.library.get_or_insert_default().registered = Some(reply);
    }

    /// Gives the library's part back once it holds nothing.
    fn library_done(&mut self) {
        if self.library.as_ref().is_some_and(|library| library.is_empty()) {
            self.library = None;
        }
    }

    /// Handles one message.
    pub fn handle(&mut self, msg: AgentMsg, out: &mut Out) {
        match msg {
            AgentMsg::Registered(result) => {
                let ok = result.is_ok();
                if let Some(reply) = self.library.as_mut().and_then(|l| l.registered.take()) {
                    let _ = reply.send(result);
                    self.library_done();
                }
                if ok {
                    self.advance(out);
                }
            }
            AgentMsg::Spawned { child, result } => self.spawned(child, result, out),
            AgentMsg::Settled { call_id, result } => self.settled(call_id, result, out),
            AgentMsg::Pending { call_id } => self.went_pending(call_id, out),
            AgentMsg::Closed { call_id, message } => self.closed(call_id, message, out),
            AgentMsg::TurnFired(turn) => {
                if self.fired_by(turn) {
                    self.turn_fired(turn, out);
                }
            }
            AgentMsg::ChildEnded {
                place,
                unasked,
                fired,
            } => {
                // The signal that ended the child may reach it before it reaches
                // this agent: it is the same signal, so this script ends first.
                if let Some(turn) = fired.filter(|t| self.fired_by(*t)) {
                    self.turn_fired(turn, out);
                }
                self.child_ended(place, &unasked, out)
            }
            AgentMsg::WorkDone { step } => self.work_done(step, out),
            AgentMsg::Call { arguments, reply } => {
                self.call(self.tool.prepare(&arguments), Waiter::Caller(reply), out);
            }
            AgentMsg::AwaitClosed { call_id, reply } => {
                if self.is_closed(&call_id) {
                    let _ = reply.send(());
                } else {
                    let waiting = &mut self.library.get_or_insert_default().await_closed;
                    match waiting.entry(call_id) {
                        std::collections::btree_map::Entry::Vacant(entry) => {
                            entry.insert(Closers {
                                first: reply,
                                rest: Vec::new(),
                            });
                        }
                        std::collections::btree_map::Entry::Occupied(mut entry) => {
                            entry.get_mut().rest.push(reply)
                        }
                    }
                }
            }
            AgentMsg::Messages(reply) => {
                let _ = reply.send(self.messages.iter().map(|m| m.to_string()).collect());
            }
            AgentMsg::Turn { new, reply } => {
                if new {
                    self.new_turn();
                }
                let _ = reply.send(self.turn.clone());
            }
        }
    }

    /// Delivers a user message decided before a process loss and never received
    /// (SPEC §3.9): before anything else reaches the resumed agent.
    pub fn redeliver(&mut self, call_id: CallId, message: Arc<str>, out: &mut Out) {
        self.closed(call_id, Some(message), out);
    }

    /// Makes one tool call: numbers it and, with its arguments checked
    /// (`prepared`; SPEC §2.3: before identity, invalid ones never reach the
    /// broker), sends the request.
    fn call(&mut self, prepared: Result<Ask, ArgumentError>, waiter: Waiter, out: &mut Out) {
        let call_id = self.next_call_id();
        self.call_as(call_id, prepared, waiter, out)
    }

    /// The callId of the next call this agent makes (`name/n`, from 1).
    fn next_call_id(&self) -> CallId {
        CallId::format(format_args!("{}/{}", self.name, self.calls_made + 1))
    }

    /// [`AgentState::call`], its callId made already by [`AgentState::next_call_id`].
    fn call_as(
        &mut self,
        call_id: CallId,
        prepared: Result<Ask, ArgumentError>,
        mut waiter: Waiter,
        out: &mut Out,
    ) {
        self.calls_made += 1;
        debug_assert_eq!(call_id, format!("{}/{}", self.name, self.calls_made));
        if let Waiter::Caller(reply) = &mut waiter {
            reply.numbered(&call_id);
        }
        match prepared {
            Err(error) => {
                let result = error.to_result();
                out.record(EventKind::result(&call_id, &self.name, &result));
                self.state_of(&call_id).wait(waiter);
                self.settled(call_id, result, out);
            }
            Ok(ask) => {
                self.state_of(&call_id).wait(waiter);
                out.tell_broker(BrokerMsg::Request(Box::new(Request {
                    agent: self.id,
                    call_id,
                    ask,
                    turn: self.turn.clone(),
                })));
            }
        }
    }

    fn settled(&mut self, call_id: CallId, result: ToolResult, out: &mut Out) {
        let waiter = if result.kind == ResultKind::Pending {
            // Kept as pending: one search, and nothing to forget.
            let state = self.state_of(&call_id);
            state.pending = true;
            state.take_waiter()
        } else {
            self.take_waiter(&call_id)
        };
        match waiter {
            Some(Waiter::Caller(reply)) => reply.settle(result),
            Some(Waiter::Script) => self.script_settled(call_id, result, out),
            None => {}
        }
    }

    /// The call returned the tool's own `pending` result: its text is made only
    /// for a library caller, who reads it; a script keeps that it was pending.
    fn went_pending(&mut self, call_id: CallId, out: &mut Out) {
        let state = self.state_of(&call_id);
        state.pending = true;
        match state.take_waiter() {
            Some(Waiter::Caller(reply)) => reply.settle(ToolResult::pending(&call_id)),
            Some(Waiter::Script) => self.script_got(call_id, Got::Pending, false, out),
            None => {}
        }
    }

    fn closed(&mut self, call_id: CallId, message: Option<Arc<str>>, out: &mut Out) {
        if let Some(message) = message {
            out.record(EventKind::UserMessage {
                call_id: call_id.clone(),
                agent: self.name.clone(),
                message: message.clone(),
            });
            push_sized(&mut self.messages, message);
        }
        if let Some(library) = &mut self.library {
            if let Some(closers) = library.await_closed.remove(&call_id) {
                closers.send();
            }
            // An emptied B-tree keeps its root node: give it back, as a run
            // holds many agents that await nothing any more.
            self.library_done();
        }
        self.state_of(&call_id).closed = true;
        self.script_closed(&call_id, out);
    }

    /// What it keeps of `call_id`, made if it keeps nothing yet.
    fn state_of(&mut self, call_id: &CallId) -> &mut CallState {
        self.calls.get_or_insert_with(call_id, CallState::default)
    }

    /// Who waits for `call_id`'s result, no longer waiting; the call is
    /// forgotten if nothing else is kept of it.
    fn take_waiter(&mut self, call_id: &str) -> Option<Waiter> {
        let state = self.calls.get_mut(call_id)?;
        let waiter = state.take_waiter();
        if state.is_empty() {
            self.calls.remove(call_id);
        }
        waiter
    }

    /// Whether `call_id` went pending and has not closed.
    fn is_pending_open(&self, call_id: &str) -> bool {
        self.calls.get(call_id).is_some_and(|s| s.pending && !s.closed)
    }

    /// Whether `call_id` closed for good.
    fn is_closed(&self, call_id: &str) -> bool {
        self.calls.get(call_id).is_some_and(|s| s.closed)
    }

    /// A new timer's id (only a script's `work` step starts one).
    fn timer_id(&mut self) -> TimerId {
        self.next_timer = (self.next_timer.checked_add(1)).expect("a script's steps fit in 32 bits");
        self.last_timer()
    }

    /// The timer started last: the one a script waiting on `work` waits for.
    fn last_timer(&self) -> TimerId {
        TimerId::from(self.next_timer)
    }
}

#[cfg(test)]
mod tests {
    /// One a call an agent keeps, one a pending question of a library host.
    #[test]
    fn what_an_agent_keeps_of_a_call_is_16_bytes() {
        assert_eq!(std::mem::size_of::<super::CallState>(), 16);
    }

    /// An agent's slot: a tree of 10^5 holds 10^5 of them, and the loss family
    /// is within 1% of SPEC §8's 2 KB a call. Its turn's outermost turn took
    /// the place of its owner's turn, which it no longer keeps.
    #[test]
    fn an_agent_state_is_no_larger_than_its_owner_turn_made_it() {
        assert_eq!(std::mem::size_of::<super::AgentState>(), 200);
    }
}
