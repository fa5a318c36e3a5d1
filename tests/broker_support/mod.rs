//! Shared support for the broker contract tests (`tests/broker_*.rs`): a scripted
//! answerer a test drives message by message, runtime builders, and checks over the
//! recorded event stream.
//!
//! Every test runs on a current-thread runtime with paused time. Nothing here reads
//! the wall clock: waits are bounded by virtual-time timeouts, so a broken rule
//! fails a test instead of hanging it.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use asksim::event::{Event, EventKind};
use asksim::protocol::{AnswererMsg, CallOutcome, Offer, Reply};
use asksim::tool::{PENDING_MESSAGE, ToolConfig};
use asksim::{AgentHandle, AnswererSlot, Runtime, RuntimeConfig};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Longest virtual wait for anything a test expects to happen.
pub const WAIT_S_MAX: f64 = 1_000_000.0;

/// What a scripted answerer saw from the broker.
#[derive(Debug)]
pub enum Seen {
    /// An offer.
    Offer(Offer),
    /// Stop working on this ticket.
    Withdraw(u64),
    /// Something it sent was refused.
    Refused {
        /// The ticket.
        ticket: u64,
        /// `submit` or `hold`.
        what: String,
        /// Why.
        reason: String,
    },
}

/// A test-owned answerer: it forwards everything the broker sends to the test and
/// does nothing on its own.
pub struct ScriptedActor;

/// The scripted answerer's state.
pub struct ScriptedState {
    seen: mpsc::UnboundedSender<Seen>,
}

impl Actor for ScriptedActor {
    type Msg = AnswererMsg;
    type State = ScriptedState;
    type Arguments = ScriptedState;

    async fn pre_start(
        &self,
        _myself: ActorRef<AnswererMsg>,
        args: ScriptedState,
    ) -> Result<ScriptedState, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        _myself: ActorRef<AnswererMsg>,
        msg: AnswererMsg,
        state: &mut ScriptedState,
    ) -> Result<(), ActorProcessingErr> {
        let seen = match msg {
            AnswererMsg::Offer(offer) => Seen::Offer(*offer),
            AnswererMsg::Withdraw { ticket } => Seen::Withdraw(ticket),
            AnswererMsg::Refused { ticket, what, reason } => Seen::Refused {
                ticket,
                what: what.as_str().to_owned(),
                reason: reason.as_str().to_owned(),
            },
        };
        let _ = state.seen.send(seen);
        Ok(())
    }
}

/// The test's side of a scripted answerer.
pub struct Script {
    /// Its name in the waterfall.
    pub name: String,
    /// The actor.
    pub actor: ActorRef<AnswererMsg>,
    seen: mpsc::UnboundedReceiver<Seen>,
}

impl Script {
    /// Spawns a scripted answerer.
    pub async fn spawn(name: &str) -> Script {
        let (tx, rx) = mpsc::unbounded_channel();
        let state = ScriptedState { seen: tx };
        let (actor, _) = Actor::spawn(None, ScriptedActor, state)
            .await
            .expect("scripted answerer");
        Script {
            name: name.to_owned(),
            actor,
            seen: rx,
        }
    }

    /// Its waterfall slot.
    pub fn slot(&self) -> AnswererSlot {
        AnswererSlot::Actor {
            name: self.name.clone(),
            actor: self.actor.clone(),
        }
    }

    /// The next thing the broker sent it.
    pub async fn next(&mut self) -> Seen {
        within(WAIT_S_MAX, self.seen.recv())
            .await
            .expect("the scripted answerer's channel closed")
    }

    /// The next offer (anything else first is a test failure).
    pub async fn offer(&mut self) -> Offer {
        match self.next().await {
            Seen::Offer(offer) => offer,
            other => panic!("{}: expected an offer, got {other:?}", self.name),
        }
    }

    /// Whatever the broker sent it and it has not read yet.
    pub fn drain(&mut self) -> Vec<Seen> {
        let mut out = Vec::new();
        while let Ok(seen) = self.seen.try_recv() {
            out.push(seen);
        }
        out
    }

    /// Dies now; `words`, replies to `offer`, reach the broker just before its
    /// death: they are in the broker's mailbox before the actor stops, so before
    /// the supervision event that tells the broker of the death.
    pub fn crash_after_sending(&self, offer: &Offer, words: Vec<Reply>) {
        for reply in words {
            offer.reply(reply).expect("broker alive");
        }
        self.actor.stop(Some("scripted crash".into()));
    }
}

/// Sends `reply` to the broker the offer came from.
pub fn send(offer: &Offer, reply: Reply) {
    offer.reply(reply).expect("broker alive");
}

/// Awaits `fut` for at most `s` seconds of virtual time.
pub async fn within<T>(s: f64, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs_f64(s), fut)
        .await
        .unwrap_or_else(|_| panic!("nothing happened within {s} virtual seconds"))
}

/// Lets every runnable task run (no virtual time passes).
pub async fn quiesce() {
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
}

/// Sleeps until `s` seconds after the test's start instant.
pub async fn until(start: tokio::time::Instant, s: f64) {
    tokio::time::sleep_until(start + Duration::from_secs_f64(s)).await;
}

/// A runtime with this tool and waterfall, offer timeout 1 s, no jitter.
pub async fn start(tool: ToolConfig, answerers: Vec<AnswererSlot>) -> Runtime {
    Runtime::start(RuntimeConfig {
        tool,
        answerers,
        ..RuntimeConfig::default()
    })
    .await
    .expect("runtime starts")
}

/// Starts a call in its own task, so the test can drive answerers meanwhile.
pub fn spawn_ask(agent: &AgentHandle, arguments: &str) -> JoinHandle<CallOutcome> {
    let agent = agent.clone();
    let arguments = arguments.to_owned();
    tokio::spawn(async move { agent.ask(&arguments).await })
}

/// Awaits a call started with [`spawn_ask`].
pub async fn outcome(call: JoinHandle<CallOutcome>) -> CallOutcome {
    within(WAIT_S_MAX, call).await.expect("the call's task panicked")
}

/// The `questions` argument of [`timed_args`], exactly as sent (odd spacing on
/// purpose: a late answer must carry it verbatim).
pub const QUESTIONS_RAW: &str = r#"[ {"id":"go",  "question":"Proceed?","header":"Confirm",
   "options":[{"label":"Yes (Recommended)","description":"Go ahead."},{"label":"No"}]} ]"#;

/// Timed arguments with one single-select question `go`, and this timeout (JSON
/// text), or none.
pub fn timed_args(timeout: Option<&str>) -> String {
    match timeout {
        Some(t) => format!(r#"{{"questions":{QUESTIONS_RAW},"timeout":{t}}}"#),
        None => format!(r#"{{"questions":{QUESTIONS_RAW}}}"#),
    }
}

/// Legacy arguments with one question, "Proceed?".
pub const LEGACY_ARGS: &str = r#"{"questions":[{"question":"Proceed?","header":"Confirm","options":[{"label":"Yes"},{"label":"No"}],"multiSelect":false}]}"#;

/// The batch that picks "Yes (Recommended)" for `go`.
pub fn yes_batch() -> Value {
    json!([{"id":"go","selected":["Yes (Recommended)"]}])
}

/// The answers result of [`yes_batch`].
pub const YES_RESULT: &str = r#"{"answers":[{"id":"go","selected":["Yes (Recommended)"]}]}"#;

/// The exact `pending` result of a call.
pub fn pending_result(call_id: &str) -> String {
    json!({"pending": true, "callId": call_id, "message": PENDING_MESSAGE}).to_string()
}

/// The exact late-answer user message for [`timed_args`] answered with [`yes_batch`].
pub fn late_yes_message(call_id: &str) -> String {
    format!(
        r#"{{"kind":"answer_to_pending_question","tool":"ask_user_question","callId":"{call_id}","questions":{QUESTIONS_RAW},"answers":[{{"id":"go","selected":["Yes (Recommended)"]}}]}}"#
    )
}

/// The `{"error":{"code","message"}}` of a result, checked for shape: an error
/// result has exactly that one key, and `error` exactly those two, with a message.
pub fn error_code(text: &str) -> String {
    let value: Value = serde_json::from_str(text).expect("a result is JSON");
    let top = value.as_object().expect("an object");
    assert_eq!(top.keys().collect::<Vec<_>>(), ["error"], "{text}");
    let error = top["error"].as_object().expect("error is an object");
    assert_eq!(error.keys().collect::<Vec<_>>(), ["code", "message"], "{text}");
    assert!(!error["message"].as_str().expect("a string message").is_empty());
    error["code"].as_str().unwrap().to_owned()
}

/// The exact error result of `code` with `message`.
pub fn error_result(code: &str, message: &str) -> String {
    json!({"error": {"code": code, "message": message}}).to_string()
}

/// The events about one call, in order.
pub fn events_of(runtime: &Runtime, call_id: &str) -> Vec<Event> {
    runtime
        .events()
        .snapshot()
        .into_iter()
        .filter(|e| e.kind.call_id() == Some(call_id))
        .collect()
}

/// An event's variant name, for order checks.
pub fn kind_name(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::Spawn { .. } => "Spawn",
        EventKind::SpawnRefused { .. } => "SpawnRefused",
        EventKind::Stop { .. } => "Stop",
        EventKind::Request { .. } => "Request",
        EventKind::Result { .. } => "Result",
        EventKind::Offer { .. } => "Offer",
        EventKind::Accept { .. } => "Accept",
        EventKind::Decline { .. } => "Decline",
        EventKind::Hold { .. } => "Hold",
        EventKind::Answer { .. } => "Answer",
        EventKind::Refused { .. } => "Refused",
        EventKind::LateAnswer { .. } => "LateAnswer",
        EventKind::Withdraw { .. } => "Withdraw",
        EventKind::UserMessage { .. } => "UserMessage",
        EventKind::Cancel { .. } => "Cancel",
        EventKind::NewTurn { .. } => "NewTurn",
        EventKind::CancelCall { .. } => "CancelCall",
        EventKind::Crash { .. } => "Crash",
        EventKind::ProcessLoss { .. } => "ProcessLoss",
        EventKind::Restart { .. } => "Restart",
        EventKind::Dropped { .. } => "Dropped",
        EventKind::End { .. } => "End",
    }
}

/// The variant names of `events`, in order.
pub fn kinds(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| kind_name(&e.kind)).collect()
}

/// The contract's bookkeeping over a whole stream (SPEC §3.7):
/// - every call that reached the broker (`Request`) or was settled before it
///   (`INVALID_ARGUMENTS`) has exactly one `Result`;
/// - a call closes late (`LateAnswer` or `Withdraw`) at most once, and only after a
///   `pending` result;
/// - nothing is lost: the next event about a call after each `Answer` is that
///   call's settlement (`Result`, `LateAnswer`) or a `Refused` to that answerer.
pub fn check_contract(events: &[Event]) {
    let mut results: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut late: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, event) in events.iter().enumerate() {
        match &event.kind {
            EventKind::Request { call_id, .. } => {
                results.entry(call_id.as_str()).or_default();
            }
            EventKind::Result { call_id, result, .. } => {
                results.entry(call_id.as_str()).or_default().push(result);
            }
            EventKind::LateAnswer { call_id, .. } | EventKind::Withdraw { call_id, .. } => {
                *late.entry(call_id.as_str()).or_default() += 1;
                let pending = results
                    .get(call_id.as_str())
                    .and_then(|r| r.first())
                    .is_some_and(|r| r.starts_with(r#"{"pending":true"#));
                assert!(pending, "{call_id} closed late without returning pending first");
            }
            EventKind::Answer {
                call_id, answerer, ..
            } => {
                let next = events[i + 1..]
                    .iter()
                    .find(|e| e.kind.call_id() == Some(call_id.as_str()))
                    .unwrap_or_else(|| panic!("the answer of {answerer} for {call_id} was lost"));
                let accounted = match &next.kind {
                    EventKind::Result { result, .. } => !result.starts_with(r#"{"pending":true"#),
                    EventKind::LateAnswer { .. } => true,
                    EventKind::Refused {
                        answerer: to, what, ..
                    } => to == answerer && what == "submit",
                    _ => false,
                };
                assert!(
                    accounted,
                    "the answer of {answerer} for {call_id} was followed by {:?}, not by its settlement or refusal",
                    next.kind
                );
            }
            _ => {}
        }
    }
    for (call_id, r) in &results {
        assert_eq!(r.len(), 1, "{call_id} has {} results: {r:?}", r.len());
    }
    for (call_id, n) in &late {
        assert_eq!(*n, 1, "{call_id} closed late {n} times");
    }
}

/// Makes a call and waits for its result, for at most [`WAIT_S_MAX`] virtual seconds.
pub async fn ask(agent: &AgentHandle, arguments: &str) -> CallOutcome {
    within(WAIT_S_MAX, agent.ask(arguments)).await
}
