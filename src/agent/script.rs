//! The simulated model loop: an agent's scenario steps, run one at a time.
//!
//! A step that waits (a call in flight, `work`, a `spawn` until the broker has
//! answered, `join`, `await_answer`) leaves the script parked until the message
//! it waits for arrives. A script ends when its steps run out or its turn fires
//! (SPEC §3.8): a fired turn ends `work`, `join`, `await_answer` and `spawn` waits
//! at once, and a call in flight when it fires ends the script as soon as its
//! (aborted) result is recorded. The agent stays live: late answers still reach it.

use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde_json::{Map, Value, json};

use super::{AgentState, Waiter, push_sized};
use crate::effect::{Out, Spawn};
use crate::final_result::{FinalResult, Got, Unasked, Unresolved};
use crate::protocol::{AgentMsg, CallId, Envelope, Name, SpawnError, TurnId, nanos};
use crate::scenario::{AgentSpec, Step};
use crate::tool::{ArgumentError, Ask, ErrorCode, Mode, ToolResult};

/// What a parked script waits for.
#[derive(Clone, Debug, PartialEq)]
enum Wait {
    Call(CallId),
    Work(usize),
    /// The broker's answer to the registration of the child at this place.
    Spawn(u32),
    /// The end of the child at this place.
    Join(u32),
    Closed(CallId),
}

/// A child spawned by this script.
#[derive(Debug)]
enum Child {
    /// The broker has not answered its registration yet.
    Starting,
    Running,
    /// Its script ended: what it could not ask (its final result's
    /// `unresolved`, none if empty), all a `join` takes from it.
    Ended(Option<Arc<[Unresolved]>>),
    Failed,
}

/// One run of an agent's `script` or `on_resume`.
#[derive(Debug)]
pub struct Script {
    /// The steps it runs: the agent's `script`, or its `on_resume`. Held here
    /// rather than through the agent's spec: a step is read at every advance,
    /// and the spec is one more allocation of each agent (a tree of 10^5 read
    /// a cold line of it at every step, on top of the script's own).
    steps: Arc<[Step]>,
    on_resume: bool,
    /// The next step's index: a script holds at most
    /// [`STEPS_MAX`](crate::scenario::STEPS_MAX) steps.
    pc: u32,
    wait: Option<Wait>,
    /// The arguments of the call in flight, for `unresolved` if it is delegated.
    asking: Option<Arc<str>>,
    /// The turn fired while a call was in flight: end once its result is in.
    ending: bool,
    /// Each call's result as the model got it, in the order they settled.
    results: Vec<(CallId, Got)>,
    /// What only a script that delegates, spawns or is cancelled gathers; most
    /// scripts never do, so it is boxed on first use (a tie of 10^5 roots holds
    /// 10^5 scripts).
    kin: Option<Box<Kin>>,
}

/// A script's delegated calls, spawn failures and children, and the turn that
/// ended it.
#[derive(Debug, Default)]
struct Kin {
    /// The turn whose firing ended (or is ending) the script: its owner hears it
    /// with the final result, and ends its own script first if that turn is one
    /// of its own (SPEC §3.8: a fired turn ends the whole tree at one instant, so
    /// no parent runs a step because a child ended of the same signal).
    fired: Option<TurnId>,
    unresolved: Vec<Unresolved>,
    errors: Vec<Value>,
    /// By place: the order of the spawns, which each child carries and names
    /// itself by when its script ends ([`AgentMsg::ChildEnded`]). A child's
    /// end was looked up by its name: at a tree of 10^5 that read the name's
    /// text (hashed, then compared) from an allocation no longer in the cache,
    /// twice a child.
    children: Vec<Child>,
    /// The place of the last child spawned under each name, for `join`, which
    /// names it (hashed: nothing reads it in order; a root of 10^5 children
    /// compared names at every level of a B-tree). Made from the script's own
    /// steps when it first joins, not at each spawn: a script runs its steps
    /// in order and every `spawn` step takes the next place, so the spawns
    /// before a `join` say every place it can name. A script that never joins
    /// (the cancel of a tree of 10^5) keeps no table, and one that does fills
    /// it in one pass instead of an insert (a cache miss at 10^5) per spawn.
    named: Named,
    joined_unresolved: Vec<Unresolved>,
}

/// The places of a script's children by name, as far as its steps are read.
///
/// Each spawn's name is kept by place, and a `join` first tries the place after
/// the one the last `join` found: a script that spawns its children and joins
/// them in the same order (the usual fan-out and fan-in) finds each by reading
/// the next entry of a list it reads in order. Only a `join` out of that order
/// makes the table by name, once, from the list. A scenario's names are unique
/// (its build refuses a name twice), so the place a name is found at is its
/// only one. At a root of 10^5 children, the table's 10^5 inserts and each
/// join's look-up were cache misses, one a child each (issue #19).
#[derive(Debug, Default)]
struct Named {
    /// Each `spawn` step's child, by place, among the steps read.
    names: Vec<Name>,
    /// Places by name: made at the first `join` that does not name `next`.
    places: Option<FxHashMap<Name, u32>>,
    /// The steps read so far (every one before it).
    read: u32,
    /// The place after the one the last `join` found.
    next: u32,
}

impl Named {
    /// The place of the child named `child` spawned before step `pc`.
    fn before(&mut self, steps: &[Step], pc: usize, child: &str) -> Option<u32> {
        for step in steps.get(self.read as usize..pc).unwrap_or_default() {
            if let Step::Spawn(spec) = step {
                let place =
                    u32::try_from(self.names.len()).expect("a script spawns at most STEPS_MAX children");
                if let Some(places) = &mut self.places {
                    places.insert(spec.name.clone(), place);
                }
                self.names.push(spec.name.clone());
            }
        }
        self.read = self
            .read
            .max(u32::try_from(pc).expect("a script holds at most STEPS_MAX steps"));
        let place = match self.names.get(self.next as usize) {
            Some(name) if name.as_str() == child => self.next,
            _ => {
                let names = &self.names;
                let places = self.places.get_or_insert_with(|| {
                    (names.iter().enumerate())
                        .map(|(place, name)| (name.clone(), place as u32))
                        .collect()
                });
                *places.get(child)?
            }
        };
        self.next = place + 1;
        Some(place)
    }
}

impl Script {
    /// The agent's `script`, or its `on_resume` after a restart.
    pub fn new(spec: &AgentSpec, on_resume: bool) -> Script {
        let steps = if on_resume { &spec.on_resume } else { &spec.script };
        Script {
            steps: steps.clone(),
            on_resume,
            pc: 0,
            wait: None,
            asking: None,
            ending: false,
            results: Vec::new(),
            kin: None,
        }
    }

    /// Its kin, boxed on first use.
    fn kin_mut(&mut self) -> &mut Kin {
        self.kin.get_or_insert_default()
    }

    fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The agent's final result (SPEC §5); `errors` only when a spawn failed.
    /// Taken once, when the script ends: what it gathered moves into it.
    fn final_result(&mut self, agent: &Name) -> FinalResult {
        let results = std::mem::take(&mut self.results);
        let (unresolved, errors) = match self.kin.as_deref_mut() {
            Some(kin) => (
                std::mem::take(&mut kin.unresolved),
                std::mem::take(&mut kin.errors),
            ),
            None => (Vec::new(), Vec::new()),
        };
        FinalResult::new(agent.clone(), results, unresolved, errors)
    }
}

impl AgentState {
    /// Runs the script from where it stands until a step waits or it ends.
    pub(super) fn advance(&mut self, out: &mut Out) {
        loop {
            let Some(script) = self.script.as_mut().filter(|s| s.wait.is_none()) else {
                return;
            };
            let Some(step) = script.steps().get(script.pc as usize).cloned() else {
                self.finish(out);
                return;
            };
            let pc = script.pc as usize;
            script.pc += 1;
            self.step(pc, step, out);
        }
    }

    fn step(&mut self, pc: usize, step: Step, out: &mut Out) {
        match step {
            Step::Ask { arguments } | Step::AskRaw { arguments } => {
                let prepared = self.prepared.prepare(self.tool, &arguments);
                self.script_call(arguments, prepared, out);
            }
            Step::AskUnresolved { timeout } => {
                if let Some(arguments) = self.unresolved_arguments(timeout) {
                    // Text of this call alone: validated here, not kept in the memo.
                    let prepared = self.tool.prepare(&arguments);
                    self.script_call(arguments.into(), prepared, out);
                }
            }
            Step::Work(s) => {
                let after = nanos(s);
                if after > 0 {
                    let timer = self.timer_id();
                    out.timer(
                        timer,
                        after,
                        Envelope::Agent(self.id, AgentMsg::WorkDone { step: pc }),
                    );
                    self.park(Wait::Work(pc));
                }
            }
            Step::Spawn(spec) => {
                let script = self.script.as_mut().expect("a step runs in a script");
                let kin = script.kin_mut();
                let place =
                    u32::try_from(kin.children.len()).expect("a script spawns at most STEPS_MAX children");
                kin.children.push(Child::Starting);
                out.spawn(Spawn {
                    spec,
                    owner: self.id,
                    turn: self.turn.clone(),
                    place,
                });
                self.park(Wait::Spawn(place));
            }
            Step::Join(child) => {
                let script = self.script.as_mut().expect("a step runs in a script");
                let steps = &script.steps;
                let kin = script.kin.as_deref_mut();
                let place = kin.and_then(|kin| {
                    let place = kin.named.before(steps, pc, child.as_str())?;
                    Some((place, kin.children.get(place as usize)?))
                });
                match place {
                    Some((place, Child::Starting | Child::Running)) => self.park(Wait::Join(place)),
                    Some((_, Child::Ended(Some(unresolved)))) => {
                        let unresolved = unresolved.clone();
                        self.take_unresolved(&unresolved);
                    }
                    Some((_, Child::Ended(None) | Child::Failed)) | None => {}
                }
            }
            Step::AwaitAnswer(n) => {
                let call_id = format!("{}/{n}", self.name);
                if self.is_pending_open(&call_id) {
                    self.park(Wait::Closed(call_id.into()));
                }
            }
        }
    }

    fn park(&mut self, wait: Wait) {
        if let Some(script) = self.script.as_mut() {
            script.wait = Some(wait);
        }
    }

    /// Continues the script if it waits for exactly `wait`.
    fn resume(&mut self, wait: &Wait, out: &mut Out) {
        let Some(script) = self.script.as_mut().filter(|s| s.wait.as_ref() == Some(wait)) else {
            return;
        };
        script.wait = None;
        if script.ending {
            self.finish(out);
        } else {
            self.advance(out);
        }
    }

    fn script_call(&mut self, arguments: Arc<str>, prepared: Result<Ask, ArgumentError>, out: &mut Out) {
        // Parked on before it is made: the call may settle as it is made.
        let call_id = self.next_call_id();
        self.park(Wait::Call(call_id.clone()));
        if let Some(script) = self.script.as_mut() {
            script.asking = Some(arguments.clone());
        }
        self.call_as(call_id, prepared, Waiter::Script, out);
    }

    /// A call of the script settled: its result goes into the final result.
    pub(super) fn script_settled(&mut self, call_id: CallId, result: ToolResult, out: &mut Out) {
        let delegated = result.error_code() == Some(ErrorCode::DelegatedCaller);
        // The text itself, not a copy (a tie settles every call at one instant,
        // and each result would be held twice there), or none for the tool's
        // own `pending`.
        let value = Got::new(&call_id, result);
        self.script_got(call_id, value, delegated, out);
    }

    /// A call of the script settled as `value` (`delegated`: refused as
    /// `DELEGATED_CALLER`, whose questions join the unresolved).
    pub(super) fn script_got(&mut self, call_id: CallId, value: Got, delegated: bool, out: &mut Out) {
        let Some(script) = self.script.as_mut() else {
            return;
        };
        let arguments = script.asking.take();
        if delegated {
            let questions = serde_json::from_str::<Value>(arguments.as_deref().unwrap_or_default())
                .ok()
                .and_then(|v| v.get("questions").cloned())
                .unwrap_or(Value::Null);
            (script.kin_mut().unresolved).push(Unresolved::new(call_id.clone(), &questions));
        }
        push_sized(&mut script.results, (call_id.clone(), value));
        self.resume(&Wait::Call(call_id), out);
    }

    pub(super) fn script_closed(&mut self, call_id: &CallId, out: &mut Out) {
        self.resume(&Wait::Closed(call_id.clone()), out);
    }

    pub(super) fn work_done(&mut self, step: usize, out: &mut Out) {
        self.resume(&Wait::Work(step), out);
    }

    pub(super) fn spawned(&mut self, child: Name, result: Result<(), SpawnError>, out: &mut Out) {
        let Some(script) = self.script.as_mut() else {
            return;
        };
        // The answer is to the spawn the script waits on: a script waits for
        // each spawn's answer before its next step, and one that ended (its
        // turn fired) has no script to answer.
        let Some(Wait::Spawn(place)) = script.wait else {
            return;
        };
        let Some(kin) = script.kin.as_deref_mut() else {
            return;
        };
        let Some(entry) = kin.children.get_mut(place as usize) else {
            return;
        };
        match result {
            Ok(()) => {
                if matches!(entry, Child::Starting) {
                    *entry = Child::Running;
                }
            }
            Err(error) => {
                *entry = Child::Failed;
                kin.errors.push(json!({
                    "spawn": child.as_ref(),
                    "error": {"code": error.as_str(), "message": error.to_string()},
                }));
            }
        }
        self.resume(&Wait::Spawn(place), out);
    }

    /// The child spawned at `place` ended its script.
    pub(super) fn child_ended(&mut self, place: u32, unasked: &Unasked, out: &mut Out) {
        // A script that is ending (its turn fired during a call) runs no step
        // again, so nothing will read what its children left: the cancel of a
        // tree of 10^5 looked each child up in its owner's table for nothing.
        let Some(script) = self.script.as_mut().filter(|s| !s.ending) else {
            return;
        };
        let unresolved = unasked.shared();
        if let Some(entry) = script
            .kin
            .as_deref_mut()
            .and_then(|kin| kin.children.get_mut(place as usize))
        {
            *entry = Child::Ended(unresolved.clone());
        }
        if script.wait == Some(Wait::Join(place)) {
            if let Some(unresolved) = &unresolved {
                self.take_unresolved(unresolved);
            }
            self.resume(&Wait::Join(place), out);
        }
    }

    /// What a joined child could not ask, for `ask_unresolved`.
    fn take_unresolved(&mut self, unresolved: &[Unresolved]) {
        if let Some(script) = self.script.as_mut().filter(|_| !unresolved.is_empty()) {
            script
                .kin_mut()
                .joined_unresolved
                .extend(unresolved.iter().cloned());
        }
    }

    /// The turn fired: the script ends now, or once the call in flight settles.
    pub(super) fn turn_fired(&mut self, turn: TurnId, out: &mut Out) {
        let Some(script) = self.script.as_mut() else {
            return;
        };
        match script.wait {
            Some(Wait::Call(_)) => {
                script.kin_mut().fired = Some(turn);
                script.ending = true;
            }
            // Ends now: the turn goes straight to the owner's message, with no
            // `Kin` boxed to hold it for the moment (a tree of 10^5 children
            // boxed one each at its cancel, only to drop it at once).
            _ => self.end(Some(turn), out),
        }
    }

    fn finish(&mut self, out: &mut Out) {
        self.end(None, out);
    }

    /// Ends the script; `fired` is the turn whose firing ends it now, if one
    /// does (else the one it kept while a call was in flight, if any).
    fn end(&mut self, fired: Option<TurnId>, out: &mut Out) {
        let Some(script) = self.script.as_mut() else {
            return;
        };
        let final_result = script.final_result(&self.name);
        let is_child_script = !script.on_resume;
        let fired = fired.or_else(|| script.kin.as_ref().and_then(|kin| kin.fired));
        // A script that ends while it works (its turn fired) has no use for
        // its work's timer: left in the queue, it kept a run going to the
        // timer's time although nothing could change any more (SPEC §5).
        if matches!(script.wait, Some(Wait::Work(_))) {
            out.cancel(self.last_timer());
        }
        // An ended script is dropped: what reaches the agent after it (a late
        // result, a close, a child's end, its turn's signal) finds no script and
        // changes nothing, as it changed nothing in an ended one.
        self.script = None;
        let Some(owner) = self.owner.map(|owner| owner.get()).filter(|_| is_child_script) else {
            out.finished(self.name.clone(), final_result);
            return;
        };
        let unasked = final_result.unasked();
        out.finished(self.name.clone(), final_result);
        out.tell_agent(
            owner,
            AgentMsg::ChildEnded {
                place: self.place,
                unasked,
                fired,
            },
        );
    }

    /// One call asking every question the joined children could not ask.
    fn unresolved_arguments(&self, timeout: Option<f64>) -> Option<String> {
        let script = self.script.as_ref()?;
        let questions: Vec<Value> = script
            .kin
            .iter()
            .flat_map(|kin| &kin.joined_unresolved)
            .filter_map(|u| serde_json::from_str::<Vec<Value>>(u.questions().get()).ok())
            .flatten()
            .collect();
        if questions.is_empty() {
            return None;
        }
        let mut arguments = Map::new();
        arguments.insert("questions".into(), Value::Array(questions));
        if let (Some(t), Mode::Timed) = (timeout, self.tool.mode) {
            arguments.insert("timeout".into(), json!(t));
        }
        Some(Value::Object(arguments).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The steps of a root that spawns `a`, `b`, `c`, then joins as `joins` say.
    fn steps(joins: &[&str]) -> Arc<[Step]> {
        let spawn = |name: &str| format!(r#"{{"spawn": {{"name": "{name}", "script": [{{"work": 1.0}}]}}}}"#);
        let join = |name: &&str| format!(r#"{{"join": "{name}"}}"#);
        let script: Vec<String> = ["a", "b", "c"]
            .map(spawn)
            .into_iter()
            .chain(joins.iter().map(join))
            .collect();
        let text = format!(
            r#"{{"name": "n", "agents": [{{"name": "root", "script": [{}]}}]}}"#,
            script.join(",")
        );
        let scenario = crate::scenario::parse("inline", &text).unwrap_or_else(|e| panic!("{e}"));
        scenario.agents[0].script.clone()
    }

    #[test]
    fn joins_in_spawn_order_find_their_places_without_the_table() {
        let steps = steps(&["a", "b", "c"]);
        let mut named = Named::default();
        for (place, child) in ["a", "b", "c"].iter().enumerate() {
            assert_eq!(
                named.before(&steps, 3 + place, child),
                Some(place as u32),
                "{child}"
            );
        }
        assert!(named.places.is_none(), "joins in order make no table");
    }

    #[test]
    fn a_join_out_of_order_finds_its_place_through_the_table() {
        let steps = steps(&["c", "a", "b", "a"]);
        let mut named = Named::default();
        assert_eq!(named.before(&steps, 3, "c"), Some(2), "c first: out of order");
        assert!(named.places.is_some());
        assert_eq!(
            named.before(&steps, 4, "a"),
            Some(0),
            "after c, a is out of order too"
        );
        assert_eq!(named.before(&steps, 5, "b"), Some(1));
        assert_eq!(named.before(&steps, 6, "a"), Some(0), "joined again");
        assert_eq!(named.before(&steps, 6, "d"), None, "never spawned");
    }

    #[test]
    fn a_join_sees_only_the_spawns_before_it() {
        let steps = steps(&["c"]);
        let mut named = Named::default();
        // Read up to step 2 (`a` and `b` spawned): `c` is not a child yet.
        assert_eq!(named.before(&steps, 2, "c"), None);
        assert_eq!(named.before(&steps, 3, "c"), Some(2), "spawned by step 3");
        // A table made before a spawn is read learns it as the steps are read.
        let mut named = Named::default();
        assert_eq!(
            named.before(&steps, 2, "b"),
            Some(1),
            "b, out of order: the table"
        );
        assert_eq!(named.before(&steps, 3, "a"), Some(0));
        assert_eq!(
            named.before(&steps, 3, "c"),
            Some(2),
            "learnt after the table was made"
        );
    }
}
