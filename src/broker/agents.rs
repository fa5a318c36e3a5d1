//! The live agent tree as the broker knows it: who is registered, who owns whom,
//! each tree's size, and each agent's current turn. Identity is decided here
//! (SPEC §3.1): lineage is recorded elsewhere and never read.

use rustc_hash::FxHashSet;

use crate::protocol::{AgentId, Name, Registration, SpawnError, Turn, TurnId};

use super::appended::Appended;
use super::by_id::ById;
use super::turn_index::TurnIndex;

/// One registered agent.
#[derive(Debug)]
struct Entry {
    name: Name,
    owner: Option<AgentId>,
    /// Boxed, made at its first child: most agents have none, and an empty
    /// set in place was 24 bytes of every agent's entry. Ids only grow, so a
    /// child is appended ([`Appended`]); nothing reads the set in order.
    #[allow(clippy::box_collection)] // the box is the point: 8 bytes in the entry, not 24
    children: Option<Box<Appended<AgentId>>>,
    root: AgentId,
    live: bool,
    turn: Turn,
    /// A root's: how many agents its tree ever registered (itself included).
    tree_size: u32,
}

/// Whether `turn` is `agent`'s own (its id names the agent): where the index
/// need not hold it.
fn own_turn(agent: AgentId, turn: &Turn) -> bool {
    turn.id().agent == agent
}

/// The live agent that sits at `turn`, its own, if one does.
fn sits_at(agents: &ById<Entry>, turn: TurnId) -> Option<AgentId> {
    agents
        .get(turn.agent)
        .filter(|e| e.live && e.turn.id() == turn)
        .map(|_| turn.agent)
}

/// Who a caller is, for the identity check of SPEC §3.1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// No agent of this runtime has the id (a stale or foreign handle).
    Unknown,
    /// The agent stopped: it is no longer live.
    Stopped(Name),
    /// A live child owned by another live agent.
    Delegated(Name),
    /// The exact live runtime root: it may ask.
    Root(Name),
}

/// The agent tree.
#[derive(Debug, Default)]
pub struct AgentTree {
    /// By id, in place: the ids are dense.
    agents: ById<Entry>,
    /// How many agents registered.
    registered: usize,
    /// Hashed: registration looks a name up, nothing reads it in order (a
    /// B-tree of 10^5 names cost a string comparison per level). A set: only
    /// whether a name was taken is asked, never by whom.
    names: FxHashSet<Name>,
    agents_per_tree_max: usize,
    /// The links between turns of live agents' current turns, and the live
    /// agents whose current turn is not their own (a registration may name
    /// any turn). An agent at its own turn (`TurnId { agent: itself, .. }`,
    /// every agent asksim's runtimes start) is not indexed: its entry says
    /// where it sits ([`sits_at`]), and a B-tree entry of each was ~49 bytes
    /// an agent.
    by_turn: TurnIndex<AgentId>,
}

impl AgentTree {
    /// An empty tree whose trees hold at most `agents_per_tree_max` agents each
    /// (live or stopped).
    pub fn new(agents_per_tree_max: usize) -> AgentTree {
        AgentTree {
            agents_per_tree_max,
            ..AgentTree::default()
        }
    }

    /// Adds an agent: a root, or a child of a live agent. Over the tree's limit,
    /// nothing is added.
    pub fn register(&mut self, reg: &Registration) -> Result<(), SpawnError> {
        if reg.name.is_empty() || reg.name.contains('/') {
            return Err(SpawnError::BadName(reg.name.to_string()));
        }
        if self.names.contains(&reg.name) || self.agents.contains_key(reg.agent) {
            return Err(SpawnError::DuplicateName(reg.name.to_string()));
        }
        let root = match reg.owner {
            None => reg.agent,
            Some(owner) => match self.agents.get(owner) {
                Some(entry) if entry.live => entry.root,
                _ => return Err(SpawnError::OwnerNotLive),
            },
        };
        let size = match reg.owner {
            None => 0,
            Some(_) => self.agents.get(root).map_or(0, |e| e.tree_size as usize),
        };
        if size >= self.agents_per_tree_max {
            return Err(SpawnError::LimitExceeded(self.agents_per_tree_max));
        }
        if let Some(owner) = reg.owner {
            if let Some(root) = self.agents.get_mut(root) {
                root.tree_size = root.tree_size.saturating_add(1);
            }
            self.agents
                .get_mut(owner)
                .expect("the owner was found live above")
                .children
                .get_or_insert_default()
                .insert(reg.agent);
        }
        self.names.insert(reg.name.clone());
        if own_turn(reg.agent, &reg.turn) {
            self.by_turn.link(&reg.turn);
        } else {
            self.by_turn.insert(&reg.turn, reg.agent);
        }
        self.agents.insert(
            reg.agent,
            Entry {
                name: reg.name.clone(),
                owner: reg.owner,
                children: None,
                root,
                live: true,
                turn: reg.turn.clone(),
                tree_size: 1,
            },
        );
        self.registered += 1;
        Ok(())
    }

    /// Stops a live agent: it is no longer live, and ownership ends on both sides,
    /// so its children become roots. Returns its name, or `None` if it was not live.
    pub fn stop(&mut self, agent: AgentId) -> Option<Name> {
        let entry = self.agents.get_mut(agent).filter(|e| e.live)?;
        entry.live = false;
        let turn = entry.turn.clone();
        self.unindex(agent, &turn);
        let entry = self.agents.get_mut(agent).expect("found above");
        let name = entry.name.clone();
        let children = std::mem::take(&mut entry.children);
        let owner = entry.owner.take();
        for child in children.iter().flat_map(|set| set.iter()) {
            if let Some(child) = self.agents.get_mut(child) {
                child.owner = None;
            }
        }
        if let Some(children) = owner
            .and_then(|o| self.agents.get_mut(o))
            .and_then(|owner| owner.children.as_mut())
        {
            children.remove(&agent);
        }
        Some(name)
    }

    /// Who `agent` is (SPEC §3.1).
    pub fn identity(&self, agent: AgentId) -> Identity {
        match self.agents.get(agent) {
            None => Identity::Unknown,
            Some(e) if !e.live => Identity::Stopped(e.name.clone()),
            Some(e) if e.owner.is_some() => Identity::Delegated(e.name.clone()),
            Some(e) => Identity::Root(e.name.clone()),
        }
    }

    /// An agent's name, if it ever registered.
    pub fn name(&self, agent: AgentId) -> Option<&Name> {
        self.agents.get(agent).map(|e| &e.name)
    }

    /// Whether the agent is registered and live.
    pub fn is_live(&self, agent: AgentId) -> bool {
        self.agents.get(agent).is_some_and(|e| e.live)
    }

    /// The live agents whose current turn is fired by `turn`, in id order.
    pub fn fired_by(&self, turn: TurnId) -> Vec<AgentId> {
        let mut found: Vec<AgentId> = (self.by_turn.turns_at_or_below(turn).into_iter())
            .flat_map(|t| self.by_turn.at(t).chain(sits_at(&self.agents, t)))
            .collect();
        found.sort_unstable();
        found
    }

    /// A live agent left `turn` (stopped, or at a new turn now): the index
    /// forgets it and the links that led only to it.
    fn unindex(&mut self, agent: AgentId, turn: &Turn) {
        let agents = &self.agents;
        let sits = |t: TurnId| sits_at(agents, t).is_some();
        if own_turn(agent, turn) {
            self.by_turn.unlink(turn, sits);
        } else {
            self.by_turn.remove_where(turn, agent, sits);
        }
    }

    /// Records a live agent's new current turn; its name, or `None` if not live.
    pub fn set_turn(&mut self, agent: AgentId, turn: Turn) -> Option<Name> {
        let entry = self.agents.get_mut(agent).filter(|e| e.live)?;
        let old = std::mem::replace(&mut entry.turn, turn.clone());
        let name = entry.name.clone();
        self.unindex(agent, &old);
        if own_turn(agent, &turn) {
            self.by_turn.link(&turn);
        } else {
            self.by_turn.insert(&turn, agent);
        }
        Some(name)
    }

    /// How many agents were ever registered.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.registered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(agent: AgentId, name: &str, owner: Option<AgentId>) -> Registration {
        Registration {
            agent,
            name: name.into(),
            owner,
            lineage: None,
            turn: Turn::root(TurnId { agent, n: 1 }),
        }
    }

    /// The broker holds an entry of every agent ever registered, in place.
    #[test]
    fn an_agents_entry_is_72_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 72);
    }

    #[test]
    fn a_child_is_delegated_until_its_owner_stops() {
        let mut tree = AgentTree::new(10);
        tree.register(&reg(1, "root", None)).unwrap();
        tree.register(&reg(2, "child", Some(1))).unwrap();
        assert_eq!(tree.identity(2), Identity::Delegated("child".into()));
        assert_eq!(tree.stop(1), Some("root".into()));
        assert_eq!(tree.identity(2), Identity::Root("child".into()));
        assert_eq!(tree.identity(1), Identity::Stopped("root".into()));
        assert_eq!(tree.identity(9), Identity::Unknown);
        assert_eq!(tree.stop(1), None, "a stopped agent stops once");
    }

    #[test]
    fn a_tree_over_its_limit_adds_nothing_and_stopped_agents_count() {
        let mut tree = AgentTree::new(2);
        tree.register(&reg(1, "root", None)).unwrap();
        tree.register(&reg(2, "a", Some(1))).unwrap();
        tree.stop(2);
        assert_eq!(
            tree.register(&reg(3, "b", Some(1))),
            Err(SpawnError::LimitExceeded(2))
        );
        assert_eq!(tree.len(), 2);
        assert!(tree.name(3).is_none());
        tree.register(&reg(4, "other-root", None)).unwrap();
    }

    #[test]
    fn names_are_unique_and_owners_must_be_live() {
        let mut tree = AgentTree::new(10);
        tree.register(&reg(1, "root", None)).unwrap();
        assert!(matches!(
            tree.register(&reg(2, "root", None)),
            Err(SpawnError::DuplicateName(_))
        ));
        assert!(matches!(
            tree.register(&reg(3, "a/b", None)),
            Err(SpawnError::BadName(_))
        ));
        tree.stop(1);
        assert_eq!(
            tree.register(&reg(4, "late", Some(1))),
            Err(SpawnError::OwnerNotLive)
        );
    }

    #[test]
    fn a_fired_turn_reaches_every_agent_whose_turn_derives_from_it() {
        let mut tree = AgentTree::new(10);
        let root_turn = Turn::root(TurnId { agent: 1, n: 1 });
        let child_turn = root_turn.derive(TurnId { agent: 2, n: 1 });
        tree.register(&Registration {
            turn: root_turn,
            ..reg(1, "root", None)
        })
        .unwrap();
        tree.register(&Registration {
            turn: child_turn,
            ..reg(2, "child", Some(1))
        })
        .unwrap();
        tree.register(&reg(3, "other", None)).unwrap();
        assert_eq!(tree.fired_by(TurnId { agent: 1, n: 1 }), vec![1, 2]);
        assert_eq!(tree.fired_by(TurnId { agent: 2, n: 1 }), vec![2]);
        assert_eq!(
            tree.by_turn.size(),
            (0, 1),
            "agents at their own turns: one link, no entry"
        );
        tree.stop(2);
        assert_eq!(tree.fired_by(TurnId { agent: 1, n: 1 }), vec![1]);
        assert_eq!(
            tree.by_turn.size(),
            (0, 0),
            "the link led only to the stopped child"
        );
    }

    #[test]
    fn an_agent_at_a_turn_not_its_own_is_indexed_and_found() {
        let mut tree = AgentTree::new(10);
        let root_turn = Turn::root(TurnId { agent: 1, n: 1 });
        tree.register(&reg(1, "root", None)).unwrap();
        let foreign = root_turn.derive(TurnId { agent: 9, n: 1 });
        tree.register(&Registration {
            turn: foreign,
            ..reg(5, "guest", Some(1))
        })
        .unwrap();
        assert_eq!(tree.fired_by(TurnId { agent: 1, n: 1 }), vec![1, 5]);
        assert_eq!(tree.fired_by(TurnId { agent: 9, n: 1 }), vec![5]);
        tree.set_turn(1, Turn::root(TurnId { agent: 1, n: 2 }));
        assert_eq!(
            tree.fired_by(TurnId { agent: 1, n: 1 }),
            vec![5],
            "the root moved on; the guest's turn still derives from its old one"
        );
        assert_eq!(tree.fired_by(TurnId { agent: 1, n: 2 }), vec![1]);
        tree.stop(5);
        tree.stop(1);
        assert_eq!(tree.by_turn.size(), (0, 0), "nothing left indexed or linked");
    }
}
