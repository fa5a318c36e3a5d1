//! The first tool result of each call a scenario's `expect.results` names, kept
//! as the run's events stream by: the exact text the model was handed. The
//! streaming analysis feeds it, the expectations read it; it knows neither.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::event::{Event, EventKind};
use crate::scenario::Scenario;

/// The first tool result of each call the scenario's `expect.results` names: the
/// exact text the model saw, as its `result` event recorded it. Kept for those
/// calls only, as the events stream by (a run keeps no event list for this).
#[derive(Clone, Debug, Default)]
pub struct FirstResults {
    wanted: BTreeSet<String>,
    texts: BTreeMap<String, String>,
}

impl FirstResults {
    /// A collector of the results `scenario` expects.
    pub fn new(scenario: &Scenario) -> FirstResults {
        let wanted = scenario
            .expect
            .as_ref()
            .map(|e| e.results.keys().cloned().collect())
            .unwrap_or_default();
        FirstResults {
            wanted,
            texts: BTreeMap::new(),
        }
    }

    /// The first results `scenario` expects, from a run's kept `events`.
    pub fn of(scenario: &Scenario, events: &[Event]) -> FirstResults {
        let mut results = FirstResults::new(scenario);
        events.iter().for_each(|e| results.visit(e));
        results
    }

    /// Takes one more event.
    pub fn visit(&mut self, event: &Event) {
        if let EventKind::Result { call_id, result, .. } = &event.kind
            && self.wanted.contains(&**call_id)
            && !self.texts.contains_key(&**call_id)
        {
            self.texts.insert(call_id.to_string(), result.clone());
        }
    }

    /// The first result of `call_id`, as JSON (null if it had none, or if its
    /// text was not JSON).
    pub fn get(&self, call_id: &str) -> Value {
        self.texts.get(call_id).map_or(Value::Null, |text| {
            serde_json::from_str(text).unwrap_or(Value::Null)
        })
    }
}
