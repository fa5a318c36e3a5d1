//! Before shrinking, a file's shorthand is written out: every `count` row becomes
//! its named copies and every `repeat` block its repetitions, so that each agent,
//! answerer and step is an element the shrinker can remove on its own.
//!
//! The substitutions are those of `scenario/build.rs`: `{r}` (the innermost
//! repetition) in spawn names, recursively through the spawned child's scripts,
//! and in `join` and `await_answer` strings; then `{i}` for a row with `count`
//! (also `count: 1`): in the name, in an agent's `lineage.parent` and, recursively,
//! in its spawn names and `join`/`await_answer` strings. Never in `ask` arguments,
//! which the runtime passes verbatim. The caller checks that the written-out file
//! parses to the very same scenario, so a slip here can never change what runs.

use serde_json::{Map, Value};

/// Writes out every `count` row and `repeat` block of a scenario's JSON; returns a
/// note for each row it fanned out (`agents[0] (count 20): worker0 … worker19`).
pub(super) fn expand(scenario: &mut Value) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(agents) = scenario.get_mut("agents").and_then(Value::as_array_mut) {
        for agent in agents.iter_mut() {
            for key in ["script", "on_resume"] {
                if let Some(steps) = agent.get_mut(key).and_then(Value::as_array_mut) {
                    unroll(steps);
                }
            }
        }
        *agents = fan_out(std::mem::take(agents), "agents", &mut notes, substitute_agent);
    }
    if let Some(answerers) = scenario.get_mut("answerers").and_then(Value::as_array_mut) {
        *answerers = fan_out(
            std::mem::take(answerers),
            "answerers",
            &mut notes,
            substitute_name,
        );
    }
    notes
}

/// Each row with a `count` becomes that many copies, `{i}` substituted by `each`.
fn fan_out(
    rows: Vec<Value>,
    list: &str,
    notes: &mut Vec<String>,
    each: fn(&mut Map<String, Value>, &str),
) -> Vec<Value> {
    let mut out = Vec::with_capacity(rows.len());
    for (k, mut row) in rows.into_iter().enumerate() {
        let count = row.as_object_mut().and_then(|row| row.shift_remove("count"));
        let Some(n) = count.as_ref().and_then(Value::as_u64) else {
            out.push(row);
            continue;
        };
        let first = out.len();
        for i in 0..n {
            let mut copy = row.clone();
            if let Some(object) = copy.as_object_mut() {
                each(object, &i.to_string());
            }
            out.push(copy);
        }
        let name = |value: Option<&Value>| {
            value
                .and_then(|row| row.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned()
        };
        let (first, last) = (name(out.get(first)), name(out.last()));
        let names = if n == 1 {
            first
        } else {
            format!("{first} … {last}")
        };
        notes.push(format!("{list}[{k}] (count {n}): {names}"));
    }
    out
}

fn substitute_name(row: &mut Map<String, Value>, i: &str) {
    substitute_key(row, "name", "{i}", i);
}

fn substitute_agent(row: &mut Map<String, Value>, i: &str) {
    substitute_name(row, i);
    if let Some(lineage) = row.get_mut("lineage").and_then(Value::as_object_mut) {
        substitute_key(lineage, "parent", "{i}", i);
    }
    substitute_scripts(row, "{i}", i);
}

fn substitute_key(object: &mut Map<String, Value>, key: &str, pattern: &str, value: &str) {
    if let Some(Value::String(text)) = object.get_mut(key) {
        substitute(text, pattern, value);
    }
}

fn substitute(text: &mut String, pattern: &str, value: &str) {
    if text.contains(pattern) {
        *text = text.replace(pattern, value);
    }
}

/// Substitutes in the `script` and `on_resume` of an agent or a spawned child.
fn substitute_scripts(agent: &mut Map<String, Value>, pattern: &str, value: &str) {
    for key in ["script", "on_resume"] {
        if let Some(steps) = agent.get_mut(key).and_then(Value::as_array_mut) {
            substitute_steps(steps, pattern, value);
        }
    }
}

/// Substitutes in the strings of `steps` that name agents or calls.
fn substitute_steps(steps: &mut [Value], pattern: &str, value: &str) {
    for step in steps {
        let Some(step) = step.as_object_mut() else {
            continue;
        };
        for key in ["join", "await_answer"] {
            substitute_key(step, key, pattern, value);
        }
        if let Some(child) = step.get_mut("spawn").and_then(Value::as_object_mut) {
            substitute_key(child, "name", pattern, value);
            substitute_scripts(child, pattern, value);
        }
    }
}

/// Replaces every `repeat` step by its repetitions, inner blocks and spawned
/// children's scripts first (so `{r}` is the innermost repetition).
fn unroll(steps: &mut Vec<Value>) {
    let mut out = Vec::with_capacity(steps.len());
    for mut step in std::mem::take(steps) {
        if let Some(child) = step.get_mut("spawn").and_then(Value::as_object_mut) {
            for key in ["script", "on_resume"] {
                if let Some(steps) = child.get_mut(key).and_then(Value::as_array_mut) {
                    unroll(steps);
                }
            }
        }
        let Some(repeat) = step.get_mut("repeat").and_then(Value::as_object_mut) else {
            out.push(step);
            continue;
        };
        let times = repeat.get("times").and_then(Value::as_u64).unwrap_or(0);
        let mut body = match repeat.shift_remove("script") {
            Some(Value::Array(body)) => body,
            _ => Vec::new(),
        };
        unroll(&mut body);
        for r in 0..times {
            let mut copy = body.clone();
            substitute_steps(&mut copy, "{r}", &r.to_string());
            out.extend(copy);
        }
    }
    *steps = out;
}
