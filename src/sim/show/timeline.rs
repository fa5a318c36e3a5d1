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
use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::event::{Event, EventKind, RawQuestions};
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
    let shown: Vec<&Event> = events.iter().collect();
    render(&shown)
}

/// A timeline built one event at a time, for a whole run (`--timeline`): each
/// event's parts go to a spool as it is recorded, and the lines are laid out at
/// the end, once the widest name and time are known. The spool is a temporary
/// file, so a run holds only the answers still waiting for their fate; the lines
/// are those [`timeline`] gives for the same events.
pub struct Timeline {
    spool: Spool,
    name_w: usize,
    time_w: usize,
    count: usize,
    /// The line of each call's answer that waits for what became of its batch.
    awaiting: BTreeMap<String, usize>,
    /// Fates read so far, by line.
    fates: BTreeMap<usize, String>,
    /// The calls open so far (a `cancel_call` of none matched nothing).
    calls: OpenCalls,
    asked: LastAsked,
    /// The event's time, as the line shows it (kept from event to event).
    time: String,
    error: Option<std::io::Error>,
}

/// Where a timeline's parts wait: `time \t name \t text` for a line, `time \t
/// text` for a rule (cleaned text holds no tab and no line break).
enum Spool {
    Memory(Vec<String>),
    File(std::io::BufWriter<std::fs::File>),
}

impl Timeline {
    /// A timeline kept in memory (a call's lines under a violation).
    pub fn in_memory() -> Timeline {
        Timeline::with(Spool::Memory(Vec::new()))
    }

    /// A timeline spooled to a temporary file (a whole run). The file has no
    /// name (`tempfile::tempfile`): the system removes it when the timeline is
    /// dropped or the process ends, however it ends.
    pub fn spooled() -> std::io::Result<Timeline> {
        let file = tempfile::tempfile()?;
        Ok(Timeline::with(Spool::File(std::io::BufWriter::new(file))))
    }

    fn with(spool: Spool) -> Timeline {
        Timeline {
            spool,
            name_w: 0,
            time_w: 0,
            count: 0,
            awaiting: BTreeMap::new(),
            fates: BTreeMap::new(),
            calls: OpenCalls::default(),
            asked: LastAsked::default(),
            time: String::new(),
            error: None,
        }
    }

    /// Takes one more event (the log's closing `end` is no actor's doing, and
    /// is not shown).
    pub fn push(&mut self, event: &Event) {
        if matches!(event.kind, EventKind::End { .. }) {
            return;
        }
        self.time.clear();
        let _ = write!(self.time, "{:.3}", event.t);
        self.time_w = self.time_w.max(self.time.len());
        let (name, text) = match rule_text(&event.kind) {
            Some(text) => (None, text),
            None => {
                let name = clean(actor(&event.kind));
                self.name_w = self.name_w.max(name.chars().count());
                let mut text = text(&event.kind, &mut self.asked);
                if let EventKind::CancelCall { call_id } = &event.kind
                    && let Some(note) = self.calls.unmatched(call_id)
                {
                    text.push_str(note);
                }
                (Some(name), text)
            }
        };
        let (time, text) = (&self.time, clean(&text));
        match &mut self.spool {
            Spool::Memory(records) => records.push(match name {
                Some(name) => format!("{time}\t{name}\t{text}"),
                None => format!("{time}\t{text}"),
            }),
            Spool::File(file) => {
                use std::io::Write as _;
                let written = match name {
                    Some(name) => writeln!(file, "{time}\t{name}\t{text}"),
                    None => writeln!(file, "{time}\t{text}"),
                };
                if let (None, Err(error)) = (&self.error, written) {
                    self.error = Some(error);
                }
            }
        }
        self.calls.see(&event.kind);
        if let Some(call_id) = event.kind.call_id() {
            if let (Some(i), Some(fate)) = (self.awaiting.remove(call_id), fate(&event.kind)) {
                self.fates.insert(i, clean(&fate).into_owned());
            }
            if matches!(event.kind, EventKind::Answer { .. }) {
                self.awaiting.insert(call_id.to_owned(), self.count);
            }
        }
        self.count += 1;
    }

    /// How many lines it holds.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The lines, laid out, handed to `line` one at a time; a spooled timeline's
    /// file is read back from its start. Each line is laid out in one buffer,
    /// kept from line to line: a whole run's timeline is read back and printed
    /// after its last event, with nothing else to run beside it.
    pub fn for_each_line(self, mut line: impl FnMut(&str)) -> std::io::Result<()> {
        let Timeline {
            spool,
            name_w,
            time_w,
            mut fates,
            error,
            ..
        } = self;
        let mut laid = String::new();
        let mut lay_out = |i: usize, record: &str| {
            laid.clear();
            let mut parts = record.splitn(3, '\t');
            let time = parts.next().unwrap_or("");
            let _ = write!(laid, "{time:>time_w$} s  ");
            match (parts.next(), parts.next()) {
                (Some(name), Some(text)) => {
                    let pad = name_w.saturating_sub(name.chars().count());
                    let _ = write!(laid, "{name}{:pad$} {text}", "");
                }
                (Some(text), None) => rule(&mut laid, text),
                _ => {}
            }
            if let Some(fate) = fates.remove(&i) {
                let _ = write!(laid, " -> {fate}");
            }
            line(&laid);
        };
        match spool {
            Spool::Memory(records) => {
                for (i, record) in records.iter().enumerate() {
                    lay_out(i, record);
                }
                Ok(())
            }
            Spool::File(file) => {
                use std::io::{BufRead as _, Seek as _};
                error.map_or(Ok(()), Err)?;
                let mut file = file.into_inner().map_err(std::io::IntoInnerError::into_error)?;
                file.rewind()?;
                let mut file = std::io::BufReader::new(file);
                let mut record = String::new();
                for i in 0.. {
                    record.clear();
                    if file.read_line(&mut record)? == 0 {
                        break;
                    }
                    lay_out(i, record.strip_suffix('\n').unwrap_or(&record));
                }
                Ok(())
            }
        }
    }
}

impl crate::record::Observer for Timeline {
    fn event(&mut self, event: &Event) {
        self.push(event);
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
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
    let rule = matches!(
        event.kind,
        EventKind::ProcessLoss { .. } | EventKind::Restart { .. }
    );
    rule || (call_id.is_some() && event.kind.call_id() == call_id) || Some(event.seq) == seq
}

/// The aligned lines of `events`, with each answer's fate appended.
fn render(events: &[&Event]) -> Vec<String> {
    let mut timeline = Timeline::in_memory();
    for event in events {
        timeline.push(event);
    }
    let mut lines = Vec::with_capacity(timeline.len());
    let _ = timeline.for_each_line(|line| lines.push(line.to_owned()));
    lines
}

/// The calls open so far, to say when a `cancel_call` matched nothing (the
/// broker logs it either way). It holds only open calls, so a streamed timeline
/// stays as small as the broker's own state.
#[derive(Default)]
struct OpenCalls {
    /// Open calls, and whether each is legacy (gone at a process loss).
    open: BTreeMap<String, bool>,
}

impl OpenCalls {
    fn see(&mut self, kind: &EventKind) {
        match kind {
            EventKind::Request { call_id, schema, .. } => {
                self.open
                    .insert(call_id.to_string(), *schema == crate::tool::Schema::Legacy);
            }
            EventKind::Result { call_id, .. } if kind.result_kind() != Some(ResultKind::Pending) => {
                self.open.remove(call_id.as_str());
            }
            EventKind::LateAnswer { call_id, .. } | EventKind::Withdraw { call_id, .. } => {
                self.open.remove(call_id.as_str());
            }
            EventKind::ProcessLoss { .. } => self.open.retain(|_, legacy| !*legacy),
            _ => {}
        }
    }

    /// The note for a `cancel_call` of `call_id` that matches no open call.
    fn unmatched(&self, call_id: &str) -> Option<&'static str> {
        (!self.open.contains_key(call_id)).then_some(": matched nothing (no open call has that callId)")
    }
}

/// `text` in a rule of `─` as wide as the page, after the stamp `line` holds.
fn rule(line: &mut String, text: &str) {
    let _ = write!(line, "── {text} ");
    let used = line.chars().count();
    line.extend(std::iter::repeat_n('─', RULE_CHARS.saturating_sub(used).max(2)));
}

/// The text of a rule, for the events that are rules.
fn rule_text(kind: &EventKind) -> Option<String> {
    match kind {
        EventKind::ProcessLoss { restart_after } => {
            Some(format!("process loss (restart after {restart_after} s)"))
        }
        EventKind::Restart { recovered: false, .. } => Some("restart from the log".to_owned()),
        EventKind::Restart {
            recovered: true,
            torn_line: None,
        } => Some("recovered from the log file after a crash".to_owned()),
        EventKind::Restart {
            recovered: true,
            torn_line: Some(line),
        } => Some(format!(
            "recovered from the log file after a crash (torn line {line} dropped)"
        )),
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
        ProcessLoss { .. } | Restart { .. } | Dropped { .. } | End { .. } => "",
    }
}

/// What happened, after the actor's name.
fn text(kind: &EventKind, asked: &mut LastAsked) -> String {
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
            let asked = asked.text(questions);
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
        ProcessLoss { .. } | Restart { .. } => rule_text(kind).unwrap_or_default(),
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

/// The last request's questions and their texts as a line shows them: the
/// requests of a `count` row share one questions text, read once (a tie of
/// 16,000 roots asking twice parsed it 32,000 times: 29% of [`Timeline::push`]'s
/// samples). The text is held, so a pointer that matches is never a reused
/// address.
#[derive(Default)]
struct LastAsked(Option<(Arc<RawValue>, String)>);

impl LastAsked {
    fn text(&mut self, questions: &RawQuestions) -> &str {
        let shared = questions.shared();
        if !matches!(&self.0, Some((held, _)) if Arc::ptr_eq(held, &shared)) {
            let texts = question_texts(&questions.value());
            self.0 = Some((shared, texts));
        }
        self.0.as_ref().map_or("", |(_, texts)| texts)
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
