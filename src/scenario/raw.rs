//! The file's shapes as serde reads them, before expansion and checks.
//!
//! Every struct denies unknown fields, and every enum is externally tagged: serde
//! reads them straight from the text without buffering, so its errors keep their
//! line and column (untagged and flattened shapes would lose them). A latency has
//! its own visitor ([`LatencyVisitor`]) for the same reason.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{MapAccess, Visitor, value::MapAccessDeserializer};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{Accepts, AnswerPolicy, Clock, Latency};
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a scenario object")]
pub(super) struct RawScenario {
    /// Ignored: lets an editor find a schema of the format.
    #[serde(rename = "$schema")]
    pub _schema: Option<String>,
    pub name: String,
    #[serde(default)]
    pub about: String,
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub clock: Option<Clock>,
    #[serde(default)]
    pub tool: Option<Value>,
    /// A [`super::Strategy`], parsed in `build.rs` (where its error gets a path).
    #[serde(default)]
    pub explore: Option<String>,
    #[serde(default)]
    pub broker: Option<Obj<RawBroker>>,
    #[serde(default)]
    pub answerers: Vec<Obj<RawAnswerer>>,
    #[serde(default)]
    pub agents: Vec<Obj<RawAgent>>,
    #[serde(default)]
    pub events: Vec<Obj<RawEvent>>,
    #[serde(default)]
    pub jitter: Option<Obj<RawJitter>>,
    #[serde(default)]
    pub limits: Option<Obj<RawLimits>>,
    #[serde(default)]
    pub expect: Option<Obj<RawExpect>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "{\"offer_timeout\": s}")]
pub(super) struct RawBroker {
    pub offer_timeout: Option<f64>,
    pub open_calls_max: Option<u64>,
    pub agents_per_tree_max: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "an answerer object")]
pub(super) struct RawAnswerer {
    pub name: String,
    pub count: Option<u64>,
    pub accepts: Accepts,
    pub offer_latency: Option<RawLatency>,
    /// May be left out when `accepts` is `"none"`.
    pub latency: Option<RawLatency>,
    /// May be left out when `accepts` is `"none"`.
    pub answer: Option<AnswerPolicy>,
    pub hold: Option<Obj<RawHold>>,
    pub faults: Option<Obj<RawFaults>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "{\"after\": s}")]
pub(super) struct RawHold {
    pub after: f64,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "{\"crash_at\": t} or {\"crash_after_accepts\": n}"
)]
pub(super) struct RawFaults {
    pub crash_at: Option<f64>,
    pub crash_after_accepts: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "an agent object")]
pub(super) struct RawAgent {
    pub name: String,
    pub count: Option<u64>,
    pub lineage: Option<Obj<RawLineage>>,
    #[serde(default)]
    pub script: Vec<RawStep>,
    #[serde(default)]
    pub on_resume: Vec<RawStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "{\"parent\": name}")]
pub(super) struct RawLineage {
    pub parent: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case", expecting = "a script step")]
pub(super) enum RawStep {
    Ask(Value),
    AskRaw(Value),
    AskUnresolved(Obj<RawAskUnresolved>),
    Work(f64),
    Spawn(Obj<RawSpawn>),
    Join(String),
    AwaitAnswer(String),
    Repeat(Obj<RawRepeat>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "{\"timeout\": t}")]
pub(super) struct RawAskUnresolved {
    pub timeout: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "{\"name\": …, \"script\": […]}")]
pub(super) struct RawSpawn {
    pub name: String,
    #[serde(default)]
    pub script: Vec<RawStep>,
    #[serde(default)]
    pub on_resume: Vec<RawStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "{\"times\": n, \"script\": […]}")]
pub(super) struct RawRepeat {
    pub times: u64,
    pub script: Vec<RawStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "an event object")]
pub(super) struct RawEvent {
    pub at: f64,
    pub cancel_turn: Option<String>,
    pub cancel_call: Option<String>,
    pub process_loss: Option<Obj<RawProcessLoss>>,
    pub stop_agent: Option<String>,
    pub crash_answerer: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "{\"restart_after\": s}")]
pub(super) struct RawProcessLoss {
    pub restart_after: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "{\"max\": s}")]
pub(super) struct RawJitter {
    pub max: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "{\"virtual_s_max\": s, \"events_max\": n}")]
pub(super) struct RawLimits {
    pub virtual_s_max: Option<f64>,
    pub events_max: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "an expect object")]
pub(super) struct RawExpect {
    #[serde(default)]
    pub results: BTreeMap<String, Value>,
    #[serde(default)]
    pub user_messages: BTreeMap<String, Vec<Value>>,
    #[serde(default)]
    pub counts: BTreeMap<String, u64>,
    #[serde(default)]
    pub final_results: BTreeMap<String, Value>,
}
