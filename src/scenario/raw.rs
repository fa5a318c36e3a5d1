//! The file's shapes as serde reads them, before expansion and checks.
//!
//! Every struct denies unknown fields, and every enum is externally tagged: serde
//! reads them straight from the text without buffering, so its errors keep their
//! line and column (untagged and flattened shapes would lose them). A latency has
//! its own visitor ([`LatencyVisitor`]) for the same reason.
//!
//! The JSON Schema of the format ([`super::json_schema`]) is derived from these same
//! shapes, so the two cannot drift apart; the doc comments below are its
//! descriptions. It states the shapes (keys, types, forms); the checks that need the
//! whole file (names, references, bounds that depend on `limits`) stay in
//! `build.rs`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{MapAccess, Visitor, value::MapAccessDeserializer};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use super::{Accepts, AnswerPolicy, Clock, Latency, PROCESS_WORDS_MAX, VIRTUAL_S_MAX_MAX};
use crate::limits::{AGENTS_PER_TREE_MAX, OPEN_CALLS_MAX};
use crate::policy::{LatencyVisitor, Written};

/// A struct read from a JSON object only. serde's derived structs also accept an
/// array of their fields in order (`"broker": [1.0]`), which a scenario must refuse
/// as a wrong type; this wrapper asks the deserializer for a map.
pub(super) struct Obj<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjVisitor<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(ObjVisitor(PhantomData)).map(Obj)
    }
}

/// Hand-written: `Obj<T>` is `T` as a schema (the schema of a struct is already an
/// object; only serde's array form is refused, and the schema never allowed it).
impl<T: JsonSchema> JsonSchema for Obj<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }

    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

/// A latency and how it was written (a bare number or not), for error paths.
pub(super) struct RawLatency {
    pub latency: Latency,
    pub written: Written,
}

impl<'de> Deserialize<'de> for RawLatency {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (latency, written) = deserializer.deserialize_any(LatencyVisitor)?;
        Ok(RawLatency { latency, written })
    }
}

/// An asksim scenario (SPEC §5): answerers, agents and their scripts, scheduled
/// events, and what the run must produce.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a scenario object")]
#[schemars(rename = "Scenario", title = "asksim scenario")]
pub(super) struct RawScenario {
    /// Ignored: lets an editor find this schema (`"./asksim-scenario.schema.json"`).
    #[serde(rename = "$schema")]
    pub _schema: Option<String>,
    /// The scenario's name (non-empty; logged in the log header).
    pub name: String,
    /// What it exercises, for humans.
    #[serde(default)]
    pub about: String,
    /// The seed of the run's one random generator (default 0; `--seed` overrides it).
    #[serde(default)]
    pub seed: u64,
    /// `"virtual"` (default; deterministic) or `"real"` (`--clock` overrides it).
    #[serde(default)]
    pub clock: Option<Clock>,
    /// The plugin row: `{"mode": "legacy" | "timed", "timeout": s}`; absent: legacy.
    // `skip_serializing_if` only tells schemars that the key is optional and shows
    // no default (a `schema_with` field is required otherwise); nothing serialises.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "tool_schema")]
    pub tool: Option<Value>,
    /// The scheduling strategy: `"random"` (default), `"fifo"` or `"pct:D"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::explore::schema")]
    pub explore: Option<String>,
    /// Broker settings.
    #[serde(default)]
    pub broker: Option<Obj<RawBroker>>,
    /// The waterfall, in order.
    #[serde(default)]
    pub answerers: Vec<Obj<RawAnswerer>>,
    /// The root agents.
    #[serde(default)]
    pub agents: Vec<Obj<RawAgent>>,
    /// Scheduled events.
    #[serde(default)]
    pub events: Vec<Obj<RawEvent>>,
    /// A seeded random delay on every message between actors (virtual clock).
    #[serde(default)]
    pub jitter: Option<Obj<RawJitter>>,
    /// When a run stops; also the bound on every time in the file.
    #[serde(default)]
    pub limits: Option<Obj<RawLimits>>,
    /// What the run must produce.
    #[serde(default)]
    pub expect: Option<Obj<RawExpect>>,
}

/// The schema of `tool`: the plugin row is checked by the tool's own config code
/// (`ToolConfig::from_json`), which reads a JSON value; this states its shape.
fn tool_schema(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({
        "description": "The plugin row (SPEC §2.1); absent (or null): the legacy tool.",
        "type": ["object", "null"],
        "properties": {
            "mode": { "enum": ["legacy", "timed"] },
            "timeout": { "type": "number" }
        },
        "additionalProperties": false
    })
}

/// Broker settings.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "{\"offer_timeout\": s}")]
#[schemars(rename = "Broker")]
pub(super) struct RawBroker {
    /// Seconds an answerer has to reply to an offer before it counts as declining
    /// (default 1).
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub offer_timeout: Option<f64>,
    /// Most open calls at once; one more is LIMIT_EXCEEDED (default: the broker's).
    #[schemars(range(min = 1, max = OPEN_CALLS_MAX))]
    pub open_calls_max: Option<u64>,
    /// Most agents in one tree, stopped ones included; one more is LIMIT_EXCEEDED
    /// (default: the broker's).
    #[schemars(range(min = 1, max = AGENTS_PER_TREE_MAX))]
    pub agents_per_tree_max: Option<u64>,
}

/// One answerer of the waterfall (`count` with `{i}` in the name fans it out).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "an answerer object")]
#[schemars(rename = "Answerer", transform = answerer_rules)]
pub(super) struct RawAnswerer {
    /// Its unique name.
    pub name: String,
    /// How many copies of this row, `{i}` in the name counting from 0.
    #[schemars(range(min = 1))]
    pub count: Option<u64>,
    /// An answerer outside asksim: the command (program and arguments) of a
    /// process speaking PROTOCOL.md; it takes no policy keys.
    #[schemars(length(min = 1, max = PROCESS_WORDS_MAX))]
    pub process: Option<Vec<String>>,
    /// Which requests it accepts (required unless `process`).
    pub accepts: Option<Accepts>,
    /// From an offer to its accept or decline (default 0).
    #[schemars(with = "Option<Latency>")]
    pub offer_latency: Option<RawLatency>,
    /// From its accept to its submit; may be left out when `accepts` is `"none"`.
    #[schemars(with = "Option<Latency>")]
    pub latency: Option<RawLatency>,
    /// What it answers; may be left out when `accepts` is `"none"`.
    pub answer: Option<AnswerPolicy>,
    /// Holds the window this many seconds after its accept.
    pub hold: Option<Obj<RawHold>>,
    /// When it dies.
    pub faults: Option<Obj<RawFaults>>,
}

/// A `process` answerer takes no policy keys; any other needs `accepts`, and
/// `latency` and `answer` unless `accepts` is `"none"` (the answerer never
/// accepts, so it never uses them).
fn answerer_rules(schema: &mut Schema) {
    let policy_keys = ["accepts", "offer_latency", "latency", "answer", "hold", "faults"];
    let none_of: Vec<_> = policy_keys.iter().map(|k| json!({ "required": [k] })).collect();
    schema.insert("if".into(), json!({ "required": ["process"] }));
    schema.insert("then".into(), json!({ "not": { "anyOf": none_of } }));
    schema.insert(
        "else".into(),
        json!({
            "required": ["accepts"],
            "if": { "properties": { "accepts": { "const": "none" } } },
            "else": { "required": ["latency", "answer"] }
        }),
    );
}

/// Holds the caller's window.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "{\"after\": s}")]
#[schemars(rename = "Hold")]
pub(super) struct RawHold {
    /// Seconds after its accept.
    #[schemars(range(min = 0))]
    pub after: f64,
}

/// When an answerer dies.
#[derive(Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "{\"crash_at\": t} or {\"crash_after_accepts\": n}"
)]
#[schemars(rename = "Faults")]
pub(super) struct RawFaults {
    /// At this run time, in seconds.
    #[schemars(range(min = 0))]
    pub crash_at: Option<f64>,
    /// Right after its n-th accept (n ≥ 1).
    #[schemars(range(min = 1))]
    pub crash_after_accepts: Option<u64>,
}

/// A root agent (`count` with `{i}` in the name fans it out).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "an agent object")]
#[schemars(rename = "Agent")]
pub(super) struct RawAgent {
    /// Its unique name.
    pub name: String,
    /// How many copies of this row, `{i}` in the name counting from 0.
    #[schemars(range(min = 1))]
    pub count: Option<u64>,
    /// The durable record of who spawned it (free text, never checked).
    pub lineage: Option<Obj<RawLineage>>,
    /// Its steps, run in order.
    #[serde(default)]
    pub script: Vec<RawStep>,
    /// The script it runs after a restart.
    #[serde(default)]
    pub on_resume: Vec<RawStep>,
}

/// Who spawned a root.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "{\"parent\": name}")]
#[schemars(rename = "Lineage")]
pub(super) struct RawLineage {
    /// The parent's name, free text.
    pub parent: String,
}

/// One script step: an object with exactly one key.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", expecting = "a script step")]
#[schemars(rename = "Step")]
pub(super) enum RawStep {
    /// A tool call: `{"questions": […], "timeout": t}`, passed as written.
    Ask(Value),
    /// A tool call with any JSON as arguments, verbatim (for bad-input tests).
    AskRaw(Value),
    /// One call asking the unresolved questions of the children joined so far.
    AskUnresolved(Obj<RawAskUnresolved>),
    /// Independent work, in seconds.
    Work(#[schemars(range(min = 0))] f64),
    /// Starts a child owned by this agent and goes on at once.
    Spawn(Obj<RawSpawn>),
    /// Waits for this child's script to end and takes its final result.
    Join(String),
    /// Waits until this call of this agent (`"<agent>/<n>"`) is settled for good.
    AwaitAnswer(String),
    /// The script, this many times; `{r}` in spawned names is the repetition.
    Repeat(Obj<RawRepeat>),
}

/// `ask_unresolved`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "{\"timeout\": t}")]
#[schemars(rename = "AskUnresolved")]
pub(super) struct RawAskUnresolved {
    /// The call's timeout: positive seconds up to 86,400, or -1.
    pub timeout: Option<f64>,
}

/// A child agent.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "{\"name\": …, \"script\": […]}")]
#[schemars(rename = "Spawn")]
pub(super) struct RawSpawn {
    /// Its unique name.
    pub name: String,
    /// Its steps, run in order.
    #[serde(default)]
    pub script: Vec<RawStep>,
    /// The script it runs after a restart.
    #[serde(default)]
    pub on_resume: Vec<RawStep>,
}

/// A repeated block.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "{\"times\": n, \"script\": […]}")]
#[schemars(rename = "Repeat")]
pub(super) struct RawRepeat {
    /// How many times (0 drops the block).
    pub times: u64,
    /// The steps repeated.
    pub script: Vec<RawStep>,
}

/// A scheduled event: `at` and exactly one action.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "an event object")]
#[schemars(rename = "Event")]
pub(super) struct RawEvent {
    /// When, in run seconds.
    #[schemars(range(min = 0))]
    pub at: f64,
    /// Fires this agent's turn signal.
    pub cancel_turn: Option<String>,
    /// Cancels this call (`"<agent>/<n>"`).
    pub cancel_call: Option<String>,
    /// The whole runtime dies and restarts.
    pub process_loss: Option<Obj<RawProcessLoss>>,
    /// Stops this agent.
    pub stop_agent: Option<String>,
    /// Crashes this answerer.
    pub crash_answerer: Option<String>,
}

/// A process loss.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "{\"restart_after\": s}")]
#[schemars(rename = "ProcessLoss")]
pub(super) struct RawProcessLoss {
    /// Seconds until the restart.
    #[schemars(range(min = 0))]
    pub restart_after: f64,
}

/// Message jitter.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "{\"max\": s}")]
#[schemars(rename = "Jitter")]
pub(super) struct RawJitter {
    /// The largest delay, in seconds.
    #[schemars(range(min = 0))]
    pub max: f64,
}

/// When a run stops.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "{\"virtual_s_max\": s, \"events_max\": n}")]
#[schemars(rename = "Limits")]
pub(super) struct RawLimits {
    /// Most virtual seconds (default 86,400, at most 10^9); also the bound on every
    /// other time in the file.
    #[schemars(range(max = VIRTUAL_S_MAX_MAX), extend("exclusiveMinimum" = 0))]
    pub virtual_s_max: Option<f64>,
    /// Most logged events (default 10,000,000).
    #[schemars(range(min = 1))]
    pub events_max: Option<u64>,
}

/// What the run must produce.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "an expect object")]
#[schemars(rename = "Expect")]
pub(super) struct RawExpect {
    /// callId → the exact result JSON (an error's `message` may be left out).
    #[serde(default)]
    pub results: BTreeMap<String, Value>,
    /// Agent → the user messages it receives, in order.
    #[serde(default)]
    pub user_messages: BTreeMap<String, Vec<Value>>,
    /// Outcome name or error code → count.
    #[serde(default)]
    pub counts: BTreeMap<String, u64>,
    /// Agent → its final result.
    #[serde(default)]
    pub final_results: BTreeMap<String, Value>,
}
