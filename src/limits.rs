//! The runtime's limits, each named once: what the broker holds at most, its
//! default offer timeout, and how many events a run records by default. The
//! broker enforces them (`LIMIT_EXCEEDED`), the scenario format bounds its keys by
//! them, and the library's defaults come from them.

/// Most calls open at once (in their window, blocking or pending) per broker.
/// Sized for the scale target of SPEC §8 (10⁶ concurrent pending questions).
pub const OPEN_CALLS_MAX: usize = 2_000_000;
/// Most answerers in one waterfall.
pub const ANSWERERS_MAX: usize = 1_024;
/// Most agents in one tree (a root and all its descendants, live or stopped).
pub const AGENTS_PER_TREE_MAX: usize = 100_000;
/// The broker's offer timeout when none is configured (SPEC §3.2), in seconds.
pub const OFFER_TIMEOUT_S_DEFAULT: f64 = 1.0;
/// Most events one run records unless configured otherwise (SPEC §5 `limits`).
pub const EVENTS_MAX_DEFAULT: u64 = 10_000_000;

/// The broker's limits. Requests over them settle as `LIMIT_EXCEEDED` and nothing
/// is queued; the defaults are the named constants, and a runtime may set them
/// lower (tests and scenarios do), never higher.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BrokerLimits {
    /// Calls open at once (waiting or pending), at most [`OPEN_CALLS_MAX`].
    pub open_calls_max: usize,
    /// Agents in one tree, at most [`AGENTS_PER_TREE_MAX`].
    pub agents_per_tree_max: usize,
}

impl Default for BrokerLimits {
    fn default() -> Self {
        BrokerLimits {
            open_calls_max: OPEN_CALLS_MAX,
            agents_per_tree_max: AGENTS_PER_TREE_MAX,
        }
    }
}

impl BrokerLimits {
    /// The limits, capped at the named constants.
    pub fn capped(self) -> BrokerLimits {
        BrokerLimits {
            open_calls_max: self.open_calls_max.min(OPEN_CALLS_MAX),
            agents_per_tree_max: self.agents_per_tree_max.min(AGENTS_PER_TREE_MAX),
        }
    }
}
