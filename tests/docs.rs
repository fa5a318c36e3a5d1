//! Every example in the README and in `docs/` that shows output is a run this
//! test makes (issue #22: the README's examples had drifted from what asksim
//! prints). So an example cannot drift: change the output, and this test names
//! the block and the first line that differs.
//!
//! In a Markdown file, a fenced block whose first line starts with `$ ` holds
//! commands and their output: each `$ ` line is a command, the lines up to the
//! next one are what it prints (stdout, then stderr). `asksim …` runs this build's binary,
//! `cat PATH` shows a file; nothing else is allowed, so no example goes
//! unchecked by accident. A fenced block whose info string holds `file=PATH`
//! (```` ```json file=first-race.json ````) is written to PATH first, so a page can
//! show a file and then run it. Each page runs top to bottom in a directory of
//! its own holding copies of `scenarios/`, `tests/fixtures/` and `examples/external/`
//! (the outside broker and answerer the examples run), so what one
//! example writes (a shrunk file, a log) the next can read, and the repository is
//! never touched.
//!
//! Matching: trailing blanks are ignored; a line that is only `…` stands for any
//! number of lines (none included); `…` inside a line stands for any run of
//! characters (wall times, hashes). A block that shows no output after its last
//! command only runs it.
//!
//! Links: every relative Markdown link of these pages (`[text](docs/verdicts.md)`,
//! `[text](#a-heading)`, `[text](../README.md#the-command-line)`), outside code,
//! must name a file that exists, and where it names a heading (`#…`) of a
//! Markdown file, a heading that file has (GitHub's anchors: lower case,
//! punctuation dropped, spaces as hyphens). So moving a section between pages
//! cannot leave a link behind.
//!
//! The README's first 150 lines are a newcomer's path (issue #22): a scenario
//! the reader writes (a `file=` block), a sweep or a seeded run of it, `explore
//! --all` of it, `shrink` of it, and a run of the file the shrink wrote that
//! fails. Being examples, each of them is also a run checked above.

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

/// The repository's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The pages whose examples are checked: the README and every page of `docs/`.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    if let Ok(entries) = std::fs::read_dir(root().join("docs")) {
        let mut docs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        docs.sort();
        pages.extend(docs);
    }
    pages
}

/// A fenced block: its info string, its lines, and the line of the page it
/// starts on.
struct Block {
    info: String,
    lines: Vec<String>,
    at: usize,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => {
                open = Some(Block {
                    info: info.trim().to_owned(),
                    lines: Vec::new(),
                    at: n + 1,
                })
            }
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some(block), None) => block.lines.push(line.to_owned()),
            (None, None) => {}
        }
    }
    out
}

/// A directory of its own for one page, holding copies of what examples read;
/// removed on drop.
fn sandbox() -> TempDir {
    let dir = tempfile::tempdir().expect("a sandbox directory");
    for from in ["scenarios", "tests/fixtures", "examples/external"] {
        copy_dir(&root().join(from), &dir.path().join(from));
    }
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a sandbox directory");
    for entry in std::fs::read_dir(from).expect("readable").filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&path, to.join(entry.file_name())).expect("copied");
        }
    }
}

/// What the command `line` (without its `$ `) prints, run in `dir`.
fn output_of(line: &str, dir: &Path) -> Result<String, String> {
    // A shell comment ends the command (`$ asksim run f.json   # why`).
    let command = line.split(" #").next().unwrap_or(line);
    let words = shlex::split(command).ok_or_else(|| format!("cannot split {command:?}"))?;
    match words.first().map(String::as_str) {
        Some("asksim") => {
            let out = Command::new(env!("CARGO_BIN_EXE_asksim"))
                .args(&words[1..])
                .current_dir(dir)
                .env_remove("RUST_LOG")
                .output()
                .map_err(|e| format!("asksim does not run: {e}"))?;
            // What a person sees: stdout, then stderr (where `validate` writes).
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            Ok(text)
        }
        Some("cat") if words.len() == 2 => {
            std::fs::read_to_string(dir.join(&words[1])).map_err(|e| format!("cat {}: {e}", words[1]))
        }
        _ => Err(format!("only asksim and cat run in examples, not {command:?}")),
    }
}

/// Whether `actual` matches the pattern line `expected` (`…` for any run of
/// characters).
fn line_matches(expected: &str, actual: &str) -> bool {
    let (expected, actual) = (expected.trim_end(), actual.trim_end());
    let parts: Vec<&str> = expected.split('…').collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() || !actual.ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Whether `actual` lines match the `expected` pattern lines (a line of `…`
/// alone for any number of lines); else the first expected line that has no
/// match.
fn lines_match(expected: &[String], actual: &[&str]) -> Result<(), String> {
    fn go(expected: &[String], actual: &[&str]) -> bool {
        match expected.split_first() {
            None => actual.iter().all(|l| l.trim().is_empty()),
            Some((line, rest)) if line.trim() == "…" => (0..=actual.len()).any(|k| go(rest, &actual[k..])),
            Some((line, rest)) => actual
                .split_first()
                .is_some_and(|(first, more)| line_matches(line, first) && go(rest, more)),
        }
    }
    if go(expected, actual) {
        return Ok(());
    }
    // The longest prefix of the pattern that matches a prefix of the output, for
    // the message.
    let shown = (0..=expected.len())
        .rev()
        .find(|&k| {
            expected[..k]
                .iter()
                .zip(actual)
                .all(|(e, a)| e.trim() == "…" || line_matches(e, a))
        })
        .unwrap_or(0);
    Err(format!(
        "first mismatch at expected line {}: {:?}",
        shown + 1,
        expected.get(shown).map_or("(end)", String::as_str)
    ))
}

/// Runs every example of `page`; the failures, one message each.
fn check_page(page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).expect("the page");
    let sandbox = sandbox();
    let mut failures = Vec::new();
    let name = page.strip_prefix(root()).unwrap_or(page).display().to_string();
    for block in blocks(&text) {
        if let Some(file) = block
            .info
            .split_whitespace()
            .find_map(|w| w.strip_prefix("file="))
        {
            let path = sandbox.path().join(file);
            std::fs::write(&path, block.lines.join("\n") + "\n").expect("the example's file");
            continue;
        }
        if !block.lines.first().is_some_and(|l| l.starts_with("$ ")) {
            continue;
        }
        let mut k = 0;
        while k < block.lines.len() {
            let command = block.lines[k]["$ ".len()..].to_owned();
            let end = (k + 1..block.lines.len())
                .find(|&j| block.lines[j].starts_with("$ "))
                .unwrap_or(block.lines.len());
            let expected = &block.lines[k + 1..end];
            let at = block.at + k + 1;
            match output_of(&command, sandbox.path()) {
                Err(why) => failures.push(format!("{name}:{at}: {why}")),
                Ok(actual) => {
                    let actual: Vec<&str> = actual.lines().collect();
                    if let Err(why) = lines_match(expected, &actual).or_else(|why| {
                        // A block that shows no output only runs the command.
                        if expected.is_empty() { Ok(()) } else { Err(why) }
                    }) {
                        failures.push(format!(
                            "{name}:{at}: `{command}`: {why}\n--- printed:\n{}\n---",
                            actual.join("\n")
                        ));
                    }
                }
            }
            k = end;
        }
    }
    failures
}

#[test]
fn every_example_shows_what_asksim_prints() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for page in pages() {
        checked += 1;
        failures.extend(check_page(&page));
    }
    assert!(checked >= 1);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The matcher itself: `…` alone for any lines, inside a line for any run of
/// characters; everything else exactly (trailing blanks aside).
#[test]
fn the_matcher_takes_ellipses_and_nothing_else() {
    assert!(line_matches("wall 0.… s", "wall 0.002 s"));
    assert!(line_matches("a … b … c", "a x b y c  "));
    assert!(!line_matches("a … b", "a x c"));
    assert!(!line_matches("exact", "exactly"));
    let lines = |s: &[&str]| s.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(lines_match(&lines(&["head", "…", "tail"]), &["head", "1", "2", "tail"]).is_ok());
    assert!(lines_match(&lines(&["head", "…", "tail"]), &["head", "tail"]).is_ok());
    assert!(lines_match(&lines(&["head", "tail"]), &["head", "x", "tail"]).is_err());
    assert!(lines_match(&lines(&["head"]), &["head", "more"]).is_err());
}

/// `text` with every fenced block blanked (its lines kept empty, so positions
/// keep their line numbers).
fn prose(text: &str) -> String {
    let mut fenced = false;
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let fence = line.trim_start().starts_with("```");
        if !fenced && !fence {
            out.push_str(line);
        }
        if fence {
            fenced = !fenced;
        }
        out.push('\n');
    }
    out
}

/// Every link target of `text` outside code, with the line it is on.
fn links(text: &str) -> Vec<(usize, String)> {
    let text = prose(text);
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            // A code span: skip to the closing run of as many backticks.
            let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
            let fence = "`".repeat(run);
            i += run;
            i = text[i..].find(&fence).map_or(bytes.len(), |at| i + at + run);
            continue;
        }
        if bytes[i..].starts_with(b"](") {
            let start = i + 2;
            if let Some(len) = text[start..].find(')') {
                let line = text[..i].matches('\n').count() + 1;
                out.push((line, text[start..start + len].trim().to_owned()));
                i = start + len;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// The anchors GitHub gives the headings of a Markdown text: lower case,
/// punctuation but `-` and `_` dropped, spaces as hyphens, a repeated one
/// suffixed `-1`, `-2`, ….
fn anchors(text: &str) -> std::collections::BTreeSet<String> {
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let mut out = std::collections::BTreeSet::new();
    for line in prose(text).lines() {
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        let title = title.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    }
    out
}

/// The links of `page` (whose text is `text`) that lead nowhere, one message each.
fn broken_links(page: &Path, text: &str) -> Vec<String> {
    let name = page.strip_prefix(root()).unwrap_or(page).display().to_string();
    let dir = page.parent().unwrap_or(root());
    let mut failures = Vec::new();
    for (line, target) in links(text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
        let file = if path.is_empty() {
            page.to_path_buf()
        } else {
            dir.join(path)
        };
        if !file.exists() {
            failures.push(format!("{name}:{line}: ({target}): no file {}", file.display()));
            continue;
        }
        if anchor.is_empty() || file.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let heads = if path.is_empty() {
            anchors(text)
        } else {
            anchors(&std::fs::read_to_string(&file).unwrap_or_default())
        };
        if !heads.contains(anchor) {
            failures.push(format!(
                "{name}:{line}: ({target}): {} has no heading #{anchor}",
                file.display()
            ));
        }
    }
    failures
}

#[test]
fn every_relative_link_leads_to_a_file_and_heading_that_exist() {
    let mut failures = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("the page");
        failures.extend(broken_links(&page, &text));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The link check itself, on a page made to break it: a missing file, a
/// missing heading, and links it must leave alone (code, the web, what exists).
#[test]
fn the_link_check_names_a_missing_file_and_a_missing_heading() {
    let page = root().join("README.md");
    let text = "# A title, with `code`\n\n## Two\n\n## Two\n\
                [ok](#a-title-with-code) [ok](#two-1) [ok](PROTOCOL.md) [web](https://example.com/x)\n\
                `[in code](nowhere.md)` and\n```\n[fenced](nowhere.md)\n```\n\
                [gone](docs/no-such-page.md) [no heading](#three) [no heading there](PROTOCOL.md#no-such-part)\n";
    let failures = broken_links(&page, text);
    assert_eq!(failures.len(), 3, "{failures:#?}");
    assert!(
        failures[0].starts_with("README.md:11: (docs/no-such-page.md): no file"),
        "{}",
        failures[0]
    );
    assert!(failures[1].contains("(#three)") && failures[1].contains("no heading #three"));
    assert!(failures[2].contains("no heading #no-such-part"));
}

/// The README's first lines that must hold the newcomer's path.
const NEWCOMER_LINES_MAX: usize = 150;

/// The commands (`$ ` lines, without it) of the checked blocks that end by
/// line `lines_max` of `text`, each with the output shown under it; and the
/// files its `file=` blocks write.
fn commands_within(text: &str, lines_max: usize) -> (Vec<(String, Vec<String>)>, Vec<String>) {
    let (mut commands, mut files) = (Vec::new(), Vec::new());
    for block in blocks(text)
        .into_iter()
        .filter(|b| b.at + b.lines.len() < lines_max)
    {
        if let Some(file) = block
            .info
            .split_whitespace()
            .find_map(|w| w.strip_prefix("file="))
        {
            files.push(file.to_owned());
            continue;
        }
        for line in &block.lines {
            match line.strip_prefix("$ ") {
                Some(command) => commands.push((command.to_owned(), Vec::new())),
                None => commands
                    .last_mut()
                    .into_iter()
                    .for_each(|(_, out)| out.push(line.clone())),
            }
        }
    }
    (commands, files)
}

/// Whether the first `lines_max` lines of `text` take a reader from a scenario
/// of their own to a failing run of its shrunk file; else what is missing.
fn newcomer_path(text: &str, lines_max: usize) -> Result<(), String> {
    let (commands, files) = commands_within(text, lines_max);
    let of = |verb: &str, file: &str| {
        commands
            .iter()
            .position(|(c, _)| c.starts_with(&format!("asksim {verb} {file}")))
    };
    let mine = files
        .first()
        .ok_or("no scenario of the reader's own (a file= block)")?;
    let found = of("sweep", mine)
        .or_else(|| {
            commands
                .iter()
                .position(|(c, _)| c.starts_with(&format!("asksim run {mine} --seed")))
        })
        .ok_or(format!("no sweep or seeded run of {mine}"))?;
    let explored = of("explore", mine).ok_or(format!("no explore of {mine}"))?;
    let shrunk = of("shrink", mine).ok_or(format!("no shrink of {mine}"))?;
    let wrote = commands[shrunk]
        .1
        .iter()
        .find_map(|l| l.trim().strip_prefix("wrote").map(|w| w.trim().to_owned()))
        .ok_or("the shrink shows no `wrote` line")?;
    let replayed = commands
        .iter()
        .position(|(c, out)| {
            c.starts_with(&format!("asksim run {wrote}")) && out.iter().any(|l| l.contains("FAIL"))
        })
        .ok_or(format!("no failing run of the shrunk {wrote}"))?;
    let order = [found, explored, shrunk, replayed];
    if order.windows(2).all(|w| w[0] < w[1]) {
        Ok(())
    } else {
        Err(format!(
            "out of order (found, explored, shrunk, replayed at commands {order:?})"
        ))
    }
}

#[test]
fn the_readme_takes_a_newcomer_to_a_shrunk_failure_of_their_own_within_150_lines() {
    let text = std::fs::read_to_string(root().join("README.md")).expect("the README");
    newcomer_path(&text, NEWCOMER_LINES_MAX).unwrap_or_else(|why| panic!("README.md: {why}"));
}

/// The path check fires: on a page that shows every step but runs the shrunk
/// file only after the bound, and on one that shrinks a file the reader did
/// not write.
#[test]
fn the_newcomer_check_names_a_missing_step() {
    let page = "# x\n```json file=mine.json\n{}\n```\n```\n$ asksim sweep mine.json --seeds 0..2\n\
                $ asksim explore mine.json --all\n$ asksim shrink mine.json\n  wrote           mine.min.json\n```\n\
                \n\n\n```\n$ asksim run mine.min.json\n  result          FAIL\n```\n";
    assert!(newcomer_path(page, 30).is_ok());
    let late = newcomer_path(page, 13).unwrap_err();
    assert!(
        late.contains("no failing run of the shrunk mine.min.json"),
        "{late}"
    );
    let theirs = page.replace("asksim shrink mine.json", "asksim shrink scenarios/x.json");
    assert!(
        newcomer_path(&theirs, 30)
            .unwrap_err()
            .contains("no shrink of mine.json")
    );
}
