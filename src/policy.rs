//! Answerer policies as pure data: which requests an answerer accepts, how long it
//! takes, what it answers, when it holds and when it fails. The scenario format
//! reads them (serde) and the built-in answerer acts on them; nothing here knows
//! about actors, clocks or messages.

use std::time::Duration;

use rand::Rng;
use rand::rngs::StdRng;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::tool::Question;

/// Which requests an answerer accepts (`accepts`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
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
fn glob_matches(glob: &str, text: &str) -> bool {
    let glob: Vec<char> = glob.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut g, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if g < glob.len() && glob[g] == '*' {
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
    glob[g..].iter().all(|&c| c == '*')
}

/// A delay drawn from the run's generator (`offer_latency`, `latency`), seconds.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(
    rename_all = "snake_case",
    expecting = "{\"fixed\": s}, {\"uniform\": [a, b]}, {\"exp\": mean} or \"never\""
)]
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

/// What an answerer answers (`answer`), applied to every question of the call.
#[derive(Clone, Debug, PartialEq, Deserialize)]
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
    /// A draw, or `None` for `Never`.
    pub fn draw(&self, rng: &mut StdRng) -> Option<Duration> {
        let s = match *self {
            Latency::Fixed(s) => s,
            Latency::Uniform(a, b) if a < b => rng.gen_range(a..=b),
            Latency::Uniform(a, _) => a,
            Latency::Exp(mean) => -mean * (1.0 - rng.r#gen::<f64>()).ln(),
            Latency::Never => return None,
        };
        Some(Duration::from_secs_f64(s.max(0.0)))
    }
}

impl AnswerPolicy {
    /// The batch this policy submits for `questions`. An index out of range becomes
    /// a label no option has, so the broker refuses the batch (SPEC §5).
    pub fn batch(&self, questions: &[Question]) -> Value {
        if let AnswerPolicy::Batch(raw) = self {
            return raw.clone();
        }
        let label = |q: &Question, i: usize| match q.options.get(i) {
            Some(o) => o.label.clone(),
            None => format!("<no option {i}>"),
        };
        let items: Vec<Value> = questions
            .iter()
            .map(|q| match self {
                AnswerPolicy::Recommended => json!({"id": q.id, "selected": [label(q, 0)]}),
                AnswerPolicy::Option(i) => json!({"id": q.id, "selected": [label(q, *i)]}),
                AnswerPolicy::Options(is) => {
                    json!({"id": q.id, "selected": is.iter().map(|i| label(q, *i)).collect::<Vec<_>>()})
                }
                AnswerPolicy::Custom(text) => json!({"id": q.id, "selected": [], "custom": text}),
                AnswerPolicy::Skip | AnswerPolicy::Batch(_) => json!({"id": q.id, "selected": []}),
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

impl Policy {
    /// Accepts everything at once and picks the recommended option after `latency_s`.
    pub fn recommended_after(latency_s: f64) -> Policy {
        Policy {
            accepts: Accepts::All,
            offer_latency: Latency::Fixed(0.0),
            latency: Latency::Fixed(latency_s),
            answer: AnswerPolicy::Recommended,
            hold_after_s: None,
            crash_at_s: None,
            crash_after_accepts: None,
        }
    }
}
