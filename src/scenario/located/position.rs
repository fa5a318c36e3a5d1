//! Where in the file an error is: lines and character columns, and the JSON path
//! of each value.
//!
//! serde_json reports a 1-based line and a byte column; errors found after
//! parsing know only a JSON path. [`PathIndex`] is a second pass over the text that
//! records where every value starts and ends under its path, so each kind of error
//! can be given the other half. The pass is defensive: on text that is not valid
//! JSON it gives up (returns what it has) instead of guessing.

use std::collections::BTreeMap;

use super::super::ScenarioError;
use super::super::build::Issue;

/// Deepest nesting the index follows; serde_json itself stops at 128.
const INDEX_DEPTH_MAX: usize = 256;

/// serde's words for a string (a unit variant) where a form takes a value.
const UNIT_FOR_NEWTYPE: &str = "invalid type: unit variant, expected newtype variant";

/// A serde_json error as a ScenarioError: its position converted to characters,
/// its message prefixed with the JSON path that holds the position when the text is
/// valid enough to index.
pub(in crate::scenario) fn serde_error(file: &str, text: &str, err: &serde_json::Error) -> ScenarioError {
    let full = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    let bare = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
    if err.line() == 0 {
        return ScenarioError::new(file, bare);
    }
    let mut offset = byte_offset(text, err.line(), err.column());
    let message = match err.classify() {
        serde_json::error::Category::Syntax
            if bare == "expected value" && is_json(text) && form_field_at(text, offset).is_some() =>
        {
            // Valid JSON that serde_json calls a syntax error, peeking at a value:
            // a number, a list or a literal given to a field whose forms are a
            // string or an object with one key (an answer, a step).
            let path = form_field_at(text, offset).unwrap_or_default();
            offset = value_start(text, offset);
            format!("{path}: {}", super::plain::not_a_form(&path))
        }
        serde_json::error::Category::Syntax if bare == "expected value" && is_json(text) => {
            let (message, at) = not_one_key(text, offset);
            offset = at;
            message
        }
        serde_json::error::Category::Syntax => format!("invalid JSON: {bare}"),
        serde_json::error::Category::Eof => format!("truncated JSON: {bare}"),
        _ => {
            let bare = super::super::suggest::with_suggestion(&bare);
            // serde_json's column is the last byte it consumed; a type error found
            // by peeking at a value is reported on the separator before it.
            if err.column() > 0
                && matches!(
                    text.as_bytes().get(offset),
                    Some(b':' | b',' | b'[' | b' ' | b'\t' | b'\n' | b'\r')
                )
            {
                offset = next_token(text, offset);
            }
            // A string naming a form that takes a value ends before serde says so.
            let at = match bare.as_str() {
                // The last byte of the string before it: past blanks and a separator.
                UNIT_FOR_NEWTYPE => text
                    .get(..offset)
                    .map(|before| {
                        before
                            .trim_end_matches([' ', '\t', '\n', '\r', ',', '}', ']'])
                            .len()
                    })
                    .unwrap_or(offset)
                    .saturating_sub(1),
                _ => offset,
            };
            match PathIndex::build(text).innermost(at) {
                Some(path) if !path.is_empty() => format!("{path}: {}", super::plain::plain(path, &bare)),
                _ => super::plain::plain("", &bare),
            }
        }
    };
    let (line, column) = line_column(text, offset);
    ScenarioError {
        file: file.to_owned(),
        line: Some(line),
        column: Some(column),
        message,
    }
}

/// Valid JSON that serde_json calls a syntax error at `offset`: an externally
/// tagged shape (a step, an answer, …) given no key, or a second key after its
/// first. With no key, serde stops on the `}` of the shape itself; with two,
/// inside the first key's value, whose parent is the shape. The message, and
/// the offset it is reported at.
fn not_one_key(text: &str, offset: usize) -> (String, usize) {
    let index = PathIndex::build(text);
    let (path, at) = match index.innermost_span(offset) {
        Some((path, start)) if is_empty_form(text, path, start) => (path, start),
        found => (
            found.map_or("", |(path, _)| parent_path(path)),
            next_token(text, offset),
        ),
    };
    (format!("{path}: expected an object with exactly one key"), at)
}

/// A check that failed after parsing, located at its path (or the nearest
/// enclosing value the file has).
pub(in crate::scenario) fn issue_error(file: &str, text: &str, issue: Issue) -> ScenarioError {
    let position = PathIndex::build(text)
        .locate(&issue.path)
        .map(|offset| line_column(text, offset));
    let message = if issue.path.is_empty() {
        issue.message
    } else {
        format!("{}: {}", issue.path, issue.message)
    };
    ScenarioError {
        file: file.to_owned(),
        line: position.map(|(line, _)| line),
        column: position.map(|(_, column)| column),
        message,
    }
}

/// Bytes that are not UTF-8, located at the first bad byte.
pub(in crate::scenario) fn utf8_error(file: &str, err: &std::string::FromUtf8Error) -> ScenarioError {
    let bytes = err.as_bytes();
    let valid = &bytes[..err.utf8_error().valid_up_to()];
    // The prefix is valid UTF-8 by definition of `valid_up_to`.
    let prefix = std::str::from_utf8(valid).unwrap_or_default();
    let (line, column) = line_column(prefix, prefix.len());
    ScenarioError {
        file: file.to_owned(),
        line: Some(line),
        column: Some(column),
        message: "the file is not UTF-8 text".into(),
    }
}

/// Whether `text` is one valid JSON value.
fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok()
}

/// Whether the value at `path`, starting at byte `start`, is `{}` where a field
/// with several forms is (a script step, an `answer`): an object with no key. An
/// empty object that is a form's own value (`{"ask_unresolved": {}}`) is a
/// value, not a shape without its key.
fn is_empty_form(text: &str, path: &str, start: usize) -> bool {
    let last = path.rsplit('.').next().unwrap_or(path);
    let inside = text.get(start..).and_then(|rest| rest.strip_prefix('{'));
    let empty = inside.is_some_and(|inside| {
        inside
            .trim_start_matches([' ', '\t', '\n', '\r'])
            .starts_with('}')
    });
    empty && super::plain::has_forms(last)
}

/// `offset`, or past the separator and blanks before a value serde peeked at.
fn value_start(text: &str, offset: usize) -> usize {
    match text.as_bytes().get(offset) {
        Some(b':' | b',' | b' ' | b'\t' | b'\n' | b'\r') => next_token(text, offset),
        _ => offset,
    }
}

/// The path of the value serde peeked at near `offset`, when it is a field with
/// several forms (`answer`, a script step): then serde met a value none of them
/// is. (After the first key of a one-key object, serde stops at that key's value,
/// whose key is a form's name, not such a field.)
fn form_field_at(text: &str, offset: usize) -> Option<String> {
    let at = value_start(text, offset);
    let scalar = matches!(
        text.as_bytes().get(at),
        Some(b'0'..=b'9' | b'-' | b'[' | b't' | b'f' | b'n')
    );
    let index = PathIndex::build(text);
    let path = index.innermost(at)?;
    let last = path.rsplit('.').next().unwrap_or(path);
    (scalar && super::plain::has_forms(last)).then(|| path.to_owned())
}

/// The first non-whitespace byte after the one at `offset`, or `offset`.
fn next_token(text: &str, offset: usize) -> usize {
    text.get(offset + 1..)
        .and_then(|rest| rest.find(|c: char| !c.is_ascii_whitespace()))
        .map_or(offset, |i| offset + 1 + i)
}

/// The byte offset of serde_json's (1-based line, 1-based byte column); column 0
/// (nothing read on that line yet) is the line's start. Clamped to the text and
/// moved back to a character boundary.
fn byte_offset(text: &str, line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        text.match_indices('\n')
            .nth(line - 2)
            .map_or(text.len(), |(i, _)| i + 1)
    };
    let mut offset = (line_start + column.saturating_sub(1)).min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The 1-based line and character column of a byte offset (a char boundary).
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = 1 + before.matches('\n').count();
    let column = 1 + before[line_start..].chars().count();
    (line, column)
}

/// Where each value of a JSON text sits, by path (`agents[0].script[2].join`).
struct PathIndex {
    /// (path, start byte, end byte), children before their parents.
    spans: Vec<(String, usize, usize)>,
}

impl PathIndex {
    fn build(text: &str) -> PathIndex {
        let mut scanner = Scanner {
            bytes: text.as_bytes(),
            text,
            at: 0,
            spans: Vec::new(),
        };
        let mut path = String::new();
        // An incomplete scan keeps the spans it finished: each is right.
        let _ = scanner.value(&mut path, 0);
        PathIndex { spans: scanner.spans }
    }

    /// Where the value at `path` starts, or the nearest enclosing value that the
    /// file has.
    fn locate(&self, path: &str) -> Option<usize> {
        let starts: BTreeMap<&str, usize> = self
            .spans
            .iter()
            .rev()
            .map(|(path, start, _)| (path.as_str(), *start))
            .collect();
        let mut path = path;
        loop {
            if let Some(start) = starts.get(path) {
                return Some(*start);
            }
            if path.is_empty() {
                return None;
            }
            path = parent_path(path);
        }
    }

    /// The path of the innermost value whose span holds `offset`.
    fn innermost(&self, offset: usize) -> Option<&str> {
        self.innermost_span(offset).map(|(path, _)| path)
    }

    /// The path and start of the innermost value whose span holds `offset`.
    fn innermost_span(&self, offset: usize) -> Option<(&str, usize)> {
        self.spans
            .iter()
            .filter(|(_, start, end)| *start <= offset && offset < *end)
            .max_by_key(|(_, start, _)| *start)
            .map(|(path, start, _)| (path.as_str(), *start))
    }
}

/// `a.b[2]` → `a.b`, `a.b` → `a`, `a` → ``.
fn parent_path(path: &str) -> &str {
    match path.rfind(['.', '[']) {
        Some(i) => &path[..i],
        None => "",
    }
}

struct Scanner<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
    spans: Vec<(String, usize, usize)>,
}

impl Scanner<'_> {
    fn value(&mut self, path: &mut String, depth: usize) -> Option<()> {
        if depth > INDEX_DEPTH_MAX {
            return None;
        }
        self.skip_whitespace();
        let start = self.at;
        match *self.bytes.get(self.at)? {
            b'{' => self.object(path, depth)?,
            b'[' => self.array(path, depth)?,
            b'"' => {
                self.string()?;
            }
            _ => self.scalar()?,
        }
        self.spans.push((path.clone(), start, self.at));
        Some(())
    }

    fn object(&mut self, path: &mut String, depth: usize) -> Option<()> {
        self.at += 1;
        self.skip_whitespace();
        if self.bytes.get(self.at) == Some(&b'}') {
            self.at += 1;
            return Some(());
        }
        loop {
            self.skip_whitespace();
            let key = self.string()?;
            self.skip_whitespace();
            self.expect(b':')?;
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&key);
            self.value(path, depth + 1)?;
            path.truncate(len);
            self.skip_whitespace();
            match *self.bytes.get(self.at)? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, path: &mut String, depth: usize) -> Option<()> {
        self.at += 1;
        self.skip_whitespace();
        if self.bytes.get(self.at) == Some(&b']') {
            self.at += 1;
            return Some(());
        }
        let mut k = 0usize;
        loop {
            let len = path.len();
            path.push_str(&format!("[{k}]"));
            self.value(path, depth + 1)?;
            path.truncate(len);
            k += 1;
            self.skip_whitespace();
            match *self.bytes.get(self.at)? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string at the cursor, decoded (escapes included).
    fn string(&mut self) -> Option<String> {
        let start = self.at;
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        self.at += 1;
        loop {
            match *self.bytes.get(self.at)? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    break;
                }
                _ => self.at += 1,
            }
        }
        let literal = self.text.get(start..self.at)?;
        serde_json::from_str(literal).ok()
    }

    /// A number, `true`, `false` or `null`: up to the next delimiter.
    fn scalar(&mut self) -> Option<()> {
        let start = self.at;
        while let Some(&byte) = self.bytes.get(self.at) {
            if matches!(byte, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            self.at += 1;
        }
        (self.at > start).then_some(())
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.bytes.get(self.at) == Some(&byte)).then(|| self.at += 1)
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.bytes.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }
}
