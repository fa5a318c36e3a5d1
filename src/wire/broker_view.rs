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

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use crate::effect::Out;
use crate::event::EventKind;
use crate::protocol::{AgentId, AnswererIx, BrokerMsg, CallId, Name, Ticket, TurnId};
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
}

/// A call asked or restored.
#[derive(Debug)]
pub struct CallView {
    /// Its agent's name, as the broker's tree knew it when it asked.
    pub agent_name: Name,
    /// The definition it came through.
    pub schema: Schema,
    /// Its questions.
    pub questions: Arc<[Question]>,
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
                };
                self.agents.entry(reg.agent).or_insert(view);
            }
            BrokerMsg::Stop(agent) => {
                if let Some(view) = self.agents.get_mut(agent).filter(|v| v.live) {
                    view.live = false;
                    out.record(EventKind::Stop {
                        agent: view.name.clone(),
                    });
                }
            }
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
            BrokerMsg::NewTurn { agent, .. } => {
                if let Some(view) = self.agents.get(agent).filter(|v| v.live) {
                    out.record(EventKind::NewTurn {
                        agent: view.name.clone(),
                    });
                }
            }
            BrokerMsg::CancelCall { call_id } => out.record(EventKind::CancelCall {
                call_id: call_id.clone(),
            }),
            BrokerMsg::Restore(restored) => {
                let questions = restored.ask.as_ref().map(|a| a.questions.clone());
                let call = CallView {
                    agent_name: restored.agent_name.clone(),
                    schema: Schema::Timed,
                    questions: questions.unwrap_or_else(|| Arc::from([])),
                    open: true,
                };
                self.open_call(restored.call_id.clone(), call);
            }
            BrokerMsg::AnswererDied { answerer } => self.died(*answerer, out),
            BrokerMsg::OutsideTimer { id } => {
                self.timers.remove(id);
            }
            _ => {}
        }
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
            agent_name,
            schema: ask.schema,
            questions: ask.questions.clone(),
            open: true,
        };
        self.open_call(request.call_id.clone(), call);
    }
}
