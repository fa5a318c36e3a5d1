//! The streaming analysis of a run: the invariant checker (with protocol
//! conformance) and the race coverage pass watch every event as the recorder
//! writes it, so a run keeps no event list for its verdict. Its result is the same
//! as [`crate::sim::judge::invariants::check`] and [`crate::sim::judge::coverage::coverage`] over
//! the kept events would give (a test holds them equal on every scenario); only the
//! memory differs: a 10,000-call run no longer holds its 100,000 events.

use std::any::Any;

use crate::event::Event;
use crate::projection::Projection;
use crate::protocol::BrokerStatus;
use crate::record::Observer;
use crate::scenario::Scenario;
use crate::sim::engine::driver::Watch;
use crate::sim::judge::coverage::{Coverage, Pass};
use crate::sim::judge::first_results::FirstResults;
use crate::sim::judge::invariants::{Checker, Violation};

/// The checker, the coverage pass and the expected results, fed one event at a
/// time.
pub struct Analysis {
    checker: Checker,
    coverage: Pass,
    first_results: FirstResults,
}

/// What the analysis concluded.
#[derive(Clone, Debug, Default)]
pub struct Checked {
    /// Every violation, by `seq`.
    pub violations: Vec<Violation>,
    /// Which named races the run reached.
    pub coverage: Coverage,
    /// The first result of each call the scenario expects one of.
    pub first_results: FirstResults,
}

impl Analysis {
    /// An analysis of a run of `scenario`, counting times within `tolerance_s` as
    /// one instant.
    pub fn new(scenario: &Scenario, tolerance_s: f64) -> Analysis {
        Analysis {
            checker: Checker::new(tolerance_s),
            coverage: Pass::new(scenario),
            first_results: FirstResults::new(scenario),
        }
    }
}

impl Watch for Analysis {
    type Verdict = Checked;

    /// The verdict, given the broker's final state and the projection the
    /// recorder folded from the same events.
    fn conclude(self, broker: &BrokerStatus, projection: &Projection) -> Checked {
        Checked {
            coverage: self.coverage.finish(self.checker.call_ids()),
            violations: self.checker.finish(Some((broker, projection))),
            first_results: self.first_results,
        }
    }
}

impl Observer for Analysis {
    fn event(&mut self, event: &Event) {
        let ix = self.checker.visit(event);
        self.coverage.visit(event, ix);
        self.first_results.visit(event);
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
