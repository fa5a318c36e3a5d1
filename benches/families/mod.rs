//! The scaling families of issue #19 and SPEC §8: scenarios of one shape at any
//! size N, for the `scaling` bench group and for whole-process runs
//! (`cargo run --release --example family -- tie 100000 > tie.json`). Each
//! stresses one way state grows: a tie of N at one instant, N questions open at a
//! process loss, one root with N children, a cancel of a tree of N agents, a
//! waterfall of D declining answerers, N late answers spread over time.

#![allow(dead_code)]

use serde_json::{Value, json};

/// A family of scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// N roots ask at one instant, twice each; one answerer answers after 10 s,
    /// past the 5 s window: a tie of N requests, then of N pending, then N late
    /// answers at one instant.
    Tie,
    /// N roots with a question pending when the process is lost; each is restored
    /// and re-offered at the restart and answered late to the resumed agent.
    Loss,
    /// One root spawns N-1 children, four of which ask and are refused as
    /// delegated; it joins them all and asks their four questions.
    Children,
    /// One root blocks on a `-1` call while N-1 children work; its turn is
    /// cancelled, which ends the call and every child's work.
    CancelTree,
    /// N roots ask through D answerers that decline before the last accepts.
    Waterfall(usize),
    /// N roots go pending and are answered late, at times spread over 100 s.
    Late,
    /// N roots blocked in a call, their turns cancelled one by one.
    CancelTurns,
    /// N roots with a pending question, stopped one by one.
    Stops,
}

impl Family {
    /// Every family, with the waterfall at depths 1, 8 and 64.
    pub const ALL: [Family; 10] = [
        Family::Tie,
        Family::Loss,
        Family::Children,
        Family::CancelTree,
        Family::Waterfall(1),
        Family::Waterfall(8),
        Family::Waterfall(64),
        Family::Late,
        Family::CancelTurns,
        Family::Stops,
    ];

    /// The family's name, as the bench ids and the example take it.
    pub fn name(self) -> String {
        match self {
            Family::Tie => "tie".into(),
            Family::Loss => "loss".into(),
            Family::Children => "children".into(),
            Family::CancelTree => "cancel_tree".into(),
            Family::Waterfall(d) => format!("waterfall_{d}"),
            Family::Late => "late".into(),
            Family::CancelTurns => "cancel_turns".into(),
            Family::Stops => "stops".into(),
        }
    }

    /// The family named `name`.
    pub fn named(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == name).or_else(|| {
            let d = name.strip_prefix("waterfall_")?.parse().ok()?;
            Some(Family::Waterfall(d))
        })
    }

    /// The scenario of this family at size `n` (n >= 2), as JSON text.
    pub fn scenario(self, n: usize) -> String {
        let n = n.max(2);
        let mut value = match self {
            Family::Tie => tie(n),
            Family::Loss => loss(n),
            Family::Children => children(n),
            Family::CancelTree => cancel_tree(n),
            Family::Waterfall(d) => waterfall(n, d),
            Family::Late => late(n),
            Family::CancelTurns => cancel_turns(n),
            Family::Stops => stops(n),
        };
        value["limits"] = json!({"events_max": self.events_max(n)});
        serde_json::to_string_pretty(&value).expect("JSON")
    }

    /// An events limit the family never reaches at size `n`: the default of
    /// 10^7 stopped a waterfall of 64 at 10^5 roots (each call's 64 offers and
    /// declines are ~130 events), and a run cut at a limit does less of the
    /// work it is measured by.
    pub fn events_max(self, n: usize) -> u64 {
        let per_unit = match self {
            Family::Waterfall(d) => 32 + 4 * d as u64,
            _ => 64,
        };
        (n as u64 * per_unit).max(10_000_000)
    }

    /// What the family counts per unit of N: calls, or agents for a tree.
    pub fn unit(self) -> &'static str {
        match self {
            Family::CancelTree | Family::Children => "agent",
            _ => "call",
        }
    }
}

fn question(id: &str) -> Value {
    json!({"id": id, "question": "Proceed with the step?", "header": "Confirm",
           "options": [{"label": "Yes (Recommended)"}, {"label": "No"}]})
}

fn ask(id: &str, timeout: f64) -> Value {
    json!({"ask": {"questions": [question(id)], "timeout": timeout}})
}

fn tie(n: usize) -> Value {
    json!({
        "name": format!("family-tie-{n}"),
        "about": "N roots ask at one instant, twice each; one answerer answers after 10 s, past the 5 s window.",
        "tool": {"mode": "timed", "timeout": 5},
        "answerers": [{"name": "web", "accepts": "all", "latency": 10.0, "answer": "recommended"}],
        "agents": [{"name": "root-{i}", "count": n, "script": [ask("a", 5.0), ask("b", 5.0)]}],
        "expect": {"counts": {"pending": 2 * n, "late_answered": 2 * n}}
    })
}

fn loss(n: usize) -> Value {
    json!({
        "name": format!("family-loss-{n}"),
        "about": "N roots have a question pending at a process loss; each is re-offered at the restart and answered late.",
        "tool": {"mode": "timed", "timeout": 5},
        "answerers": [{"name": "web", "accepts": "all", "latency": 30.0, "answer": "recommended"}],
        "agents": [{"name": "root-{i}", "count": n, "script": [ask("a", 5.0)],
                    "on_resume": [{"await_answer": "root-{i}/1"}]}],
        "events": [{"at": 10.0, "process_loss": {"restart_after": 1.0}}],
        "expect": {"counts": {"pending": n, "late_answered": n}}
    })
}

fn children(n: usize) -> Value {
    // Four children ask (a call holds at most four questions, SPEC §2.3); the
    // rest work for a second. All are live at once; the root joins each.
    let workers = n.saturating_sub(5);
    let asker =
        |k: usize| json!({"spawn": {"name": format!("asker-{k}"), "script": [ask(&format!("c{k}"), 5.0)]}});
    let mut script: Vec<Value> = (0..4).map(asker).collect();
    script.push(json!({"repeat": {"times": workers, "script": [{"spawn": {"name": "child-{r}", "script": [{"work": 1.0}]}}]}}));
    script.extend((0..4).map(|k| json!({"join": format!("asker-{k}")})));
    script.push(json!({"repeat": {"times": workers, "script": [{"join": "child-{r}"}]}}));
    script.push(json!({"ask_unresolved": {"timeout": 5}}));
    json!({
        "name": format!("family-children-{n}"),
        "about": "One root spawns N-1 children, four of which ask (and are refused as delegated); it joins them all and asks the four questions.",
        "tool": {"mode": "timed", "timeout": 5},
        "answerers": [{"name": "web", "accepts": "all", "latency": 1.0, "answer": "recommended"}],
        "agents": [{"name": "root", "script": script}],
        "expect": {"counts": {"DELEGATED_CALLER": 4, "answered": 1}}
    })
}

fn cancel_tree(n: usize) -> Value {
    let kids = n - 1;
    json!({
        "name": format!("family-cancel-tree-{n}"),
        "about": "A root blocks on a -1 call while N-1 children work; its turn is cancelled at 10 s.",
        "tool": {"mode": "timed", "timeout": -1},
        "answerers": [{"name": "web", "accepts": "all", "latency": "never", "answer": "recommended"}],
        "agents": [{"name": "root", "script": [
            {"repeat": {"times": kids, "script": [{"spawn": {"name": "child-{r}", "script": [{"work": 100.0}]}}]}},
            ask("a", -1.0)
        ]}],
        "events": [{"at": 10.0, "cancel_turn": "root"}],
        "expect": {"counts": {"ABORTED": 1}}
    })
}

fn waterfall(n: usize, depth: usize) -> Value {
    let mut answerers: Vec<Value> = (0..depth.saturating_sub(1))
        .map(|d| json!({"name": format!("decliner-{d}"), "accepts": "none"}))
        .collect();
    answerers.push(json!({"name": "web", "accepts": "all", "latency": 1.0, "answer": "recommended"}));
    json!({
        "name": format!("family-waterfall-{depth}-{n}"),
        "about": "N roots ask through a waterfall whose first D-1 answerers decline.",
        "tool": {"mode": "timed", "timeout": 30},
        "answerers": answerers,
        "agents": [{"name": "root-{i}", "count": n, "script": [ask("a", 30.0)]}],
        "expect": {"counts": {"answered": n}}
    })
}

fn late(n: usize) -> Value {
    json!({
        "name": format!("family-late-{n}"),
        "about": "N roots go pending after 1 s and are answered late, spread over 100 s.",
        "tool": {"mode": "timed", "timeout": 1},
        "answerers": [{"name": "web", "accepts": "all", "latency": {"uniform": [2.0, 100.0]}, "answer": "recommended"}],
        "agents": [{"name": "root-{i}", "count": n, "script": [ask("a", 1.0), {"await_answer": "root-{i}/1"}]}],
        "expect": {"counts": {"pending": n, "late_answered": n}}
    })
}

/// N scheduled events, each naming one agent: each must cost what it touches,
/// not every agent or call of the run.
fn one_by_one(n: usize, action: &str) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"at": 1.0 + i as f64 * 0.001, action: format!("root-{i}")}))
        .collect()
}

fn cancel_turns(n: usize) -> Value {
    json!({
        "name": format!("family-cancel-turns-{n}"),
        "about": "N roots block on a -1 call; their turns are cancelled one by one, a millisecond apart.",
        "tool": {"mode": "timed", "timeout": -1},
        "answerers": [{"name": "web", "accepts": "all", "latency": "never", "answer": "recommended"}],
        "agents": [{"name": "root-{i}", "count": n, "script": [ask("a", -1.0)]}],
        "events": one_by_one(n, "cancel_turn"),
        "expect": {"counts": {"ABORTED": n}}
    })
}

fn stops(n: usize) -> Value {
    json!({
        "name": format!("family-stops-{n}"),
        "about": "N roots go pending after 0.5 s and work on; they are stopped one by one, a millisecond apart, which withdraws their questions.",
        "tool": {"mode": "timed", "timeout": 0.5},
        "answerers": [{"name": "web", "accepts": "all", "latency": "never", "answer": "recommended"}],
        "agents": [{"name": "root-{i}", "count": n, "script": [ask("a", 0.5), {"work": 1000.0}]}],
        "events": one_by_one(n, "stop_agent"),
        "expect": {"counts": {"pending": n, "withdrawn": n}}
    })
}
