//! Answerer policies as pure data: which requests an answerer accepts, how long it
//! takes, what it answers, when it holds and when it fails. The scenario format
//! reads them (serde) and the built-in answerer acts on them; nothing here knows
//! about actors, clocks or messages.

use std::fmt;
use std::time::Duration;

use rand::Rng;
use rand::rngs::StdRng;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Unexpected, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use crate::tool::Question;

/// Which requests an answerer accepts (`accepts`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(
    rename_all = "snake_case",
    expecting = "\"all\", \"keyed\", \"legacy\", \"none\" or {\"agents\": [globs]}"
)]
pub enum Accepts {
    /// Every request.
    All,
    /// Keyed requests only (every timed call).
    Keyed,
    /// Unkeyed requests only (legacy calls).
    Legacy,
    /// Nothing: it declines every offer.
    None,
    /// Requests from agents whose name matches one of these globs (`*` matches
    /// any run of characters, including none; nothing else is special).
    Agents(Vec<String>),
}

impl Accepts {
    /// Requests from agents whose name matches one of `globs` (`{"agents": […]}`).
    pub fn agents<S: Into<String>>(globs: impl IntoIterator<Item = S>) -> Accepts {
        Accepts::Agents(globs.into_iter().map(Into::into).collect())
    }

    /// Whether a request from `agent`, keyed or not, is accepted.
    pub fn matches(&self, agent: &str, keyed: bool) -> bool {
        match self {
            Accepts::All => true,
            Accepts::Keyed => keyed,
            Accepts::Legacy => !keyed,
            Accepts::None => false,
            Accepts::Agents(globs) => globs.iter().any(|glob| glob_matches(glob, agent)),
        }
    }
}

/// Whether `text` matches `glob`, where `*` matches any run of characters.
/// Greedy with one backtrack point: linear in practice, never exponential.
///
/// Compared byte by byte, with no copy: an answerer's `accepts` is matched at
/// every offer, and the two vectors of `char`s a match took were 3% of the
/// world thread's samples in `load-mixed-30k` (BENCHMARKS.md, 42nd session).
/// Bytes give what characters give: `*` is one byte,
/// and a literal run of the glob (whole characters of valid UTF-8) can match
/// the text's bytes only from one of its character boundaries, since a
/// UTF-8 lead byte never equals a continuation byte.
fn glob_matches(glob: &str, text: &str) -> bool {
    let (glob, text) = (glob.as_bytes(), text.as_bytes());
    let (mut g, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if g < glob.len() && glob[g] == b'*' {
            star = Some((g, t));
            g += 1;
        } else if g < glob.len() && glob[g] == text[t] {
            g += 1;
            t += 1;
        } else if let Some((star_g, star_t)) = star {
            g = star_g + 1;
            t = star_t + 1;
            star = Some((star_g, star_t + 1));
        } else {
            return false;
        }
    }
    glob[g..].iter().all(|&c| c == b'*')
}

/// A delay drawn from the run's generator (`offer_latency`, `latency`), seconds.
///
/// Written as a bare number of seconds (the same as `{"fixed": s}`), `"never"`, or
/// an object with exactly one key: `{"fixed": s}`, `{"uniform": [a, b]}`,
/// `{"exp": mean}`. Read by a visitor straight from the text (no buffering,
/// so serde's errors keep their line and column).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Latency {
    /// Always this many seconds.
    Fixed(f64),
    /// Uniform between the two bounds (min ≤ max).
    Uniform(f64, f64),
    /// Exponential with this mean (positive).
    Exp(f64),
    /// Never: the answerer never replies (to an offer) or never submits.
    Never,
}

/// How a [`Latency`] was written: a bare number, or `"never"` or a one-key object.
/// The scenario format names the value itself (`latency`), not `latency.fixed`, in
/// an error about a bare number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Written {
    /// A bare number of seconds.
    Bare,
    /// `"never"` or an object with one key.
    Tagged,
}

/// Reads a [`Latency`] in any of its forms, and how it was written.
pub(crate) struct LatencyVisitor;

impl<'de> Visitor<'de> for LatencyVisitor {
    type Value = (Latency, Written);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("seconds, {\"fixed\": s}, {\"uniform\": [a, b]}, {\"exp\": mean} or \"never\"")
    }

    fn visit_f64<E: de::Error>(self, s: f64) -> Result<Self::Value, E> {
        Ok((Latency::Fixed(s), Written::Bare))
    }

    fn visit_u64<E: de::Error>(self, s: u64) -> Result<Self::Value, E> {
        self.visit_f64(s as f64)
    }

    fn visit_i64<E: de::Error>(self, s: i64) -> Result<Self::Value, E> {
        self.visit_f64(s as f64)
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        match s {
            "never" => Ok((Latency::Never, Written::Tagged)),
            // In serde's words for an unknown variant, so that the scenario format's
            // "did you mean" reads it like any other.
            _ => Err(E::custom(format_args!(
                "unknown variant `{s}`, expected `never`, seconds or an object {{\"fixed\": s}}, {{\"uniform\": [a, b]}} or {{\"exp\": mean}}"
            ))),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // Read to its end first: the error is then located on the array, not on
        // its first element.
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Err(de::Error::invalid_type(Unexpected::Seq, &self))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let Some(key) = map.next_key::<String>()? else {
            return Err(de::Error::invalid_length(0, &"an object with exactly one key"));
        };
        let latency = match key.as_str() {
            "fixed" => Latency::Fixed(map.next_value()?),
            "uniform" => {
                let (min, max) = map.next_value()?;
                Latency::Uniform(min, max)
            }
            "exp" => Latency::Exp(map.next_value()?),
            _ => return Err(de::Error::unknown_variant(&key, &["fixed", "uniform", "exp"])),
        };
        if let Some(second) = map.next_key::<String>()? {
            return Err(de::Error::custom(format_args!(
                "expected an object with exactly one key, got a second key `{second}`"
            )));
        }
        Ok((latency, Written::Tagged))
    }
}

impl<'de> Deserialize<'de> for Latency {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(LatencyVisitor)
            .map(|(latency, _)| latency)
    }
}

/// Hand-written: the custom [`Deserialize`] above leaves nothing to derive from.
impl JsonSchema for Latency {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Latency".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let seconds = json!({ "type": "number", "minimum": 0 });
        let one_key = |key: &str, value: Value| {
            json!({
                "type": "object",
                "properties": { key: value },
                "required": [key],
                "additionalProperties": false
            })
        };
        let uniform = json!({ "type": "array", "items": seconds, "minItems": 2, "maxItems": 2 });
        json_schema!({
            "description": "Seconds: a bare number (the same as {\"fixed\": s}), {\"fixed\": s}, \
                            {\"uniform\": [min, max]}, {\"exp\": mean} or \"never\".",
            "anyOf": [
                seconds,
                { "const": "never" },
                one_key("fixed", seconds.clone()),
                one_key("uniform", uniform),
                one_key("exp", json!({ "type": "number", "exclusiveMinimum": 0 })),
            ]
        })
    }
}

/// What an answerer answers (`answer`), applied to every question of the call.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(
    rename_all = "snake_case",
    expecting = "\"recommended\", \"skip\", {\"option\": i}, {\"options\": [i, …]}, {\"custom\": text} or {\"batch\": items}"
)]
pub enum AnswerPolicy {
    /// The first option.
    Recommended,
    /// The option at this 0-based index (out of range: a refused batch at run time).
    Option(usize),
    /// These options (0-based).
    Options(Vec<usize>),
    /// This custom text.
    Custom(String),
    /// Skip every question.
    Skip,
    /// These raw answer items, submitted as they are (for bad-batch tests).
    Batch(Value),
}

impl Latency {
    /// Always `s` seconds (`s`, `{"fixed": s}`).
    pub fn fixed(s: f64) -> Latency {
        Latency::Fixed(s)
    }

    /// Uniform between `a` and `b` seconds (`{"uniform": [a, b]}`).
    pub fn uniform(a: f64, b: f64) -> Latency {
        Latency::Uniform(a, b)
    }

    /// Exponential with a mean of `mean` seconds (`{"exp": mean}`).
    pub fn exp(mean: f64) -> Latency {
        Latency::Exp(mean)
    }

    /// A draw, or `None` for `Never`.
    pub fn draw(&self, rng: &mut StdRng) -> Option<Duration> {
        let s = match *self {
            Latency::Fixed(s) => s,
            Latency::Uniform(a, b) if a < b => rng.gen_range(a..=b),
            Latency::Uniform(a, _) => a,
            Latency::Exp(mean) => -mean * (1.0 - rng.r#gen::<f64>()).ln(),
            Latency::Never => return None,
        };
        // An exponential tail may go past any run's limit; it still makes a
        // Duration (a run simply stops at its limit).
        Some(Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX))
    }
}

impl AnswerPolicy {
    /// The batch this policy submits for `questions`. An index out of range becomes
    /// a label no option has, so the broker refuses the batch (SPEC §5).
    pub fn batch(&self, questions: &[Question]) -> Value {
        if let AnswerPolicy::Batch(raw) = self {
            return raw.clone();
        }
        let label = |q: &Question, i: usize| match q.option(i) {
            Some(o) => o.label.to_owned(),
            None => format!("<no option {i}>"),
        };
        let items: Vec<Value> = questions
            .iter()
            .map(|q| match self {
                AnswerPolicy::Recommended => json!({"id": q.id(), "selected": [label(q, 0)]}),
                AnswerPolicy::Option(i) => json!({"id": q.id(), "selected": [label(q, *i)]}),
                AnswerPolicy::Options(is) => {
                    json!({"id": q.id(), "selected": is.iter().map(|i| label(q, *i)).collect::<Vec<_>>()})
                }
                AnswerPolicy::Custom(text) => json!({"id": q.id(), "selected": [], "custom": text}),
                AnswerPolicy::Skip | AnswerPolicy::Batch(_) => json!({"id": q.id(), "selected": []}),
            })
            .collect();
        Value::Array(items)
    }
}

/// A built-in answerer's behaviour.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// Which requests it accepts.
    pub accepts: Accepts,
    /// From an offer to its accept or decline.
    pub offer_latency: Latency,
    /// From its accept to its submit.
    pub latency: Latency,
    /// What it answers.
    pub answer: AnswerPolicy,
    /// Holds the window this many seconds after its accept.
    pub hold_after_s: Option<f64>,
    /// Dies at this run time.
    pub crash_at_s: Option<f64>,
    /// Dies right after its n-th accept.
    pub crash_after_accepts: Option<u64>,
}

/// Constructors for every form of a scenario's answerer row (SPEC §5): `new` for
/// `accepts`, `latency` and `answer`, a `with_` method for each optional key.
/// [`crate::scenario::policy`] reads a row's JSON, checked as a file's row is;
/// built here, the values are taken as given (the runtime draws what it is
/// told: keep times finite and non-negative, `uniform` bounds in order).
impl Policy {
    /// `accepts`, `latency` (accept to submit) and `answer`; an offer latency of
    /// 0, no hold, no faults.
    pub fn new(accepts: Accepts, latency: Latency, answer: AnswerPolicy) -> Policy {
        Policy {
            accepts,
            offer_latency: Latency::Fixed(0.0),
            latency,
            answer,
            hold_after_s: None,
            crash_at_s: None,
            crash_after_accepts: None,
        }
    }

    /// Accepts everything at once and picks the recommended option after `latency_s`.
    pub fn recommended_after(latency_s: f64) -> Policy {
        Policy::new(Accepts::All, Latency::Fixed(latency_s), AnswerPolicy::Recommended)
    }

    /// Declines every offer (`"accepts": "none"`).
    pub fn declining() -> Policy {
        Policy::new(Accepts::None, Latency::Never, AnswerPolicy::Recommended)
    }

    /// This offer latency: from an offer to its accept or decline
    /// (`offer_latency`; [`Latency::Never`]: it never replies, and the broker's
    /// offer timeout moves on).
    pub fn with_offer_latency(mut self, offer_latency: Latency) -> Policy {
        self.offer_latency = offer_latency;
        self
    }

    /// Holds the window `after_s` seconds after its accept (`hold.after`).
    pub fn with_hold_after(mut self, after_s: f64) -> Policy {
        self.hold_after_s = Some(after_s);
        self
    }

    /// Dies at `at_s` seconds into the run (`faults.crash_at`).
    pub fn with_crash_at(mut self, at_s: f64) -> Policy {
        self.crash_at_s = Some(at_s);
        self
    }

    /// Dies right after its `n`-th accept (`faults.crash_after_accepts`, n ≥ 1).
    pub fn with_crash_after_accepts(mut self, n: u64) -> Policy {
        self.crash_after_accepts = Some(n);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The same match on characters, the definition the byte version keeps.
    fn glob_matches_chars(glob: &[char], text: &[char]) -> bool {
        match glob.split_first() {
            None => text.is_empty(),
            Some(('*', rest)) => (0..=text.len()).any(|skip| glob_matches_chars(rest, &text[skip..])),
            Some((c, rest)) => text.first() == Some(c) && glob_matches_chars(rest, &text[1..]),
        }
    }

    proptest! {
        /// Bytes give what characters give, over ASCII and multi-byte
        /// characters that share lead bytes (é, è, ü) or continuation bytes
        /// (—, 😀).
        #[test]
        fn a_byte_match_is_a_character_match(
            glob in "[a*éèü—😀]{0,8}",
            text in "[aéèü—😀]{0,10}",
        ) {
            let chars = |s: &str| s.chars().collect::<Vec<char>>();
            prop_assert_eq!(glob_matches(&glob, &text), glob_matches_chars(&chars(&glob), &chars(&text)));
        }
    }
}
