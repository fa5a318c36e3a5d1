//! The turn signals of a run as its log tells them (SPEC §1 "turn signal", §3.8),
//! for the checkers: which turn each agent is in, which turn it derives from, and
//! which turns fired, when. It mirrors the broker's `Turn` chains from the events
//! alone: a child's turns derive from its owner's turn at the child's spawn (a
//! `spawn` event), a `new_turn` starts a fresh turn derived from the same one, and
//! a `cancel` fires the agent's current turn, and with it every turn whose chain
//! holds it.
//!
//! Every question is answered by walking one chain (the spawn depth), never by
//! scanning the agents: a turn signal costs the same however many agents a run
//! has. It never reads anything but the events it is given.

use rustc_hash::FxHashMap;

use crate::protocol::Name;

/// A turn, by its place in the tree.
pub type TurnIx = u32;

/// When a turn fired: the `cancel` event's `seq` and time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fire {
    /// The `seq` of the `cancel` event.
    pub seq: u64,
    /// Its time.
    pub t: f64,
}

/// A turn: 8 bytes, as a run holds one per agent and per new turn; the few
/// that fire keep their firings in [`TurnTree::fires`].
#[derive(Clone, Copy)]
struct Node {
    /// The turn it derives from, or [`NO_PARENT`].
    parent: TurnIx,
    /// Whether it fired.
    fired: bool,
}

/// A root turn's parent.
const NO_PARENT: TurnIx = TurnIx::MAX;

/// An agent's turns: its current one and the one its turns derive from.
#[derive(Clone, Copy)]
struct AgentTurns {
    base: Option<TurnIx>,
    current: TurnIx,
}

/// Every turn of a run, and each agent's current one.
#[derive(Default)]
pub struct TurnTree {
    nodes: Vec<Node>,
    /// When each turn that fired did (a hand-made log may fire one turn twice).
    fires: FxHashMap<TurnIx, Vec<Fire>>,
    agents: FxHashMap<Name, AgentTurns>,
}

impl TurnTree {
    fn node(&mut self, parent: Option<TurnIx>) -> TurnIx {
        let ix = TurnIx::try_from(self.nodes.len())
            .ok()
            .filter(|ix| *ix != NO_PARENT)
            .expect("fewer than 2^32 - 1 turns in a run");
        self.nodes.push(Node {
            parent: parent.unwrap_or(NO_PARENT),
            fired: false,
        });
        ix
    }

    /// `agent` joined the tree, owned by `owner` (a child) or by nobody (a root,
    /// also one resumed after a restart): its first turn derives from its owner's
    /// current turn.
    pub fn spawn(&mut self, agent: &Name, owner: Option<&str>) {
        let base = owner.and_then(|o| self.agents.get(o)).map(|a| a.current);
        let current = self.node(base);
        self.agents.insert(agent.clone(), AgentTurns { base, current });
    }

    /// `agent` started a new turn, derived from the turn its first one derived from.
    pub fn new_turn(&mut self, agent: &str) {
        let Some(&AgentTurns { base, .. }) = self.agents.get(agent) else {
            return;
        };
        let current = self.node(base);
        if let Some(turns) = self.agents.get_mut(agent) {
            turns.current = current;
        }
    }

    /// `agent`'s current turn fired.
    pub fn fire(&mut self, agent: &str, fire: Fire) {
        if let Some(turns) = self.agents.get(agent) {
            let current = turns.current;
            self.nodes[current as usize].fired = true;
            self.fires.entry(current).or_default().push(fire);
        }
    }

    /// The turn `agent` is in now, if the log spawned it.
    pub fn current(&self, agent: &str) -> Option<TurnIx> {
        self.agents.get(agent).map(|a| a.current)
    }

    /// Whether `turn`, or a turn it derives from, has fired.
    pub fn fired(&self, turn: TurnIx) -> bool {
        self.chain(turn).any(|ix| self.nodes[ix as usize].fired)
    }

    /// Every firing of `turn` or of a turn it derives from, in no set order.
    pub fn fires(&self, turn: TurnIx) -> impl Iterator<Item = Fire> + '_ {
        (self.chain(turn))
            .filter(|ix| self.nodes[*ix as usize].fired)
            .filter_map(|ix| self.fires.get(&ix))
            .flat_map(|fires| fires.iter().copied())
    }

    /// `turn` and every turn it derives from, innermost first.
    fn chain(&self, turn: TurnIx) -> impl Iterator<Item = TurnIx> + '_ {
        let mut at = Some(turn);
        std::iter::from_fn(move || {
            let ix = at?;
            let parent = self.nodes[ix as usize].parent;
            at = (parent != NO_PARENT).then_some(parent);
            Some(ix)
        })
    }

    /// A process loss: every agent is gone (those that come back are spawned
    /// again as roots, with fresh turns); the turns of earlier calls stay.
    pub fn process_loss(&mut self) {
        self.agents.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fire(seq: u64) -> Fire {
        Fire { seq, t: seq as f64 }
    }

    #[test]
    fn a_signal_reaches_the_turns_derived_from_it_and_no_other() {
        let mut tree = TurnTree::default();
        tree.spawn(&"root".into(), None);
        tree.spawn(&"child".into(), Some("root"));
        tree.spawn(&"grandchild".into(), Some("child"));
        tree.spawn(&"other".into(), None);
        tree.fire("child", fire(5));
        let turn = |tree: &TurnTree, agent: &str| tree.current(agent).expect("spawned");
        assert!(!tree.fired(turn(&tree, "root")), "a signal does not go up");
        assert!(tree.fired(turn(&tree, "child")));
        assert!(tree.fired(turn(&tree, "grandchild")));
        assert!(!tree.fired(turn(&tree, "other")));
        let fires: Vec<Fire> = tree.fires(turn(&tree, "grandchild")).collect();
        assert_eq!(fires, [fire(5)]);
    }

    #[test]
    fn a_child_spawned_under_a_fired_turn_is_born_fired() {
        let mut tree = TurnTree::default();
        tree.spawn(&"root".into(), None);
        tree.fire("root", fire(2));
        tree.spawn(&"late".into(), Some("root"));
        assert!(tree.fired(tree.current("late").unwrap()));
    }

    #[test]
    fn a_new_turn_is_fresh_but_still_derives_from_the_owners_turn_at_spawn() {
        let mut tree = TurnTree::default();
        tree.spawn(&"root".into(), None);
        tree.spawn(&"child".into(), Some("root"));
        tree.fire("child", fire(3));
        let old = tree.current("child").unwrap();
        tree.new_turn("child");
        let new = tree.current("child").unwrap();
        assert!(tree.fired(old), "the earlier turn stays fired");
        assert!(!tree.fired(new), "a new turn starts unfired");
        tree.fire("root", fire(4));
        assert!(tree.fired(new), "it derives from the owner's turn at spawn");
        // A root's new turn derives from nothing: its old turn's signal is gone.
        tree.new_turn("root");
        assert!(!tree.fired(tree.current("root").unwrap()));
    }

    #[test]
    fn after_a_loss_agents_come_back_as_roots_with_fresh_turns() {
        let mut tree = TurnTree::default();
        tree.spawn(&"root".into(), None);
        tree.spawn(&"child".into(), Some("root"));
        let before = tree.current("child").unwrap();
        tree.fire("root", fire(2));
        tree.process_loss();
        assert_eq!(tree.current("child"), None);
        tree.spawn(&"child".into(), None);
        assert!(!tree.fired(tree.current("child").unwrap()));
        assert!(tree.fired(before), "a call of the earlier life keeps its turn");
        tree.fire("nobody", fire(9));
        tree.new_turn("nobody");
    }
}
