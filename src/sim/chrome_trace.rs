//! `--chrome-trace`: the run as Chrome Trace Event JSON, which Perfetto and
//! chrome://tracing open. One track per agent (process "agents") and per answerer
//! (process "answerers"); a slice per call from its start to its settlement,
//! named by callId and outcome, and a second slice for the time it spent
//! pending; an answerer's slice from its accept to its answer; instants for
//! holds, cancellations, crashes and process loss.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::event::{Event, EventKind};
use crate::tool::ResultKind;

const AGENTS_PID: u64 = 1;
const ANSWERERS_PID: u64 = 2;

/// The trace of `events` as a Trace Event JSON object.
pub fn chrome_trace(events: &[Event]) -> Value {
    let mut trace = Trace::default();
    for event in events {
        trace.visit(event);
    }
    trace.finish(events.last().map_or(0.0, |e| e.t))
}

#[derive(Default)]
struct Trace {
    out: Vec<Value>,
    tracks: BTreeMap<(u64, String), u64>,
    /// callId → (agent, start t)
    started: BTreeMap<String, (String, f64)>,
    /// callId → (agent, pending since)
    pending: BTreeMap<String, (String, f64)>,
    /// (callId, answerer) → accepted at
    owned: BTreeMap<(String, String), f64>,
}

fn us(t: f64) -> f64 {
    (t * 1e6).round()
}

impl Trace {
    fn track(&mut self, pid: u64, name: &str) -> u64 {
        let next = self.tracks.len() as u64 + 1;
        let tid = *self.tracks.entry((pid, name.to_owned())).or_insert(next);
        if tid == next {
            self.out.push(
                json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}),
            );
        }
        tid
    }

    fn slice(&mut self, pid: u64, track: &str, name: String, from: f64, to: f64, args: Value) {
        let tid = self.track(pid, track);
        let dur = (us(to) - us(from)).max(0.0);
        self.out.push(json!({"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": us(from), "dur": dur, "args": args}));
    }

    fn instant(&mut self, pid: u64, track: &str, name: String, t: f64) {
        let tid = self.track(pid, track);
        self.out
            .push(json!({"ph": "i", "s": "t", "name": name, "pid": pid, "tid": tid, "ts": us(t)}));
    }

    fn visit(&mut self, event: &Event) {
        let t = event.t;
        match &event.kind {
            EventKind::Spawn { agent, .. } => {
                self.track(AGENTS_PID, agent);
            }
            EventKind::Request { call_id, agent, .. } => {
                self.started.insert(call_id.to_string(), (agent.to_string(), t));
            }
            EventKind::Result {
                call_id,
                agent,
                result,
                ..
            } => {
                let (agent, start) = self.started.remove(&**call_id).unwrap_or((agent.to_string(), t));
                let kind = event.kind.result_kind().expect("a result has a kind");
                let outcome = match kind {
                    ResultKind::Answers => "answered",
                    other => other.as_str(),
                };
                if kind == ResultKind::Pending {
                    self.pending.insert(call_id.to_string(), (agent.clone(), t));
                }
                let args = json!({"result": result});
                self.slice(AGENTS_PID, &agent, format!("{call_id} {outcome}"), start, t, args);
            }
            EventKind::LateAnswer { call_id, agent, .. } => {
                self.close_pending(call_id, agent, "late_answered", t)
            }
            EventKind::Withdraw { call_id, agent, .. } => self.close_pending(call_id, agent, "withdrawn", t),
            EventKind::Offer { answerer, .. } | EventKind::Decline { answerer, .. } => {
                // Every answerer has a track, also one that only ever declines.
                self.track(ANSWERERS_PID, answerer);
            }
            EventKind::Accept {
                call_id, answerer, ..
            } => {
                self.owned.insert((call_id.to_string(), answerer.to_string()), t);
            }
            EventKind::Answer {
                call_id, answerer, ..
            } => {
                if let Some(from) = self.owned.remove(&(call_id.to_string(), answerer.to_string())) {
                    self.slice(
                        ANSWERERS_PID,
                        answerer,
                        format!("{call_id} answering"),
                        from,
                        t,
                        json!({}),
                    );
                }
            }
            EventKind::Hold {
                call_id, answerer, ..
            } => self.instant(ANSWERERS_PID, answerer, format!("hold {call_id}"), t),
            EventKind::Crash { answerer, .. } => self.instant(ANSWERERS_PID, answerer, "crash".into(), t),
            EventKind::Cancel { agent } => self.instant(AGENTS_PID, agent, "turn cancelled".into(), t),
            EventKind::CancelCall { call_id } => {
                let agent = call_id.rsplit_once('/').map_or(&**call_id, |(a, _)| a).to_owned();
                self.instant(AGENTS_PID, &agent, format!("cancel_call {call_id}"), t);
            }
            EventKind::ProcessLoss { restart_after } => {
                let name = format!("process loss (restart after {restart_after} s)");
                self.out.push(
                    json!({"ph": "i", "s": "g", "name": name, "pid": AGENTS_PID, "tid": 0, "ts": us(t)}),
                );
            }
            EventKind::Restart => {
                self.out.push(
                    json!({"ph": "i", "s": "g", "name": "restart", "pid": AGENTS_PID, "tid": 0, "ts": us(t)}),
                );
            }
            _ => {}
        }
    }

    fn close_pending(&mut self, call_id: &str, agent: &str, how: &str, t: f64) {
        // A call open at a process loss never returned pending: it is pending
        // from its request on.
        let (agent, from) = self
            .pending
            .remove(call_id)
            .or_else(|| self.started.remove(call_id))
            .unwrap_or((agent.to_owned(), t));
        self.slice(
            AGENTS_PID,
            &agent,
            format!("{call_id} pending → {how}"),
            from,
            t,
            json!({}),
        );
    }

    fn finish(mut self, end_t: f64) -> Value {
        // Calls still open at the end get a slice to the end of the run.
        for (call_id, (agent, from)) in std::mem::take(&mut self.started) {
            self.slice(
                AGENTS_PID,
                &agent,
                format!("{call_id} open"),
                from,
                end_t,
                json!({}),
            );
        }
        for (call_id, (agent, from)) in std::mem::take(&mut self.pending) {
            self.slice(
                AGENTS_PID,
                &agent,
                format!("{call_id} pending_open"),
                from,
                end_t,
                json!({}),
            );
        }
        let mut events = vec![
            json!({"ph": "M", "name": "process_name", "pid": AGENTS_PID, "tid": 0, "args": {"name": "agents"}}),
            json!({"ph": "M", "name": "process_name", "pid": ANSWERERS_PID, "tid": 0, "args": {"name": "answerers"}}),
        ];
        events.append(&mut self.out);
        json!({"traceEvents": events, "displayTimeUnit": "ms"})
    }
}
