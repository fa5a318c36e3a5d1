//! `--chrome-trace`: the run as Chrome Trace Event JSON, which Perfetto and
//! chrome://tracing open. One track per agent (process "agents") and per answerer
//! (process "answerers"); a slice per call from its start to its settlement,
//! named by callId and outcome, and a second slice for the time it spent
//! pending; an answerer's slice from its accept to its answer; instants for
//! holds, cancellations, crashes and process loss.
//!
//! **Flow arrows** draw the path of a question: one flow per offer (one id per
//! call and answerer, fresh for each offer), starting on the caller's track at
//! the offer, stepping on the answerer's track at its accept, hold, answer and
//! any refusal, and finishing where the answerer's part ends: back on the
//! caller's track at the call's settlement (answers, an error, a late answer, a
//! withdrawal), or on the answerer's track at a decline, at a process loss, or at
//! the end of the run.
//!
//! How a flow event binds (Trace Event Format, flow events `s`/`t`/`f`): `s` and
//! `t` bind to the slice enclosing them on their thread, `f` to the next slice
//! unless `"bp":"e"`, then to the enclosing one. Perfetto takes the slice on top
//! of the thread's stack when it reads the flow event, keys a flow by its `id`,
//! `cat` and `name`, and reads events in timestamp order, instants and flow
//! events at one timestamp in file order (slices with a duration first). So
//! every flow event here comes right after an instant of its own on its track,
//! at its timestamp: that instant is the slice it binds to, in Perfetto and in
//! chrome://tracing alike, also when calls overlap on a track.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;

use rustc_hash::FxHashMap;

use serde::Serialize;
use serde_json::Value;

use crate::event::{Event, EventKind};
use crate::keyed::Keyed;
use crate::protocol::Text;
use crate::record::Observer;
use crate::tool::ResultKind;

const AGENTS_PID: u64 = 1;
const ANSWERERS_PID: u64 = 2;

/// The `cat` and `name` of every flow event (Perfetto keys a flow by its id,
/// category and name, so they must not vary within a flow).
const FLOW_CAT: &str = "question";
const FLOW_NAME: &str = "question";

/// One trace event. Every kind's keys are written in the order this file has
/// always written them, which is a subsequence of these fields' order: `M`
/// (ph, name, pid, tid, args), `X` (ph, name, pid, tid, ts, dur, args), `i`
/// (ph, s, name, pid, tid, ts), flows (ph, cat, name, id, pid, tid, ts, bp).
/// Serialised from here, where a `serde_json::Value` built each one as an
/// ordered map of owned keys (allocated, hashed and dropped: a tenth of the
/// journal's thread under `--chrome-trace`).
#[derive(Serialize)]
struct TraceEvent {
    ph: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    /// Borrowed where it is a constant (`process_name`, `thread_name`, a
    /// flow's): no allocation for those.
    name: Cow<'static, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    pid: u64,
    tid: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Args>,
}

impl TraceEvent {
    /// A metadata event naming process or thread `pid`/`tid` `name`.
    fn metadata(what: &'static str, pid: u64, tid: u64, name: &str) -> TraceEvent {
        TraceEvent {
            ph: "M",
            s: None,
            cat: None,
            name: Cow::Borrowed(what),
            id: None,
            pid,
            tid,
            ts: None,
            dur: None,
            bp: None,
            args: Some(Args {
                name: Some(name.to_owned()),
                result: None,
            }),
        }
    }

    /// An event of phase `ph` named `name` on `pid`/`tid` at `ts`, with no
    /// other key yet.
    fn at(
        ph: &'static str,
        name: impl Into<Cow<'static, str>>,
        (pid, tid): (u64, u64),
        ts: f64,
    ) -> TraceEvent {
        TraceEvent {
            ph,
            s: None,
            cat: None,
            name: name.into(),
            id: None,
            pid,
            tid,
            ts: Some(ts),
            dur: None,
            bp: None,
            args: None,
        }
    }
}

/// A trace event's `args`: `{}`, `{"name": …}` or `{"result": …}`.
#[derive(Serialize)]
struct Args {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<String>,
}

impl Args {
    const NONE: Args = Args {
        name: None,
        result: None,
    };
}

/// The trace of `events` as a Trace Event JSON object.
pub fn chrome_trace(events: &[Event]) -> Value {
    let mut trace = ChromeTrace::new(Vec::new());
    for event in events {
        trace.event(event);
    }
    let bytes = trace.finish().expect("writing to memory cannot fail");
    serde_json::from_slice(&bytes).expect("the trace is JSON")
}

/// The trace written as the run goes: each trace event goes to the sink as soon
/// as its run event is seen, and only the calls still open are held (SPEC §8:
/// `--chrome-trace` streams). The bytes are those of [`chrome_trace`]'s object,
/// compact: `{"traceEvents":[…],"displayTimeUnit":"ms"}`.
pub struct ChromeTrace<W: Write> {
    trace: Trace,
    sink: W,
    last_t: f64,
    error: Option<std::io::Error>,
}

impl<W: Write> ChromeTrace<W> {
    /// A trace written to `sink`.
    pub fn new(sink: W) -> ChromeTrace<W> {
        let mut trace = ChromeTrace {
            trace: Trace::default(),
            sink,
            last_t: 0.0,
            error: None,
        };
        let head = [
            TraceEvent::metadata("process_name", AGENTS_PID, 0, "agents"),
            TraceEvent::metadata("process_name", ANSWERERS_PID, 0, "answerers"),
        ];
        trace.put(b"{\"traceEvents\":[");
        for (i, value) in head.iter().enumerate() {
            if i > 0 {
                trace.put(b",");
            }
            trace.put_value(value);
        }
        trace
    }

    /// Closes what is still open at the end of the run and the JSON object, and
    /// gives the sink back; the first write error, if one happened.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.trace.finish(self.last_t);
        self.flush_out();
        self.put(b"],\"displayTimeUnit\":\"ms\"}");
        match self.error {
            Some(error) => Err(error),
            None => Ok(self.sink),
        }
    }

    fn flush_out(&mut self) {
        let out = std::mem::take(&mut self.trace.out);
        for value in &out {
            self.put(b",");
            self.put_value(value);
        }
        self.trace.out = out;
        self.trace.out.clear();
    }

    fn put(&mut self, bytes: &[u8]) {
        if self.error.is_none()
            && let Err(error) = self.sink.write_all(bytes)
        {
            self.error = Some(error);
        }
    }

    fn put_value(&mut self, value: &TraceEvent) {
        if self.error.is_none()
            && let Err(error) = serde_json::to_writer(&mut self.sink, value)
        {
            self.error = Some(error.into());
        }
    }
}

impl<W: Write + Send + 'static> Observer for ChromeTrace<W> {
    fn event(&mut self, event: &Event) {
        self.last_t = event.t;
        self.trace.visit(event);
        self.flush_out();
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// The trace's state: the calls and flows still open, and the trace events
/// made by the run event at hand (`out`, emptied into the sink after each).
///
/// Looked up at every event, so found by hash, without a key made to look
/// (a track's name, a callId), and sorted only where their order reaches the
/// trace: the calls still open at a process loss or at the end.
#[derive(Default)]
struct Trace {
    out: Vec<TraceEvent>,
    /// pid → track name → tid (tids count the tracks of both pids, from 1)
    tracks: FxHashMap<u64, FxHashMap<String, u64>>,
    track_count: u64,
    /// callId → (agent, start t)
    started: Keyed<(String, f64)>,
    /// callId → (agent, pending since)
    pending: Keyed<(String, f64)>,
    /// (callId, answerer) → accepted at
    owned: BTreeMap<(String, String), f64>,
    /// callId → its caller, whose track a flow starts and finishes on
    callers: Keyed<String>,
    /// callId → (answerer, the id of its open flow), by answerer (read in
    /// (callId, answerer) order when every open flow finishes; a call has a
    /// flow per answerer offered it, a few)
    flows: Keyed<Vec<(Text, u64)>>,
    /// The last flow id handed out (ids start at 1).
    flow_ids: u64,
}

fn us(t: f64) -> f64 {
    (t * 1e6).round()
}

/// The flow's phase: where it starts, steps, finishes.
#[derive(Clone, Copy)]
enum Phase {
    Start,
    Step,
    Finish,
}

impl Trace {
    fn track(&mut self, pid: u64, name: &str) -> u64 {
        let tracks = self.tracks.entry(pid).or_default();
        if let Some(&tid) = tracks.get(name) {
            return tid;
        }
        self.track_count += 1;
        let tid = self.track_count;
        tracks.insert(name.to_owned(), tid);
        (self.out).push(TraceEvent::metadata("thread_name", pid, tid, name));
        tid
    }

    /// The id of the open flow of `call_id` offered to `answerer`, taken out.
    fn take_flow(&mut self, call_id: &str, answerer: &str) -> Option<u64> {
        let flows = self.flows.get_mut(call_id)?;
        let at = flows.binary_search_by(|(a, _)| a.as_str().cmp(answerer)).ok()?;
        let (_, id) = flows.remove(at);
        if flows.is_empty() {
            self.flows.remove(call_id);
        }
        Some(id)
    }

    fn slice(&mut self, pid: u64, track: &str, name: String, from: f64, to: f64, args: Args) {
        let tid = self.track(pid, track);
        let dur = (us(to) - us(from)).max(0.0);
        self.out.push(TraceEvent {
            dur: Some(dur),
            args: Some(args),
            ..TraceEvent::at("X", name, (pid, tid), us(from))
        });
    }

    fn instant(&mut self, pid: u64, track: &str, name: String, t: f64) {
        let tid = self.track(pid, track);
        self.out.push(TraceEvent {
            s: Some("t"),
            ..TraceEvent::at("i", name, (pid, tid), us(t))
        });
    }

    /// An instant named `name` and, right after it, flow `id`'s event bound to it.
    fn flow_point(&mut self, phase: Phase, id: u64, (pid, track): (u64, &str), name: String, t: f64) {
        self.instant(pid, track, name, t);
        let tid = self.track(pid, track);
        let ph = match phase {
            Phase::Start => "s",
            Phase::Step => "t",
            Phase::Finish => "f",
        };
        self.out.push(TraceEvent {
            cat: Some(FLOW_CAT),
            id: Some(id),
            // A finish binds to the enclosing slice (the instant above), not
            // the next one.
            bp: matches!(phase, Phase::Finish).then_some("e"),
            ..TraceEvent::at(ph, FLOW_NAME, (pid, tid), us(t))
        });
    }

    /// The agent that made `call_id` (from its request, else from the callId).
    fn caller(&self, call_id: &str) -> String {
        match self.callers.get(call_id) {
            Some(agent) => agent.clone(),
            None => call_id
                .rsplit_once('/')
                .map_or(call_id, |(agent, _)| agent)
                .to_owned(),
        }
    }

    fn visit(&mut self, event: &Event) {
        let t = event.t;
        match &event.kind {
            EventKind::Spawn { agent, .. } => {
                self.track(AGENTS_PID, agent);
            }
            EventKind::Request { call_id, agent, .. } => {
                self.callers.insert(call_id.clone(), agent.to_string());
                self.started.insert(call_id.clone(), (agent.to_string(), t));
            }
            EventKind::Result {
                call_id,
                agent,
                result,
                ..
            } => {
                let kind = event.kind.result_kind().unwrap_or(ResultKind::Answers);
                self.result((call_id, agent), result, kind, t);
            }
            EventKind::LateAnswer { call_id, agent, .. } => {
                self.close_pending(call_id, agent, "late_answered", t);
                self.finish_call_flows(call_id, &format!("late answer {call_id}"), t);
            }
            EventKind::Withdraw { call_id, agent, .. } => {
                self.close_pending(call_id, agent, "withdrawn", t);
                self.finish_call_flows(call_id, &format!("{call_id} withdrawn"), t);
            }
            EventKind::Cancel { agent } => self.instant(AGENTS_PID, agent, "turn cancelled".into(), t),
            EventKind::CancelCall { call_id } => {
                let agent = self.caller(call_id);
                self.instant(AGENTS_PID, &agent, format!("cancel_call {call_id}"), t);
            }
            EventKind::ProcessLoss { restart_after } => {
                let name = format!("process loss (restart after {restart_after} s)");
                self.global_instant(name, t);
                self.finish_open_flows("lost at process loss", t);
            }
            EventKind::Restart { .. } => self.global_instant("restart".into(), t),
            _ => self.visit_answerer(event),
        }
    }

    /// The events of an answerer's part in a call.
    fn visit_answerer(&mut self, event: &Event) {
        let t = event.t;
        match &event.kind {
            EventKind::Offer { call_id, answerer } => self.offer(call_id, answerer, t),
            EventKind::Accept {
                call_id, answerer, ..
            } => {
                self.owned.insert((call_id.to_string(), answerer.to_string()), t);
                self.step(call_id, answerer, format!("accept {call_id}"), t);
            }
            EventKind::Decline {
                call_id,
                answerer,
                reason,
                ..
            } => {
                // Every answerer has a track, also one that only ever declines.
                self.track(ANSWERERS_PID, answerer);
                if let Some(id) = self.take_flow(call_id, answerer) {
                    let name = format!("decline {call_id} ({reason})");
                    self.flow_point(Phase::Finish, id, (ANSWERERS_PID, answerer), name, t);
                }
            }
            EventKind::Hold {
                call_id, answerer, ..
            } => self.step(call_id, answerer, format!("hold {call_id}"), t),
            EventKind::Answer {
                call_id, answerer, ..
            } => self.answer(call_id, answerer, t),
            EventKind::Refused {
                call_id,
                answerer,
                what,
                reason,
            } => {
                self.step(
                    call_id,
                    answerer,
                    format!("{what} {call_id} refused: {reason}"),
                    t,
                );
            }
            EventKind::Crash { answerer, .. } => self.instant(ANSWERERS_PID, answerer, "crash".into(), t),
            _ => {}
        }
    }

    fn global_instant(&mut self, name: String, t: f64) {
        self.out.push(TraceEvent {
            s: Some("g"),
            ..TraceEvent::at("i", name, (AGENTS_PID, 0), us(t))
        });
    }

    /// A tool result: the call's slice, and its flows finished unless it went
    /// pending.
    fn result(&mut self, (call_id, agent): (&str, &str), result: &str, kind: ResultKind, t: f64) {
        let (agent, start) = self.started.remove(call_id).unwrap_or((agent.to_owned(), t));
        let outcome = match kind {
            ResultKind::Answers => "answered",
            other => other.as_str(),
        };
        let args = Args {
            name: None,
            result: Some(result.to_owned()),
        };
        self.slice(AGENTS_PID, &agent, format!("{call_id} {outcome}"), start, t, args);
        if kind == ResultKind::Pending {
            // The owner keeps a pending question: its flow goes on.
            self.pending.insert(call_id.into(), (agent, t));
        } else {
            self.finish_call_flows(call_id, &format!("{call_id} → {}", kind.as_str()), t);
        }
    }

    fn offer(&mut self, call_id: &str, answerer: &str, t: f64) {
        self.track(ANSWERERS_PID, answerer);
        if let Some(id) = self.take_flow(call_id, answerer) {
            let name = format!("{call_id} offered again");
            self.flow_point(Phase::Finish, id, (ANSWERERS_PID, answerer), name, t);
        }
        self.flow_ids += 1;
        let id = self.flow_ids;
        match self.flows.get_mut(call_id) {
            Some(flows) => {
                // Not there: `take_flow` above took it.
                let at = flows.partition_point(|(a, _)| a.as_str() < answerer);
                flows.insert(at, (answerer.into(), id));
            }
            None => {
                self.flows.insert(call_id.into(), vec![(answerer.into(), id)]);
            }
        }
        let caller = self.caller(call_id);
        let name = format!("offer {call_id} to {answerer}");
        self.flow_point(Phase::Start, id, (AGENTS_PID, &caller), name, t);
    }

    fn answer(&mut self, call_id: &str, answerer: &str, t: f64) {
        let key = (call_id.to_owned(), answerer.to_owned());
        if let Some(from) = self.owned.remove(&key) {
            let name = format!("{call_id} answering");
            self.slice(ANSWERERS_PID, answerer, name, from, t, Args::NONE);
        }
        self.step(call_id, answerer, format!("answer {call_id}"), t);
    }

    /// An instant named `name` on the answerer's track, and a step of the open
    /// flow of `call_id` and `answerer` there, if it has one.
    fn step(&mut self, call_id: &str, answerer: &str, name: String, t: f64) {
        let flow = (self.flows.get(call_id))
            .and_then(|flows| flows.iter().find(|(a, _)| a.as_str() == answerer))
            .map(|&(_, id)| id);
        match flow {
            Some(id) => self.flow_point(Phase::Step, id, (ANSWERERS_PID, answerer), name, t),
            None => self.instant(ANSWERERS_PID, answerer, name, t),
        }
    }

    /// Finishes every open flow of `call_id` on its caller's track: the call
    /// settled.
    fn finish_call_flows(&mut self, call_id: &str, name: &str, t: f64) {
        let open = self.flows.remove(call_id).unwrap_or_default();
        let caller = self.caller(call_id);
        for (_, id) in open {
            self.flow_point(Phase::Finish, id, (AGENTS_PID, &caller), name.to_owned(), t);
        }
        self.forget(call_id);
    }

    /// Drops the caller of a call that settled for good: from now on it is its
    /// callId's agent part, the same agent (a callId is `<agent>/<n>`). An
    /// accepted offer stays until its answer, which draws the answerer's slice.
    fn forget(&mut self, call_id: &str) {
        self.callers.remove(call_id);
    }

    /// Finishes every open flow on its answerer's track (a process loss, the
    /// end of the run).
    fn finish_open_flows(&mut self, why: &str, t: f64) {
        let flows = std::mem::take(&mut self.flows);
        for (call_id, open) in flows.iter() {
            for &(ref answerer, id) in open {
                let name = format!("{call_id} {why}");
                self.flow_point(Phase::Finish, id, (ANSWERERS_PID, answerer), name, t);
            }
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
            Args::NONE,
        );
    }

    fn finish(&mut self, end_t: f64) {
        self.finish_open_flows("still open at the end", end_t);
        // Calls still open at the end get a slice to the end of the run.
        for (call_id, &(ref agent, from)) in std::mem::take(&mut self.started).iter() {
            self.slice(
                AGENTS_PID,
                agent,
                format!("{call_id} open"),
                from,
                end_t,
                Args::NONE,
            );
        }
        for (call_id, &(ref agent, from)) in std::mem::take(&mut self.pending).iter() {
            self.slice(
                AGENTS_PID,
                agent,
                format!("{call_id} pending_open"),
                from,
                end_t,
                Args::NONE,
            );
        }
    }
}
