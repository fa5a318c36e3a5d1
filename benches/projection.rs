//! SPEC §8 `projection_fold`: folding a 1,000,000-event log, beside a baseline
//! fold that keeps only a state byte per callId in a HashMap; and
//! `projection_order`: reading that log's questions in callId order, beside a
//! plain sort of references to the keys.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

use asksim::event::{Event, EventKind, RawQuestions};
use asksim::projection::Projection;
use asksim::protocol::Text;
use asksim::tool::{ResultKind, Schema};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

/// Events per call in the synthetic log: request, offer, accept, answer, result.
const EVENTS_PER_CALL: u64 = 5;
/// The log's length.
const EVENTS: u64 = 1_000_000;

/// A log of timed calls, each asked, offered, accepted, answered and settled;
/// every fifth goes pending and is answered late instead.
fn log() -> Vec<Event> {
    let questions = RawQuestions::new(
        r#"[{"id":"go","question":"Proceed?","header":"Confirm","options":[{"label":"Yes"},{"label":"No"}]}]"#,
    )
    .expect("JSON questions");
    let mut events = Vec::with_capacity(EVENTS as usize);
    let mut push = |kind: EventKind| {
        let seq = events.len() as u64 + 1;
        events.push(Event {
            seq,
            t: seq as f64 * 1e-3,
            kind,
        });
    };
    for n in 0..EVENTS / EVENTS_PER_CALL {
        let call_id: Text = format!("agent-{}/{}", n % 1000, n / 1000 + 1).into();
        let agent: Text = format!("agent-{}", n % 1000).into();
        push(EventKind::Request {
            call_id: call_id.clone(),
            agent: agent.clone(),
            schema: Schema::Timed,
            keyed: true,
            questions: questions.clone(),
            questions_text: None,
            timeout: Some(5.0),
            window_s: Some(5.0),
            mbox: None,
        });
        push(EventKind::Offer {
            call_id: call_id.clone(),
            answerer: "web".into(),
        });
        push(EventKind::Accept {
            call_id: call_id.clone(),
            answerer: "web".into(),
            mbox: None,
        });
        if n % 5 == 4 {
            push(EventKind::Result {
                call_id: call_id.clone(),
                agent: agent.clone(),
                result: "{\"pending\":true}".into(),
                is_error: false,
                outcome: Some(ResultKind::Pending),
            });
            push(EventKind::LateAnswer {
                call_id,
                agent,
                answers: vec![],
                message: "{}".into(),
            });
        } else {
            push(EventKind::Answer {
                call_id: call_id.clone(),
                answerer: "web".into(),
                batch: json!([]).into(),
                mbox: None,
            });
            push(EventKind::Result {
                call_id,
                agent,
                result: "{\"answers\":[]}".into(),
                is_error: false,
                outcome: Some(ResultKind::Answers),
            });
        }
    }
    events
}

/// The least a fold can do: one state byte per callId.
fn baseline_fold(events: &[Event]) -> HashMap<&str, u8> {
    let mut state = HashMap::new();
    for event in events {
        match &event.kind {
            EventKind::Request { call_id, .. } => {
                state.insert(call_id.as_str(), 0);
            }
            EventKind::Result { call_id, result, .. } => {
                state.insert(
                    call_id.as_str(),
                    if result.starts_with("{\"pending\"") { 1 } else { 2 },
                );
            }
            EventKind::LateAnswer { call_id, .. } => {
                state.insert(call_id.as_str(), 3);
            }
            _ => {}
        }
    }
    state
}

fn projection_fold(c: &mut Criterion) {
    let events = log();
    let mut group = c.benchmark_group("projection_fold");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.sample_size(10);
    group.bench_function("asksim", |b| b.iter(|| black_box(Projection::fold(&events))));
    group.bench_function("baseline", |b| b.iter(|| black_box(baseline_fold(&events))));
    group.finish();
}

/// Reading the folded log's 200,000 questions in callId order (what a restart's
/// plan, a run's end and a report do), beside the plain way: the keys' refs
/// sorted by comparing the strings where the table keeps them.
fn projection_order(c: &mut Criterion) {
    let projection = Projection::fold(&log());
    let mut group = c.benchmark_group("projection_order");
    group.throughput(Throughput::Elements(projection.questions.len() as u64));
    group.sample_size(10);
    group.bench_function("asksim", |b| {
        b.iter(|| black_box(projection.questions.iter().map(|(id, _)| id.len()).sum::<usize>()))
    });
    group.bench_function("baseline", |b| {
        b.iter(|| {
            let mut ids: Vec<&Text> = projection.questions.keys_unordered().collect();
            ids.sort_unstable();
            black_box(ids.iter().map(|id| id.len()).sum::<usize>())
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(10)).warm_up_time(Duration::from_secs(1));
    targets = projection_fold, projection_order
}
criterion_main!(benches);
