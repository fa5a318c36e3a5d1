//! The baseline of SPEC §8: a minimal broker on plain tokio channels (mpsc +
//! oneshot, no actors, no log) doing the same work as the actor runtime: it
//! validates the arguments with the same tool code, offers the request down a
//! waterfall of answerer tasks, opens a window, validates the batch and renders
//! the same result JSON. It has no identity checks, turns, holds, fail-over or
//! event log: it is what the work costs with nothing else around it.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use asksim::policy::AnswerPolicy;
use asksim::tool::{Question, ToolConfig, ToolResult, Wait, timed, validate_batch};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// A baseline answerer: accepts or declines at once; answers after `latency`
/// (never when `None`).
#[derive(Clone, Copy)]
pub struct Answerer {
    pub accepts: bool,
    pub latency: Option<Duration>,
}

enum Msg {
    Ask {
        arguments: String,
        reply: oneshot::Sender<String>,
        late: mpsc::UnboundedSender<String>,
    },
    Accept(u64, usize),
    Decline(u64, usize),
    Submit(u64, Value),
    Expire(u64),
}

struct Offer {
    id: u64,
    index: usize,
    questions: Arc<[Question]>,
}

struct Call {
    questions: Arc<[Question]>,
    reply: Option<oneshot::Sender<String>>,
    late: mpsc::UnboundedSender<String>,
}

/// A handle on a running baseline broker.
#[derive(Clone)]
pub struct Baseline {
    tx: mpsc::UnboundedSender<Msg>,
}

impl Baseline {
    /// Starts the broker and one task per answerer on the current runtime.
    pub fn start(tool: ToolConfig, answerers: &[Answerer]) -> Baseline {
        let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
        let mut offer_txs = Vec::new();
        for (index, answerer) in answerers.iter().copied().enumerate() {
            let (offer_tx, mut offer_rx) = mpsc::unbounded_channel::<Offer>();
            offer_txs.push(offer_tx);
            let broker = tx.clone();
            tokio::spawn(async move {
                while let Some(offer) = offer_rx.recv().await {
                    if !answerer.accepts {
                        let _ = broker.send(Msg::Decline(offer.id, index));
                        continue;
                    }
                    let _ = broker.send(Msg::Accept(offer.id, index));
                    if answerer.latency == Some(Duration::ZERO) {
                        let batch = AnswerPolicy::Recommended.batch(&offer.questions);
                        let _ = broker.send(Msg::Submit(offer.id, batch));
                    } else if let Some(latency) = answerer.latency {
                        let broker = broker.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(latency).await;
                            let batch = AnswerPolicy::Recommended.batch(&offer.questions);
                            let _ = broker.send(Msg::Submit(offer.id, batch));
                        });
                    }
                }
            });
        }
        let me = tx.clone();
        tokio::spawn(async move {
            let mut calls: HashMap<u64, Call> = HashMap::new();
            let mut next = 0u64;
            while let Some(msg) = rx.recv().await {
                match msg {
                    Msg::Ask {
                        arguments,
                        reply,
                        late,
                    } => {
                        let ask = match tool.prepare(&arguments) {
                            Ok(ask) => ask,
                            Err(e) => {
                                let _ = reply.send(e.to_result().text);
                                continue;
                            }
                        };
                        next += 1;
                        let id = next;
                        if let Wait::Window(s) = ask.wait {
                            let me = me.clone();
                            tokio::spawn(async move {
                                tokio::time::sleep(Duration::from_secs_f64(s)).await;
                                let _ = me.send(Msg::Expire(id));
                            });
                        }
                        let questions = ask.questions.clone();
                        calls.insert(
                            id,
                            Call {
                                questions: questions.clone(),
                                reply: Some(reply),
                                late,
                            },
                        );
                        let _ = offer_txs[0].send(Offer {
                            id,
                            index: 0,
                            questions,
                        });
                    }
                    Msg::Accept(..) => {}
                    Msg::Decline(id, index) => {
                        if let (Some(call), Some(tx)) = (calls.get(&id), offer_txs.get(index + 1)) {
                            let _ = tx.send(Offer {
                                id,
                                index: index + 1,
                                questions: call.questions.clone(),
                            });
                        }
                    }
                    Msg::Submit(id, batch) => {
                        let Some(call) = calls.remove(&id) else { continue };
                        let Ok(items) = validate_batch(&call.questions, &batch) else {
                            continue;
                        };
                        match call.reply {
                            Some(reply) => {
                                let _ = reply.send(timed::render_answers(&items));
                            }
                            None => {
                                let message = asksim::tool::result::late_answer_message("b/1", "[]", &items);
                                let _ = call.late.send(message);
                            }
                        }
                    }
                    Msg::Expire(id) => {
                        if let Some(call) = calls.get_mut(&id)
                            && let Some(reply) = call.reply.take()
                        {
                            let _ = reply.send(ToolResult::pending("b/1").text);
                        }
                    }
                }
            }
        });
        Baseline { tx }
    }

    /// One call: the result text, and a receiver for its late answer.
    pub async fn ask(&self, arguments: &str) -> (String, mpsc::UnboundedReceiver<String>) {
        let (reply, result) = oneshot::channel();
        let (late, late_rx) = mpsc::unbounded_channel();
        let _ = self.tx.send(Msg::Ask {
            arguments: arguments.to_owned(),
            reply,
            late,
        });
        (result.await.unwrap_or_default(), late_rx)
    }
}
