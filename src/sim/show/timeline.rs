//! The run as people read it: one line per event, in the order the actors did
//! it (`asksim run --timeline`), and, under each of a failing run's first
//! violations, the events of the call it names, so that the race is readable
//! without opening the log.
//!
//! A line is the time, the actor (the agent or answerer the event is about,
//! padded to the longest name among the events shown, so every text starts in
//! one column), and what happened. A process loss and a restart are rules across
//! the page. An answer line ends with what became of its batch (`-> answered`,
//! `-> refused: not_owner`, ...), read from the next event about its call. A
//! result names its kind as the event records it ([`EventKind::result_kind`]),
//! never by reading its text again.
//!
//! Pure: events in, strings out; it never fails and never panics, whatever a log
//! holds (text is cut, control characters are escaped, a malformed batch is shown
//! as JSON).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::event::{Event, EventKind};
use crate::sim::judge::invariants::Violation;
use crate::tool::ResultKind;

/// Most violations of one report that get their call's timeline: the first few
/// show the race; more would bury the verdict.
pub const VIOLATION_TIMELINES_MAX: usize = 5;

/// Most lines of one call's timeline under a violation. A longer one keeps its
/// first and last halves and the offending event, and says how many it left out.
pub const CALL_TIMELINE_LINES_MAX: usize = 40;

/// Longest free text on a line (questions, results, dropped events), in
/// characters; longer text is cut with `…`.
const TEXT_CHARS_MAX: usize = 100;

/// Width of a rule (process loss, restart), in characters.
const RULE_CHARS: usize = 72;

/// Marks the event a violation names, in the gutter of its call's timeline.
const MARK: &str = "▶ ";

/// One line per event of `events`, in order (the log's closing `end` event is
/// no actor's doing, and is not shown).
pub fn timeline(events: &[Event]) -> Vec<String> {
    let shown: Vec<&Event> = events
        .iter()
        .filter(|e| !matches!(e.kind, EventKind::End { .. }))
        .collect();
    render(&shown)
}

/// The timeline of one call: its events only (`Event.kind.call_id() ==
/// Some(call_id)`), with every process loss and restart as rules.
pub fn call_timeline(events: &[Event], call_id: &str) -> Vec<String> {
    let shown: Vec<&Event> = events.iter().filter(|e| about(e, Some(call_id), None)).collect();
    render(&shown)
}

/// What a report prints under `violation`: the timeline of the call it names,
/// plus the offending event if that is not the call's own (a turn signal, say),
/// that event marked `▶`, cut to [`CALL_TIMELINE_LINES_MAX`] lines. A violation
/// that names no call gets the offending event alone.
pub fn violation_timeline(events: &[Event], violation: &Violation) -> Vec<String> {
    let call_id = violation.call_id.as_deref();
    let shown: Vec<&Event> = events
        .iter()
        .filter(|e| about(e, call_id, Some(violation.seq)))
        .collect();
    let lines = render(&shown);
    let marked = shown.iter().position(|e| e.seq == violation.seq);
    let (half, n) = (CALL_TIMELINE_LINES_MAX / 2, lines.len());
    let keep = |i: usize| i < half || i + half >= n || Some(i) == marked;
    let mut out = Vec::new();
    let mut left_out = 0;
    for (i, line) in lines.into_iter().enumerate() {
        if !keep(i) {
            left_out += 1;
            continue;
        }
        if left_out > 0 {
            out.push(format!("  … {left_out} events not shown"));
            left_out = 0;
        }
        let gutter = if Some(i) == marked { MARK } else { "  " };
        out.push(format!("{gutter}{line}"));
    }
    out
}

/// Writes [`violation_timeline`] under the `index`-th violation of a report,
/// indented under its `  VIOLATION` line, for the first
/// [`VIOLATION_TIMELINES_MAX`] only.
pub fn write_violation_timeline(out: &mut String, events: &[Event], index: usize, violation: &Violation) {
    if index >= VIOLATION_TIMELINES_MAX {
        return;
    }
    for line in violation_timeline(events, violation) {
        let _ = writeln!(out, "    {line}");
    }
}

/// Whether a call's timeline shows `event`: the call's own events, the rules,
/// and the offending one.
fn about(event: &Event, call_id: Option<&str>, seq: Option<u64>) -> bool {
    let rule = matches!(event.kind, EventKind::ProcessLoss { .. } | EventKind::Restart);
    rule || (call_id.is_some() && event.kind.call_id() == call_id) || Some(event.seq) == seq
}

/// The aligned lines of `events`, with each answer's fate appended.
fn render(events: &[&Event]) -> Vec<String> {
    let names: Vec<Cow<str>> = events.iter().map(|e| clean(actor(&e.kind))).collect();
    let name_w = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let times: Vec<String> = events.iter().map(|e| format!("{:.3}", e.t)).collect();
    let time_w = times.iter().map(String::len).max().unwrap_or(0);
    let mut lines: Vec<String> = Vec::with_capacity(events.len());
    // The answer line of each call that waits for what became of its batch.
    let mut awaiting: BTreeMap<&str, usize> = BTreeMap::new();
    let mut calls = Calls::default();
    for ((event, name), time) in events.iter().zip(&names).zip(&times) {
        let stamp = format!("{time:>time_w$} s  ");
        let mut line = match rule_text(&event.kind) {
            Some(text) => rule(&stamp, &text),
            None => format!("{stamp}{name:<name_w$} {}", clean(&text(&event.kind))),
        };
        if let EventKind::CancelCall { call_id } = &event.kind
            && let Some(note) = calls.unmatched(call_id)
        {
            let _ = write!(line, ": matched nothing ({note})");
        }
        calls.see(&event.kind);
        if let Some(call_id) = event.kind.call_id() {
            if let (Some(i), Some(fate)) = (awaiting.remove(call_id), fate(&event.kind)) {
                let _ = write!(lines[i], " -> {}", clean(&fate));
            }
            if matches!(event.kind, EventKind::Answer { .. }) {
                awaiting.insert(call_id, lines.len());
            }
        }
        lines.push(line);
    }
    lines
}

/// The calls asked so far and the ones still open, to say when a `cancel_call`
/// matched nothing (the broker logs it either way).
#[derive(Default)]
struct Calls<'e> {
    asked: std::collections::BTreeSet<&'e str>,
    /// Open calls, and whether each is legacy (gone at a process loss).
    open: BTreeMap<&'e str, bool>,
}

impl<'e> Calls<'e> {
    fn see(&mut self, kind: &'e EventKind) {
        match kind {
            EventKind::Request { call_id, schema, .. } => {
                self.asked.insert(call_id);
                self.open.insert(call_id, *schema == crate::tool::Schema::Legacy);
            }
            EventKind::Result { call_id, .. } if kind.result_kind() != Some(ResultKind::Pending) => {
                self.asked.insert(call_id);
                self.open.remove(call_id.as_str());
            }
            EventKind::LateAnswer { call_id, .. } | EventKind::Withdraw { call_id, .. } => {
                self.open.remove(call_id.as_str());
            }
            EventKind::ProcessLoss { .. } => self.open.retain(|_, legacy| !*legacy),
            _ => {}
        }
    }

    /// Why a `cancel_call` of `call_id` now matches no open call, if it does not.
    fn unmatched(&self, call_id: &str) -> Option<&'static str> {
        if self.open.contains_key(call_id) {
            None
        } else if self.asked.contains(call_id) {
            Some("the call had closed already")
        } else {
            Some("no such call was asked yet")
        }
    }
}

/// `stamp` and `text` in a rule of `─` as wide as the page.
fn rule(stamp: &str, text: &str) -> String {
    let mut line = format!("{stamp}── {} ", clean(text));
    let used = line.chars().count();
    line.extend(std::iter::repeat_n('─', RULE_CHARS.saturating_sub(used).max(2)));
    line
}

/// The text of a rule, for the events that are rules.
fn rule_text(kind: &EventKind) -> Option<String> {
    match kind {
        EventKind::ProcessLoss { restart_after } => {
            Some(format!("process loss (restart after {restart_after} s)"))
        }
        EventKind::Restart => Some("restart from the log".to_owned()),
        _ => None,
    }
}

/// The agent or answerer an event is about ("" for the driver's own events).
fn actor(kind: &EventKind) -> &str {
    use EventKind::*;
    match kind {
        Spawn { agent, .. }
        | SpawnRefused { agent, .. }
        | Stop { agent }
        | Request { agent, .. }
        | Result { agent, .. }
        | LateAnswer { agent, .. }
        | Withdraw { agent, .. }
        | UserMessage { agent, .. }
        | Cancel { agent }
        | NewTurn { agent } => agent,
        Offer { answerer, .. }
        | Accept { answerer, .. }
        | Decline { answerer, .. }
        | Hold { answerer, .. }
        | Answer { answerer, .. }
        | Refused { answerer, .. }
        | Crash { answerer, .. } => answerer,
        CancelCall { call_id } => call_id.rsplit_once('/').map_or("", |(agent, _)| agent),
        ProcessLoss { .. } | Restart | Dropped { .. } | End { .. } => "",
    }
}

/// What happened, after the actor's name.
fn text(kind: &EventKind) -> String {
    use EventKind::*;
    match kind {
        Request {
            call_id,
            schema,
            questions,
            window_s,
            ..
        } => {
            let wait = match window_s {
                None => "blocking".to_owned(),
                Some(w) if *w < 0.0 => "blocking (-1)".to_owned(),
                Some(w) => format!("window {w} s"),
            };
            let asked = question_texts(&questions.value());
            format!("asks {call_id} ({}, {wait}): {asked}", schema.as_str())
        }
        Result { call_id, result, .. } => match kind.result_kind() {
            Some(ResultKind::Pending) => format!("gets pending for {call_id}"),
            Some(ResultKind::Answers) => format!("gets answers for {call_id}: {}", cut(result)),
            Some(ResultKind::Error(code)) => format!("gets error {code} for {call_id}: {}", cut(result)),
            None => format!("gets {call_id}: {}", cut(result)),
        },
        LateAnswer { call_id, answers, .. } => {
            let answers = serde_json::to_value(answers).unwrap_or(Value::Null);
            format!("gets a late answer to {call_id}: {}", batch_text(&answers))
        }
        Withdraw {
            call_id,
            reason,
            message,
            ..
        } => {
            let told = if message.is_some() {
                ", with a user message"
            } else {
                ""
            };
            format!("has {call_id} withdrawn: {reason}{told}")
        }
        UserMessage { call_id, message, .. } => {
            let parsed: Value = serde_json::from_str(message).unwrap_or(Value::Null);
            let about = parsed
                .get("kind")
                .and_then(Value::as_str)
                .map(|k| format!(" ({k})"));
            format!("gets a user message about {call_id}{}", about.unwrap_or_default())
        }
        _ => answerer_text(kind).unwrap_or_else(|| tree_text(kind)),
    }
}

/// The text of an answerer's event, if `kind` is one.
fn answerer_text(kind: &EventKind) -> Option<String> {
    use EventKind::*;
    let text = match kind {
        Offer { call_id, .. } => format!("is offered {call_id}"),
        Accept { call_id, .. } => format!("accepts {call_id}"),
        Decline { call_id, reason, .. } if reason == "declined" => format!("declines {call_id}"),
        Decline { call_id, reason, .. } => format!("declines {call_id} ({reason})"),
        Hold { call_id, .. } => format!("holds {call_id}"),
        Answer { call_id, batch, .. } => format!("answers {call_id}: {}", batch_text(batch)),
        Refused {
            call_id,
            what,
            reason,
            ..
        } => format!("{what} to {call_id} refused: {reason}"),
        Crash { .. } => "crashes".to_owned(),
        _ => return None,
    };
    Some(text)
}

/// The text of the agent tree's and the driver's events.
fn tree_text(kind: &EventKind) -> String {
    use EventKind::*;
    match kind {
        Spawn { owner, lineage, .. } => {
            let by = owner
                .as_ref()
                .map_or("as a root".to_owned(), |o| format!("by {o}"));
            let lineage = lineage.as_ref().map(|l| format!(" (lineage {l})"));
            format!("spawned {by}{}", lineage.unwrap_or_default())
        }
        SpawnRefused { owner, reason, .. } => {
            let by = owner.as_ref().map(|o| format!(" (spawned by {o})"));
            format!("spawn refused: {reason}{}", by.unwrap_or_default())
        }
        Stop { .. } => "stopped".to_owned(),
        Cancel { .. } => "turn cancelled".to_owned(),
        NewTurn { .. } => "starts a new turn".to_owned(),
        CancelCall { call_id } => format!("cancel_call {call_id}"),
        Dropped { what } => format!("dropped {}", cut(&what.to_string())),
        ProcessLoss { .. } | Restart => rule_text(kind).unwrap_or_default(),
        _ => String::new(),
    }
}

/// What became of a batch, when `kind` is the next event about its call.
fn fate(kind: &EventKind) -> Option<String> {
    match kind {
        EventKind::Result { .. } => match kind.result_kind() {
            Some(ResultKind::Answers) => Some("answered".to_owned()),
            Some(other) => Some(other.as_str().to_owned()),
            None => None,
        },
        EventKind::LateAnswer { .. } => Some("late answer".to_owned()),
        EventKind::Withdraw { .. } => Some("withdrawn".to_owned()),
        EventKind::Refused { what, reason, .. } if what == "submit" => Some(format!("refused: {reason}")),
        _ => None,
    }
}

/// The questions' texts, quoted, or the value itself when it is not the usual
/// list of questions.
fn question_texts(questions: &Value) -> String {
    let texts: Option<Vec<String>> = questions.as_array().map(|list| {
        list.iter()
            .map(|q| match q.get("question") {
                Some(text) => text.to_string(),
                None => q.to_string(),
            })
            .collect()
    });
    cut(&texts.map_or_else(|| questions.to_string(), |t| t.join(" ")))
}

/// A batch as the labels chosen (and custom text), each question's id first
/// when there are several; a batch of another shape as its JSON.
fn batch_text(batch: &Value) -> String {
    let Some(items) = batch.as_array() else {
        return cut(&batch.to_string());
    };
    let several = items.len() > 1;
    let parts: Vec<String> = items
        .iter()
        .map(|item| {
            let Some(fields) = item.as_object() else {
                return item.to_string();
            };
            let mut part = String::new();
            if several {
                let id = fields.get("id").map_or("?".to_owned(), |id| match id.as_str() {
                    Some(id) => id.to_owned(),
                    None => id.to_string(),
                });
                let _ = write!(part, "{id}: ");
            }
            part.push_str(&fields.get("selected").map_or("[]".to_owned(), Value::to_string));
            if let Some(custom) = fields.get("custom").filter(|c| !c.is_null()) {
                let _ = write!(part, " custom {custom}");
            }
            part
        })
        .collect();
    cut(&parts.join(", "))
}

/// `text` cut to [`TEXT_CHARS_MAX`] characters.
fn cut(text: &str) -> String {
    if text.chars().count() <= TEXT_CHARS_MAX {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(TEXT_CHARS_MAX - 1).collect();
    short.push('…');
    short
}

/// `text` on one line: control characters (a line break in a name, say) escaped.
fn clean(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}
