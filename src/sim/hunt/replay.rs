//! `asksim replay`: folds a durable log into the projection, lists every
//! question's state, and re-checks the invariants on the log's events.

use std::fmt::Write as _;

use serde::Serialize;

use crate::event::{Event, EventKind};
use crate::log::LogHeader;
use crate::projection::Projection;
use crate::sim::judge::invariants::{INVARIANTS, REAL_TOLERANCE_S, VIRTUAL_TOLERANCE_S, Violation, check};

/// One question as `replay` lists it.
#[derive(Clone, Debug, Serialize)]
pub struct QuestionRow {
    /// The call.
    #[serde(rename = "callId")]
    pub call_id: String,
    /// The calling agent.
    pub agent: String,
    /// `"legacy"` or `"timed"`, as recorded.
    pub schema: &'static str,
    /// Its state.
    pub state: &'static str,
    /// How it settled, if it did.
    pub settled: Option<String>,
}

/// What `replay` reports.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    /// The scenario named in the log's header.
    pub scenario: String,
    /// The seed named in the log's header.
    pub seed: u64,
    /// Events folded.
    pub events: u64,
    /// Every question, by callId.
    pub questions: Vec<QuestionRow>,
    /// Why the run ended, as its `end` event says (`done`, a limit, `crashed`);
    /// null when the log has none: its run did not end (the log was cut, the
    /// process was killed, or it is still going), so the states are those at its
    /// last line, not final ones.
    pub end: Option<String>,
    /// The invariants re-checked.
    pub checked: Vec<&'static str>,
    /// What broke.
    pub violations: Vec<Violation>,
    /// For a compacted log (SPEC §4.1), the `seq` its snapshot stands for: the
    /// events before it are folded into the snapshot, so the invariants are not
    /// re-checked (they need every event).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compacted_at: Option<u64>,
}

/// A log as `replay` reads it.
#[derive(Debug)]
pub struct ReplayLog {
    /// Its header.
    pub header: LogHeader,
    /// Its events (after the snapshot, for a compacted log).
    pub events: Vec<Event>,
    /// The snapshot a compacted log starts from.
    pub snapshot: Option<crate::durable::Snapshot>,
}

/// Reads the log at `path`: a run's log, or a compacted one (header, snapshot,
/// tail). Anything that is not a whole log is an error naming the line, a
/// crash's torn last line included (`run --resume` drops that one).
pub fn read(path: &std::path::Path) -> Result<ReplayLog, crate::log::LogError> {
    let compacted = crate::log::read_bytes(path)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| {
            text.lines()
                .nth(1)
                .map(crate::durable::Snapshot::is_snapshot_line)
        })
        .unwrap_or(false);
    if !compacted {
        let (header, events) = crate::log::read_file(path)?;
        return Ok(ReplayLog {
            header,
            events,
            snapshot: None,
        });
    }
    let read = crate::durable::read_back(path, None)?;
    if let Some(torn) = read.torn {
        return Err(crate::log::LogError {
            file: path.display().to_string(),
            line: Some(torn.line),
            message: crate::log::CUT_SHORT.into(),
        });
    }
    Ok(ReplayLog {
        header: read.header,
        events: read.events.into_iter().map(|(event, _)| event).collect(),
        snapshot: read.snapshot,
    })
}

/// Folds `events` (from a log with `header`) and re-checks the invariants. The
/// broker's final state is not in a log, so the projection-equality invariant is
/// checked by `run`, not here. Times are held to the clock's tolerance the header
/// names (the virtual clock's exactness when it names none).
pub fn replay(header: &LogHeader, events: &[Event], projection: &Projection) -> ReplayReport {
    replay_from(header, events, projection, None)
}

/// [`replay`] of a compacted log, whose snapshot stands for the events up to
/// `compacted_at` and whose `events` are its tail.
pub fn replay_from(
    header: &LogHeader,
    events: &[Event],
    projection: &Projection,
    compacted_at: Option<u64>,
) -> ReplayReport {
    let tolerance_s = if header.is_real() {
        REAL_TOLERANCE_S
    } else {
        VIRTUAL_TOLERANCE_S
    };
    let questions = projection
        .questions
        .iter()
        .map(|(call_id, q)| QuestionRow {
            call_id: call_id.to_string(),
            agent: q.agent.to_string(),
            schema: q.schema.as_str(),
            state: q.state.as_str(),
            settled: q.settled.as_deref().map(str::to_owned),
        })
        .collect();
    ReplayReport {
        scenario: header.scenario.clone(),
        seed: header.seed,
        events: events.len() as u64,
        questions,
        end: events.iter().rev().find_map(|event| match &event.kind {
            EventKind::End { reason } => Some(reason.clone()),
            _ => None,
        }),
        checked: INVARIANTS
            .iter()
            .copied()
            .filter(|i| *i != "projection_matches_broker" && compacted_at.is_none())
            .collect(),
        violations: match compacted_at {
            None => check(events, None, tolerance_s),
            Some(_) => Vec::new(),
        },
        compacted_at,
    }
}

/// The human listing.
pub fn render_table(report: &ReplayReport) -> String {
    render_table_with_timelines(report, &[])
}

/// [`render_table`] with, under each of the first violations, the timeline of
/// the call it names, from the log's `events` (see [`crate::sim::show::timeline`]).
pub fn render_table_with_timelines(report: &ReplayReport, events: &[Event]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "asksim replay: {} (seed {}, {} events)",
        report.scenario, report.seed, report.events
    );
    let _ = writeln!(
        out,
        "  {:<24} {:<16} {:<7} {:<16} settled",
        "callId", "agent", "schema", "state"
    );
    for q in &report.questions {
        let settled = q.settled.as_deref().unwrap_or("-");
        let settled: String = if settled.chars().count() > 72 {
            settled.chars().take(71).chain(std::iter::once('…')).collect()
        } else {
            settled.to_owned()
        };
        let _ = writeln!(
            out,
            "  {:<24} {:<16} {:<7} {:<16} {settled}",
            q.call_id, q.agent, q.schema, q.state
        );
    }
    match &report.end {
        Some(reason) if reason != "done" => {
            let _ = writeln!(out, "  the run ended: {reason}");
        }
        Some(_) => {}
        None => {
            let _ = writeln!(
                out,
                "  NOT ENDED: the log stops before its run ended (no `end` event: cut short, killed, or still \
                 going), so the states above are those at its last line, and what only the end settles \
                 (messages owed, calls nothing moves on) is not checked. `asksim run FILE --log PATH --resume` \
                 continues it"
            );
        }
    }
    match report.compacted_at {
        Some(seq) => {
            let _ = writeln!(
                out,
                "  invariants: not re-checked: the log was compacted, events up to seq {seq} are a snapshot"
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  invariants: {} checked, {} violated",
                report.checked.len(),
                report.violations.len()
            );
        }
    }
    for (i, v) in report.violations.iter().enumerate() {
        let _ = writeln!(out, "  VIOLATION {v}");
        crate::sim::show::timeline::write_violation_timeline(&mut out, events, i, v);
    }
    out
}
