//! What asksim knows of an outside broker's world from what crossed the
//! boundary: the agents it registered (by its `registered` verdicts), the calls
//! asked and restored and whether each closed for good, which ticket names
//! which call (by its offers), its running timers, the turns fired and the
//! answerers dead (by the inputs). It never decides for the broker: it names
//! things in events and checks that the broker's lines refer to things that
//! exist.
//!
//! It also writes the events that follow from an input alone, exactly where
//! asksim's own broker writes them (first, before anything it decides): a
//! `request`, an `answer`, `stop`, `cancel`, `new_turn`, `cancel_call`, `crash`.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde_json::value::RawValue;

use crate::effect::Out;
use crate::event::EventKind;
use crate::protocol::{AgentId, AnswererIx, BrokerMsg, CallId, Name, Ticket, Turn, TurnId};
use crate::tool::{Question, Schema};

/// An agent asksim registered with the broker.
#[derive(Debug)]
pub struct AgentView {
    /// Its name.
    pub name: Name,
    /// The agent that spawned it, if any.
    pub owner: Option<AgentId>,
    /// Its lineage.
    pub lineage: Option<crate::protocol::Text>,
    /// The broker said it is in the tree.
    pub in_tree: bool,
    /// In the tree and not stopped.
    pub live: bool,
    /// Its current turn (its registration's, then its last `new_turn`'s).
    pub turn: Turn,
}

/// A call asked or restored.
#[derive(Debug)]
pub struct CallView {
    /// The agent that asked it (0: a restored call with no live agent).
    pub agent: AgentId,
    /// Its agent's name, as the broker's tree knew it when it asked.
    pub agent_name: Name,
    /// The definition it came through.
    pub schema: Schema,
    /// Its questions.
    pub questions: Arc<[Question]>,
    /// Its questions as the model sent them (none: restored without them).
    pub questions_text: Option<Arc<RawValue>>,
    /// Not yet closed for good (a final tool result, a late answer, a withdrawal).
    pub open: bool,
}

/// The view.
#[derive(Debug, Default)]
pub struct View {
    /// The waterfall, in order.
    pub answerers: Vec<Name>,
    alive: Vec<bool>,
    by_name: HashMap<Name, AnswererIx>,
    /// Every agent registered, by id.
    pub agents: HashMap<AgentId, AgentView>,
    /// Every call asked or restored, by callId.
    pub calls: HashMap<CallId, CallView>,
    open: usize,
    /// Which call each ticket of an offer names.
    pub tickets: HashMap<Ticket, CallId>,
    /// Timers started and neither fired nor cancelled.
    pub timers: HashSet<u64>,
    fired: BTreeSet<TurnId>,
    /// How many live agents' current turns hold each turn id.
    reach: HashMap<TurnId, u32>,
}

impl View {
    /// The view of a broker with this waterfall.
    pub fn new(answerers: Vec<Name>) -> View {
        let by_name = answerers
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i as AnswererIx))
            .collect();
        View {
            alive: vec![true; answerers.len()],
            answerers,
            by_name,
            ..View::default()
        }
    }

    /// The answerer of the waterfall with this name.
    pub fn answerer(&self, name: &str) -> Result<AnswererIx, String> {
        self.by_name
            .get(name)
            .copied()
            .ok_or_else(|| format!("no answerer {name:?} in the waterfall"))
    }

    /// An answerer's name as events write it (`?answerer-N` past the waterfall).
    pub fn answerer_name(&self, index: AnswererIx) -> Name {
        self.answerers
            .get(index as usize)
            .cloned()
            .unwrap_or_else(|| format!("?answerer-{index}").into())
    }

    /// An agent's name if the broker's tree has it (live or stopped).
    pub fn in_tree(&self, agent: AgentId) -> Option<Name> {
        self.agents
            .get(&agent)
            .filter(|view| view.in_tree)
            .map(|view| view.name.clone())
    }

    /// An agent's name as events write it: as the tree knows it, or `?`.
    pub fn tree_name(&self, agent: AgentId) -> Name {
        self.in_tree(agent).unwrap_or_else(|| Name::from("?"))
    }

    /// The call a ticket names, as events write it (`?ticket-N` if none).
    pub fn call_of(&self, ticket: Ticket) -> CallId {
        self.tickets
            .get(&ticket)
            .cloned()
            .unwrap_or_else(|| format!("?ticket-{ticket}").into())
    }

    /// The call with this id.
    pub fn call(&self, call_id: &str) -> Result<&CallView, String> {
        self.calls
            .get(call_id)
            .ok_or_else(|| format!("no call {call_id:?} was asked or restored"))
    }

    /// A call closed for good (once).
    pub fn close(&mut self, call_id: &str) {
        if let Some(call) = self.calls.get_mut(call_id).filter(|c| c.open) {
            call.open = false;
            self.open -= 1;
        }
    }

    /// Whether asksim fired `turn` (a `cancel_turn` of this life fired it).
    pub fn fired(&self, turn: TurnId) -> bool {
        self.fired.contains(&turn)
    }

    /// Whether any call is open.
    pub fn has_open_calls(&self) -> bool {
        self.open > 0
    }

    fn open_call(&mut self, call_id: CallId, call: CallView) {
        if let Some(old) = self.calls.insert(call_id, call)
            && old.open
        {
            self.open -= 1;
        }
        self.open += 1;
    }

    /// Takes in one input, writing the events that follow from it alone.
    pub fn input(&mut self, msg: &BrokerMsg, out: &mut Out) {
        match msg {
            BrokerMsg::Register(reg) => {
                let view = AgentView {
                    name: reg.name.clone(),
                    owner: reg.owner,
                    lineage: reg.lineage.clone(),
                    in_tree: false,
                    live: false,
                    turn: reg.turn.clone(),
                };
                self.agents.entry(reg.agent).or_insert(view);
            }
            BrokerMsg::Stop(agent) => self.stop(*agent, out),
            BrokerMsg::Request(request) => self.request(request, out),
            BrokerMsg::Submit {
                ticket,
                answerer,
                batch,
            } => {
                let answer = EventKind::Answer {
                    call_id: self.call_of(*ticket),
                    answerer: self.answerer_name(*answerer),
                    batch: batch.clone(),
                    mbox: out.mbox(),
                };
                out.record(answer);
            }
            BrokerMsg::CancelTurn { agent, turn } if !turn.chain().iter().any(|t| self.fired.contains(t)) => {
                out.record(EventKind::Cancel {
                    agent: self.tree_name(*agent),
                });
                self.fired.insert(turn.id());
            }
            BrokerMsg::NewTurn { agent, turn } => self.new_turn(*agent, turn, out),
            BrokerMsg::CancelCall { call_id } => out.record(EventKind::CancelCall {
                call_id: call_id.clone(),
            }),
            BrokerMsg::Restore(restored) => self.restore(restored),
            BrokerMsg::AnswererDied { answerer } => self.died(*answerer, out),
            BrokerMsg::OutsideTimer { id } => {
                self.timers.remove(id);
            }
            _ => {}
        }
    }

    /// A live agent stops: it is reached by no turn any more.
    fn stop(&mut self, agent: AgentId, out: &mut Out) {
        if let Some(view) = self.agents.get_mut(&agent).filter(|v| v.live) {
            view.live = false;
            out.record(EventKind::Stop {
                agent: view.name.clone(),
            });
            let turn = view.turn.clone();
            self.reach(&turn, false);
        }
    }

    /// A live agent begins a new turn: what fires it is that turn's chain now.
    fn new_turn(&mut self, agent: AgentId, turn: &Turn, out: &mut Out) {
        if let Some(view) = self.agents.get_mut(&agent).filter(|v| v.live) {
            let old = std::mem::replace(&mut view.turn, turn.clone());
            out.record(EventKind::NewTurn {
                agent: view.name.clone(),
            });
            self.reach(&old, false);
            self.reach(turn, true);
        }
    }

    /// The broker's verdict on an agent's registration: in its tree (and
    /// live) or not.
    pub fn registered(&mut self, agent: AgentId, in_tree: bool) {
        let Some(view) = self.agents.get_mut(&agent) else {
            return;
        };
        let was_live = std::mem::replace(&mut view.live, in_tree);
        view.in_tree = in_tree;
        let turn = view.turn.clone();
        if was_live != in_tree {
            self.reach(&turn, in_tree);
        }
    }

    /// Counts a live agent's current turn in (`add`) or out: every id of its
    /// chain reaches it.
    fn reach(&mut self, turn: &Turn, add: bool) {
        for id in turn.chain() {
            match self.reach.entry(*id) {
                Entry::Occupied(mut n) if !add => {
                    *n.get_mut() -= 1;
                    if *n.get() == 0 {
                        n.remove();
                    }
                }
                Entry::Occupied(mut n) => *n.get_mut() += 1,
                Entry::Vacant(n) if add => {
                    n.insert(1);
                }
                Entry::Vacant(_) => {}
            }
        }
    }

    /// How many live agents firing `turn` reaches (their current turn holds it).
    pub fn reaches(&self, turn: TurnId) -> usize {
        self.reach.get(&turn).map_or(0, |n| *n as usize)
    }

    /// A restored call opens in the view (with no questions if the log had
    /// none: the broker withdraws it).
    fn restore(&mut self, restored: &crate::protocol::Restored) {
        let ask = restored.ask.as_ref();
        let call = CallView {
            agent: restored.agent,
            agent_name: restored.agent_name.clone(),
            schema: Schema::Timed,
            questions: ask.map_or_else(|| Arc::from([]), |a| a.questions.clone()),
            questions_text: ask.map(|a| a.questions_raw.clone()),
            open: true,
        };
        self.open_call(restored.call_id.clone(), call);
    }

    /// An answerer's death: recorded the first time only.
    fn died(&mut self, answerer: AnswererIx, out: &mut Out) {
        if let Some(alive) = self.alive.get_mut(answerer as usize).filter(|a| **a) {
            *alive = false;
            out.record(EventKind::Crash {
                answerer: self.answerers[answerer as usize].clone(),
                mbox: out.mbox(),
            });
        }
    }

    /// A request: its call opens in the view, and the `request` event records it
    /// with the questions exactly as the model sent them.
    fn request(&mut self, request: &crate::protocol::Request, out: &mut Out) {
        let ask = &request.ask;
        let agent_name = self.tree_name(request.agent);
        out.record(EventKind::request(&request.call_id, &agent_name, ask, out.mbox()));
        let call = CallView {
            agent: request.agent,
            agent_name,
            schema: ask.schema,
            questions: ask.questions.clone(),
            questions_text: Some(ask.questions_raw.clone()),
            open: true,
        };
        self.open_call(request.call_id.clone(), call);
    }
}
