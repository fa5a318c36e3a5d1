//! What one run produced, before anyone judged or showed it: the recording, the
//! final results, the calls still open, and why it stopped. The engine fills it in;
//! what a watcher of the run concluded rides along as `V` (the judging room's
//! verdict), so this room never needs to know what a verdict is.

use std::collections::BTreeMap;

use crate::projection::Projection;
use crate::record::Recording;
use crate::scenario::{Clock, Strategy};
use crate::wire::{Endpoint, ProcessFailure};

/// Why a run stopped short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// Work was still due at `limits.virtual_s_max`.
    VirtualSMax,
    /// The log reached `limits.events_max`.
    EventsMax,
}

impl Limit {
    /// The limit's name in the scenario format and the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::VirtualSMax => "virtual_s_max",
            Limit::EventsMax => "events_max",
        }
    }
}

/// What the log's `end` event says stopped a run: a crash (of the run, or of an
/// outside process it drove), the limit that stopped it, or nothing (`done`).
pub fn end_reason(limit: Option<Limit>, crashed: bool) -> &'static str {
    match limit {
        _ if crashed => "crashed",
        Some(limit) => limit.as_str(),
        None => "done",
    }
}

/// What a run produced; `V` is what the run's watcher concluded at its end.
#[derive(Clone, Debug)]
pub struct Output<V> {
    /// The seed the run used.
    pub seed: u64,
    /// The clock it ran on.
    pub clock: Clock,
    /// The scheduling strategy it ran under.
    pub strategy: Strategy,
    /// The recording: hashes, the projection and (when kept) every event.
    pub recording: Recording,
    /// Final results of the scripts that ended, by agent, as compact JSON text.
    /// Found by hash; read in name order (`iter`, serialisation) by a sort: a
    /// run's end no longer sorts 10^5 names it is never asked for in order.
    pub finals: crate::sim::engine::finals::Finals,
    /// Calls still open at the end: callId → `"waiting"` or `"pending"`.
    pub open: BTreeMap<String, &'static str>,
    /// How the calls the broker closed in its last life closed, when the engine
    /// could read them (`crate::protocol::BrokerStatus::closed`).
    pub closed: Option<BTreeMap<String, &'static str>>,
    /// The limit that stopped the run, if one did.
    pub limit: Option<Limit>,
    /// The panic that ended the run, if one did.
    pub crashed: Option<String>,
    /// The outside process that failed the run, if one did (PROTOCOL.md
    /// "Failures"): the run ended there.
    pub process_failed: Option<Box<ProcessFailure>>,
    /// The outside broker the run spoke to, if its broker was not asksim's.
    pub broker: Option<Endpoint>,
    /// Seconds on the run's clock until nothing changed any more.
    pub virtual_s: f64,
    /// Seconds of wall time the run took.
    pub wall_s: f64,
    /// Scheduling choices the run made (deliveries picked among ties).
    pub choices: u64,
    /// What the run's watcher concluded (virtual clock; a real-clock run is
    /// judged from its kept events afterwards).
    pub checked: Option<V>,
}

impl<V> Output<V> {
    /// Every event, when they were kept.
    pub fn events(&self) -> &[crate::event::Event] {
        &self.recording.events
    }

    /// The projection folded from the run's log.
    pub fn projection(&self) -> &Projection {
        &self.recording.projection
    }

    /// The broker's final state, as far as the engine read it.
    pub fn broker(&self) -> crate::protocol::BrokerStatus {
        crate::protocol::BrokerStatus {
            open: self.open.clone(),
            closed: self.closed.clone(),
        }
    }
}
