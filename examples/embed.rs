//! Embedding the asksim runtime: your own answerer actor in the waterfall, a root
//! agent asking, a call that returns `pending`, and its late answer read back as a
//! user message.
//!
//! Run with `cargo run --example embed`. It runs on paused time: the "user" takes
//! 40 virtual seconds to answer, and the example ends at once.

use std::sync::Arc;
use std::time::Duration;

// A program adds only asksim: ractor, tokio and serde_json are re-exported, at
// the versions the runtime is built with.
use asksim::AnswererSlot;
use asksim::protocol::{AnswererMsg, Reply};
use asksim::ractor::{Actor, ActorProcessingErr, ActorRef};
use asksim::serde_json::json;
use asksim::tool::{Timeout, ToolConfig};
use asksim::{Runtime, RuntimeConfig};

/// A stand-in for a Web client: it accepts every offer and answers 40 s later with
/// each question's first option.
struct WebClient;

impl Actor for WebClient {
    type Msg = AnswererMsg;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _myself: ActorRef<AnswererMsg>, _args: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(
        &self,
        _myself: ActorRef<AnswererMsg>,
        msg: AnswererMsg,
        _state: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        if let AnswererMsg::Offer(offer) = msg {
            offer.reply(Reply::Accept)?;
            let batch: Vec<_> = offer
                .questions
                .iter()
                .map(|q| json!({"id": q.id(), "selected": [q.option(0).map(|o| o.label)]}))
                .collect();
            // The user thinks; the actor stays free for other offers meanwhile.
            asksim::tokio::spawn(async move {
                asksim::tokio::time::sleep(Duration::from_secs(40)).await;
                let _ = offer.reply(Reply::Submit(Arc::new(batch.into())));
            });
        }
        // Withdraw and Refused need no action from this client: the three
        // messages are all an answerer actor gets.
        Ok(())
    }
}

#[asksim::tokio::main(crate = "asksim::tokio", flavor = "current_thread", start_paused = true)]
async fn main() {
    let (web, _) = Actor::spawn(None, WebClient, ())
        .await
        .expect("the web client starts");
    let runtime = Runtime::start(RuntimeConfig {
        tool: ToolConfig::timed(Timeout::Window(30.0)),
        answerers: vec![AnswererSlot::Actor {
            name: "web".into(),
            actor: web,
        }],
        ..RuntimeConfig::default()
    })
    .await
    .expect("the runtime starts");
    let root = runtime.spawn_root("root", None).await.expect("a root agent");

    let outcome = root
        .ask(
            r#"{"questions":[{"id":"cleanup","question":"Proceed with the destructive cleanup?","header":"Confirm",
                "options":[{"label":"Yes, delete them (Recommended)"},{"label":"No, keep them"}]}],"timeout":10}"#,
        )
        .await;
    println!("{} -> {}", outcome.call_id, outcome.result.text);

    // The model goes on with other work; the answer arrives later as a user message.
    root.closed(&outcome.call_id).await;
    for message in root.user_messages().await {
        println!("user message: {message}");
    }
    runtime.shutdown().await;
}
