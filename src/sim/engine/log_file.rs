//! A run's durable log file (SPEC §4.1): the header a run's log starts with, and
//! reading an unfinished run's log back to resume it. Shared by the driver and
//! the real-clock runs (a scheduled process loss reads the log back too).

use std::path::Path;

use crate::durable::{Expected, RecoverError, RecoverOptions, Recovery, SyncPolicy};
use crate::log::LogHeader;
use crate::scenario::{Clock, Scenario};

/// The header of a run's log: the scenario, the seed and the clock.
pub fn log_header(scenario: &Scenario, seed: u64, clock: Clock) -> LogHeader {
    match clock {
        Clock::Virtual => LogHeader::new(&scenario.name, seed),
        Clock::Real => LogHeader::real(&scenario.name, seed),
    }
}

/// Reads back the log at `path` of an unfinished run of `scenario` under `seed`
/// (SPEC §4.1 `run --resume`): a recorder holding it, every event kept, the
/// file open for appending under `sync`. A damaged log, or one of another
/// scenario or seed, is an error naming the line, and the file is untouched.
pub fn recover_log(
    scenario: &Scenario,
    seed: u64,
    path: &Path,
    sync: SyncPolicy,
) -> Result<Recovery, RecoverError> {
    let expected = Expected {
        scenario: scenario.name.clone(),
        seed,
    };
    let options = RecoverOptions {
        policy: sync,
        events_max: scenario.limits.events_max,
        keep: true,
        open_calls_max: scenario.broker.limits().open_calls_max,
    };
    crate::durable::recover(path, Some(&expected), options)
}
