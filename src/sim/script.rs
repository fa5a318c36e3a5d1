//! Agent scripts: the simulated model loop of each agent, run as a task over its
//! [`AgentHandle`], exactly as a user's runtime would drive one.
//!
//! A script ends when its steps run out or its turn signal fires (SPEC §3.8): a
//! fired turn ends the current step (`work`, `join`, `await_answer`) and every
//! later one. The agent stays live: late answers still reach it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::agent::AgentHandle;
use crate::runtime::Runtime;
use crate::scenario::{AgentSpec, Step};
use crate::tool::{ErrorCode, Mode};

/// What every script of a run shares: the runtime, the live handles by name (for
/// scheduled events) and the final results.
pub struct World {
    /// The runtime of the current epoch.
    pub runtime: Mutex<Runtime>,
    /// Every agent spawned so far, by name.
    pub agents: Mutex<BTreeMap<String, AgentHandle>>,
    /// Final results of the scripts that ended, by agent.
    pub finals: Mutex<BTreeMap<String, Value>>,
    /// The spec of every agent (roots and children), for `on_resume`.
    pub specs: Mutex<BTreeMap<String, AgentSpec>>,
}

impl World {
    /// A world on `runtime`.
    pub fn new(runtime: Runtime) -> Arc<World> {
        Arc::new(World {
            runtime: Mutex::new(runtime),
            agents: Mutex::new(BTreeMap::new()),
            finals: Mutex::new(BTreeMap::new()),
            specs: Mutex::new(BTreeMap::new()),
        })
    }

    /// The runtime of the current epoch.
    pub fn runtime(&self) -> Runtime {
        self.runtime.lock().expect("world poisoned").clone()
    }
}

/// An agent's final result (SPEC §5), built as its script runs.
struct Final {
    agent: String,
    results: Map<String, Value>,
    unresolved: Vec<Value>,
}

impl Final {
    fn to_json(&self) -> Value {
        json!({"agent": self.agent, "results": self.results, "unresolved": self.unresolved})
    }
}

/// Starts `steps` for the agent behind `handle` as its own task. `pending` are the
/// agent's calls already pending (after a restart, its re-opened questions), for
/// `await_answer`. The script dies with the runtime's epoch (process loss).
pub fn spawn_script(
    world: Arc<World>,
    handle: AgentHandle,
    steps: Vec<Step>,
    pending: BTreeSet<String>,
) -> JoinHandle<Value> {
    let epoch = world.runtime().sched().epoch().clone();
    let script = Box::pin(run_script(world, handle, steps, pending));
    tokio::spawn(async move {
        tokio::select! {
            biased;
            _ = epoch.cancelled() => Value::Null,
            result = script => result,
        }
    })
}

async fn run_script(
    world: Arc<World>,
    handle: AgentHandle,
    steps: Vec<Step>,
    pending: BTreeSet<String>,
) -> Value {
    let turn = handle.turn().await.unwrap_or_else(|| {
        let dead = CancellationToken::new();
        dead.cancel();
        dead
    });
    let mut run = ScriptRun {
        final_: Final {
            agent: handle.name().to_owned(),
            results: Map::new(),
            unresolved: Vec::new(),
        },
        children: BTreeMap::new(),
        joined_unresolved: Vec::new(),
        pending,
        world,
        handle,
        turn,
    };
    for step in steps {
        if run.turn.is_cancelled() {
            break;
        }
        run.step(step).await;
    }
    let result = run.final_.to_json();
    run.world
        .finals
        .lock()
        .expect("world poisoned")
        .insert(run.final_.agent.clone(), result.clone());
    result
}

struct ScriptRun {
    final_: Final,
    children: BTreeMap<String, JoinHandle<Value>>,
    joined_unresolved: Vec<Value>,
    pending: BTreeSet<String>,
    world: Arc<World>,
    handle: AgentHandle,
    turn: CancellationToken,
}

impl ScriptRun {
    async fn step(&mut self, step: Step) {
        match step {
            Step::Ask { arguments } | Step::AskRaw { arguments } => self.ask(&arguments).await,
            Step::AskUnresolved { timeout } => {
                if let Some(arguments) = self.unresolved_arguments(timeout) {
                    self.ask(&arguments).await;
                }
            }
            Step::Work(s) => {
                let sched = self.world.runtime().sched().clone();
                tokio::select! {
                    biased;
                    _ = self.turn.cancelled() => {}
                    _ = sched.sleep(Duration::from_secs_f64(s)) => {}
                }
            }
            Step::Spawn(spec) => self.spawn(spec).await,
            Step::Join(name) => {
                let Some(child) = self.children.remove(&name) else {
                    return;
                };
                tokio::select! {
                    biased;
                    _ = self.turn.cancelled() => {}
                    joined = child => {
                        if let Ok(result) = joined
                            && let Some(unresolved) = result.get("unresolved").and_then(Value::as_array)
                        {
                            self.joined_unresolved.extend(unresolved.iter().cloned());
                        }
                    }
                }
            }
            Step::AwaitAnswer(call_id) => {
                if self.pending.contains(&call_id) {
                    tokio::select! {
                        biased;
                        _ = self.turn.cancelled() => {}
                        _ = self.handle.closed(&call_id) => {}
                    }
                }
            }
        }
    }

    async fn ask(&mut self, arguments: &str) {
        let outcome = self.handle.ask(arguments).await;
        let result: Value = serde_json::from_str(&outcome.result.text).unwrap_or(Value::Null);
        if result.get("pending") == Some(&Value::Bool(true)) {
            self.pending.insert(outcome.call_id.clone());
        }
        if outcome.result.error_code() == Some(ErrorCode::DelegatedCaller) {
            let questions = serde_json::from_str::<Value>(arguments)
                .ok()
                .and_then(|v| v.get("questions").cloned())
                .unwrap_or(Value::Null);
            self.final_
                .unresolved
                .push(json!({"callId": outcome.call_id, "questions": questions}));
        }
        self.final_.results.insert(outcome.call_id, result);
    }

    /// One call asking every question the joined children could not ask.
    fn unresolved_arguments(&self, timeout: Option<f64>) -> Option<String> {
        let questions: Vec<Value> = self
            .joined_unresolved
            .iter()
            .filter_map(|u| u.get("questions").and_then(Value::as_array))
            .flatten()
            .cloned()
            .collect();
        if questions.is_empty() {
            return None;
        }
        let mut arguments = Map::new();
        arguments.insert("questions".into(), Value::Array(questions));
        if let (Some(t), Mode::Timed) = (timeout, self.world.runtime().tool().mode) {
            arguments.insert("timeout".into(), json!(t));
        }
        Some(Value::Object(arguments).to_string())
    }

    async fn spawn(&mut self, spec: AgentSpec) {
        let Ok(child) = self.handle.spawn_child(&spec.name).await else {
            return;
        };
        register(&self.world, &child, &spec);
        let task = spawn_script(self.world.clone(), child, spec.script.clone(), BTreeSet::new());
        self.children.insert(spec.name, task);
    }
}

/// Records a spawned agent in the world, for scheduled events and `on_resume`.
pub fn register(world: &World, handle: &AgentHandle, spec: &AgentSpec) {
    world
        .agents
        .lock()
        .expect("world poisoned")
        .insert(spec.name.clone(), handle.clone());
    world
        .specs
        .lock()
        .expect("world poisoned")
        .insert(spec.name.clone(), spec.clone());
}
