//! The snapshot line of a compacted log (SPEC §4.1): line 2, standing for every
//! event up to its `seq`, as the projection folded them, with the
//! `stateVersion` of the fold that wrote it.
//!
//! `{"snapshot":{"stateVersion":3,"seq":1200,"t":61.5,"projection":{…}}}`
//!
//! A snapshot folded by another `stateVersion` cannot be refolded (its events
//! are gone), so it is refused rather than trusted.

use serde::{Deserialize, Serialize};

use crate::log::STATE_VERSION;
use crate::projection::Projection;

/// The `stateVersion`s whose snapshots this build reads: its own, and 4, whose
/// state 5 only adds to (each question's owner and turn, each agent's turns,
/// the answerers that died, the batches with no verdict yet), each addition
/// read as none. A log compacted by a build of 4 thus still recovers after an
/// upgrade (its events are gone: nothing could refold them). What 4 did not
/// keep matters only to a step the crash cut in the tail (SPEC §4.1): a batch
/// from an answerer that accepted before the snapshot is refused `not_owner`
/// (its question is re-offered), and the turns of the snapshot's agents count
/// from their turn at the snapshot. 6 adds to 5 the turns of an agent that
/// fired before its last fired one; a snapshot of 5 has none, so a request of a
/// child of such a turn, cut from its `ABORTED` in the first tail after the
/// upgrade, is re-offered as it was before 6.
pub const SNAPSHOTS_READ: [u32; 3] = [4, 5, STATE_VERSION];

/// The folded state of a compacted log's first events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// The projection's state version that folded it.
    pub state_version: u32,
    /// The last event it stands for.
    pub seq: u64,
    /// That event's time.
    pub t: f64,
    /// The folded state.
    pub projection: Projection,
}

#[derive(Serialize, Deserialize)]
struct Line<T> {
    snapshot: T,
}

impl Snapshot {
    /// The snapshot of `projection` (folded up to its `seq`, the last at `t`).
    pub fn of(projection: &Projection, t: f64) -> Snapshot {
        Snapshot {
            state_version: STATE_VERSION,
            seq: projection.seq,
            t,
            projection: projection.clone(),
        }
    }

    /// Its line in the log, newline included.
    pub fn line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(&Line { snapshot: self }).expect("a snapshot serialises");
        line.push(b'\n');
        line
    }

    /// Whether `line` is a snapshot line (and not an event).
    pub fn is_snapshot_line(line: &str) -> bool {
        line.starts_with("{\"snapshot\":")
    }

    /// Reads a snapshot line: its error says what is wrong with it.
    pub fn parse(line: &str) -> Result<Snapshot, String> {
        let read: Line<Snapshot> = serde_json::from_str(line).map_err(|e| format!("bad snapshot: {e}"))?;
        let snapshot = read.snapshot;
        if !SNAPSHOTS_READ.contains(&snapshot.state_version) {
            return Err(format!(
                "the snapshot was folded by stateVersion {}, this build folds {STATE_VERSION}; its events are \
                 compacted away, so only a build of that stateVersion can recover this log",
                snapshot.state_version
            ));
        }
        if snapshot.projection.seq != snapshot.seq {
            return Err(format!(
                "the snapshot says seq {} but its projection folded up to {}",
                snapshot.seq, snapshot.projection.seq
            ));
        }
        Ok(snapshot)
    }
}
