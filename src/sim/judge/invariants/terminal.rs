//! `projection_matches_broker` (SPEC §4: "folding the log of a finished run must
//! give exactly the broker's final state"): the projection folded from the events
//! against the broker's own account at the end of the run. Open calls are compared
//! both ways; terminal states (answered, late_answered, withdrawn, aborted,
//! errored) too, when the broker reported them. A broker knows the calls it closed
//! in its own life: a call closed before the last restart is known to the broker
//! of now only through the log it refolded, so it is not compared (nor is a legacy
//! call lost at a loss, which no broker closed). Run once, at the end.

use super::Violations;
use crate::projection::{Projection, QuestionState};
use crate::protocol::BrokerStatus;

const INVARIANT: &str = "projection_matches_broker";

/// Compares `projection` with `broker`; `restart_seq` is the `seq` of the last
/// restart (0 if none), and violations are named at `last_seq`, the end.
pub fn compare(
    broker: &BrokerStatus,
    projection: &Projection,
    (restart_seq, last_seq): (u64, u64),
    out: &mut Violations,
) {
    let folded = projection.open_calls();
    let closed_as = |call_id: &str| broker.closed.as_ref().and_then(|c| c.get(call_id)).copied();
    for (call_id, state) in &folded {
        if broker.open.get(call_id) != Some(state) {
            let said = broker
                .open
                .get(call_id)
                .copied()
                .or_else(|| closed_as(call_id))
                .unwrap_or("closed");
            let detail = format!("the projection says {state}, the broker {said}");
            out.push(INVARIANT, call_id, last_seq, detail);
        }
    }
    for call_id in broker.open.keys().filter(|id| !folded.contains_key(*id)) {
        let state = projection
            .questions
            .get(call_id.as_str())
            .map_or("nothing", |q| q.state.as_str());
        let detail = format!("open at the broker, {state} in the projection");
        out.push(INVARIANT, call_id, last_seq, detail);
    }
    let Some(closed) = &broker.closed else {
        return;
    };
    for (call_id, state) in closed {
        let question = projection.questions.get(call_id.as_str());
        let folded_state = question.map(|q| q.state);
        if matches!(folded_state, Some(QuestionState::Open | QuestionState::Pending)) {
            continue; // named above, as an open call the broker closed
        }
        if folded_state.map(QuestionState::as_str) != Some(*state) {
            let said = folded_state.map_or("nothing", QuestionState::as_str);
            let detail = format!("the broker closed it as {state}, the projection says {said}");
            out.push(INVARIANT, call_id, last_seq, detail);
        }
    }
    for (call_id, question) in &projection.questions {
        let terminal = !matches!(
            question.state,
            QuestionState::Open | QuestionState::Pending | QuestionState::LostOnRestart
        );
        let known = closed.contains_key(&**call_id) || broker.open.contains_key(&**call_id);
        if terminal && question.seq > restart_seq && !known {
            let state = question.state.as_str();
            let detail = format!("the projection says {state}, the broker never closed it");
            out.push(INVARIANT, call_id, last_seq, detail);
        }
    }
}
