//! Shapes both roles of PROTOCOL.md share: the time stamp on every line asksim
//! writes, the `hello` handshake and its reply, turn ids as text, and questions
//! as the wire shows them. Pure data: no I/O.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::protocol::{Nanos, Turn, TurnId, seconds};
use crate::tool::{Question, QuestionOption};

/// The protocol version this build speaks (PROTOCOL.md "Versioning").
pub const PROTOCOL_VERSION: u32 = 1;

/// The virtual time on a line asksim writes: seconds for reading, nanoseconds
/// for arithmetic (exact; the same instant).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stamp {
    /// Seconds since the run started, as the log prints them.
    pub t: f64,
    /// The same instant in whole nanoseconds.
    pub t_ns: u64,
}

impl Stamp {
    /// The stamp of `now`.
    pub fn at(now: Nanos) -> Stamp {
        Stamp {
            t: seconds(now),
            t_ns: now,
        }
    }
}

/// One line asksim writes: the stamp and one message (`msg` names it).
#[derive(Debug, Serialize, Deserialize)]
pub struct Line<M> {
    /// When.
    #[serde(flatten)]
    pub stamp: Stamp,
    /// What.
    #[serde(flatten)]
    pub msg: M,
}

/// Which side of the seam a process plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The `userQuestions` broker.
    Broker,
    /// One answerer of the waterfall.
    Answerer,
}

/// The first line of every life of a process.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Hello<C> {
    /// The version asksim speaks.
    pub protocol: u32,
    /// The role the process plays.
    pub role: Role,
    /// Which life of the runtime this is: 1, then one more after each process loss.
    pub life: u32,
    /// The scenario's name (for the implementation's own logs).
    pub scenario: String,
    /// The run's seed (for the implementation's own logs).
    pub seed: u64,
    /// The role's configuration.
    pub config: C,
}

/// Which life of which run a process starts in: what its `hello` says beside
/// the role's configuration.
#[derive(Clone, Copy, Debug)]
pub struct Life<'a> {
    /// 1, then one more after each process loss.
    pub life: u32,
    /// The scenario's name.
    pub scenario: &'a str,
    /// The run's seed.
    pub seed: u64,
}

impl Life<'_> {
    /// The `hello` of this life for `role`, configured with `config`.
    pub fn hello<C>(&self, role: Role, config: C) -> Hello<C> {
        Hello {
            protocol: PROTOCOL_VERSION,
            role,
            life: self.life,
            scenario: self.scenario.to_owned(),
            seed: self.seed,
            config,
        }
    }
}

/// The reply to any line: what the process does (`do`), and for `hello` the
/// version it speaks, for `status` the calls it holds open.
#[derive(Debug, Serialize, Deserialize)]
pub struct Reply<E> {
    /// The version the process speaks (the reply to `hello` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<u32>,
    /// The process's open calls: callId → `"waiting"` or `"pending"` (the reply
    /// to a broker's `status` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open: Option<std::collections::BTreeMap<String, String>>,
    /// What it does, in order.
    #[serde(rename = "do")]
    pub effects: Vec<E>,
}

impl<E> Reply<E> {
    /// A reply that does `effects`.
    pub fn effects(effects: Vec<E>) -> Reply<E> {
        Reply {
            protocol: None,
            open: None,
            effects,
        }
    }
}

/// A turn id as text: `"<agent>.<n>"`.
pub fn turn_id_text(id: TurnId) -> String {
    format!("{}.{}", id.agent, id.n)
}

/// The turn id a text names, if it is one.
pub fn parse_turn_id(text: &str) -> Option<TurnId> {
    let (agent, n) = text.split_once('.')?;
    Some(TurnId {
        agent: agent.parse().ok()?,
        n: n.parse().ok()?,
    })
}

/// A turn as the wire shows it: its chain of ids, outermost first.
pub fn turn_chain(turn: &Turn) -> Vec<String> {
    turn.chain().iter().map(|id| turn_id_text(*id)).collect()
}

/// The turn a chain names, if every id parses and there is one at least.
pub fn parse_turn(chain: &[String]) -> Option<Turn> {
    let (first, rest) = chain.split_first()?;
    let mut turn = Turn::root(parse_turn_id(first)?);
    for id in rest {
        turn = turn.derive(parse_turn_id(id)?);
    }
    Some(turn)
}

/// A call's validated questions as the wire shows them (PROTOCOL.md
/// "Questions"): shared, not copied, on the way out.
#[derive(Clone, Debug, PartialEq)]
pub struct Questions(pub Arc<[Question]>);

#[derive(Serialize, Deserialize)]
struct WireOption<'a> {
    #[serde(borrow)]
    label: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    description: std::borrow::Cow<'a, str>,
}

#[derive(Serialize, Deserialize)]
struct WireQuestion<'a> {
    #[serde(borrow)]
    id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    question: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    header: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    options: Vec<WireOption<'a>>,
    #[serde(rename = "multiSelect")]
    multi_select: bool,
}

impl Serialize for Questions {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for q in self.0.iter() {
            seq.serialize_element(&WireQuestion {
                id: q.id().into(),
                question: q.question().into(),
                header: q.header().into(),
                options: q
                    .options()
                    .map(|o| WireOption {
                        label: o.label.into(),
                        description: o.description.into(),
                    })
                    .collect(),
                multi_select: q.multi_select(),
            })?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Questions {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire: Vec<WireQuestion<'_>> = Vec::deserialize(deserializer)?;
        let questions: Vec<Question> = wire
            .iter()
            .map(|q| {
                let options = q.options.iter().map(|o| QuestionOption {
                    label: &o.label,
                    description: &o.description,
                });
                Question::try_new(&q.id, &q.question, &q.header, options, q.multi_select)
                    .ok_or_else(|| serde::de::Error::custom("a question's texts pass 4 GiB"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Questions(questions.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_goes_over_the_wire_and_back() {
        let turn = Turn::root(TurnId { agent: 1, n: 1 }).derive(TurnId { agent: 12, n: 3 });
        let chain = turn_chain(&turn);
        assert_eq!(chain, ["1.1", "12.3"]);
        assert_eq!(parse_turn(&chain), Some(turn));
        assert_eq!(parse_turn(&[]), None);
        assert_eq!(parse_turn(&["1".into()]), None);
        assert_eq!(parse_turn(&["a.1".into()]), None);
    }

    #[test]
    fn questions_go_over_the_wire_and_back() {
        let questions = Questions(
            vec![Question::new(
                "q",
                "Go \"now\"?",
                "Go",
                [
                    QuestionOption {
                        label: "Yes",
                        description: "",
                    },
                    QuestionOption {
                        label: "No",
                        description: "stop",
                    },
                ],
                false,
            )]
            .into(),
        );
        let text = serde_json::to_string(&questions).unwrap();
        assert_eq!(
            text,
            r#"[{"id":"q","question":"Go \"now\"?","header":"Go","options":[{"label":"Yes","description":""},{"label":"No","description":"stop"}],"multiSelect":false}]"#
        );
        let back: Questions = serde_json::from_str(&text).unwrap();
        assert_eq!(back, questions);
    }
}
