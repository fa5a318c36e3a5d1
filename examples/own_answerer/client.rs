//! A web client as a sans-IO answerer: the card a person answers in a browser.
//! It takes keyed (timed) questions only, since a card is addressed by callId;
//! it holds the window when the person opens the card (`OPEN_AFTER`), and submits
//! the recommended option when they click (`think` after the offer). A
//! withdrawal closes the card; a refusal is shown to the person.
//!
//! Nothing here reads a clock or spawns a task: it answers inputs with replies
//! and timers, so the same code runs under the simulator (every order of a tie,
//! every seed) and on the actor runtime (real time).

use std::collections::BTreeMap;
use std::time::Duration;

use asksim::answerer::{Answerer, AnswererInput, AnswererMsg, Replies, Reply, TimerId};
use asksim::protocol::{Offer, Ticket};
use asksim::serde_json::{Value, json};

/// How long after the offer the person opens the card (and the client holds).
pub const OPEN_AFTER: Duration = Duration::from_secs(1);

/// What one of the client's timers does.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// The person opened the card: hold the window.
    Open(Ticket),
    /// The person clicked: submit.
    Click(Ticket),
}

/// One card on screen.
#[derive(Debug)]
struct Card {
    offer: Offer,
    timers: Vec<TimerId>,
}

/// The web client.
#[derive(Debug)]
pub struct WebClient {
    think: Duration,
    cards: BTreeMap<Ticket, Card>,
    steps: BTreeMap<TimerId, Step>,
    next_timer: TimerId,
    /// Refusals the person was shown (`"submit: settled"`).
    pub refusals: Vec<String>,
}

impl WebClient {
    /// A client whose person clicks `think` after each offer.
    pub fn new(think: Duration) -> WebClient {
        WebClient {
            think,
            cards: BTreeMap::new(),
            steps: BTreeMap::new(),
            next_timer: 0,
            refusals: Vec::new(),
        }
    }

    fn timer(&mut self, after: Duration, step: Step, ticket: Ticket, out: &mut Replies<'_>) {
        self.next_timer += 1;
        out.start_timer(self.next_timer, after);
        self.steps.insert(self.next_timer, step);
        if let Some(card) = self.cards.get_mut(&ticket) {
            card.timers.push(self.next_timer);
        }
    }

    fn close(&mut self, ticket: Ticket, out: &mut Replies<'_>) {
        for timer in self.cards.remove(&ticket).map(|c| c.timers).unwrap_or_default() {
            self.steps.remove(&timer);
            out.cancel_timer(timer);
        }
    }
}

/// The batch a person who takes the recommended option gives: per question,
/// the option marked `(Recommended)`, else the first.
fn recommended(offer: &Offer) -> Value {
    let items: Vec<Value> = (offer.questions.iter())
        .map(|q| {
            let pick = (q.options())
                .find(|o| o.label.contains("(Recommended)"))
                .or(q.option(0))
                .map(|o| o.label);
            json!({"id": q.id(), "selected": pick.into_iter().collect::<Vec<_>>()})
        })
        .collect();
    Value::Array(items)
}

impl Answerer for WebClient {
    fn handle(&mut self, input: AnswererInput, out: &mut Replies<'_>) {
        match input {
            // A legacy question has no callId: no card can show it.
            AnswererInput::Broker(AnswererMsg::Offer(offer)) if offer.call_id.is_none() => {
                out.reply(offer.ticket, Reply::Decline)
            }
            AnswererInput::Broker(AnswererMsg::Offer(offer)) => {
                let ticket = offer.ticket;
                out.reply(ticket, Reply::Accept);
                self.cards.insert(
                    ticket,
                    Card {
                        offer: *offer,
                        timers: Vec::new(),
                    },
                );
                self.timer(OPEN_AFTER, Step::Open(ticket), ticket, out);
                self.timer(self.think, Step::Click(ticket), ticket, out);
            }
            AnswererInput::Timer(id) => match self.steps.remove(&id) {
                Some(Step::Open(ticket)) => out.reply(ticket, Reply::Hold),
                Some(Step::Click(ticket)) => {
                    if let Some(card) = self.cards.get(&ticket) {
                        let batch = recommended(&card.offer);
                        out.reply(ticket, Reply::Submit(batch.into()));
                    }
                    self.close(ticket, out);
                }
                None => {}
            },
            AnswererInput::Broker(AnswererMsg::Withdraw { ticket }) => self.close(ticket, out),
            AnswererInput::Broker(AnswererMsg::Refused { what, reason, .. }) => {
                self.refusals
                    .push(format!("{}: {}", what.as_str(), reason.as_str()));
            }
        }
    }
}
