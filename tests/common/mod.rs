//! Builders shared by the tool's contract tests: valid arguments for either tool,
//! which each test then breaks in exactly one place.

use asksim::tool::{Ask, Mode, Timeout, ToolConfig};
use serde_json::{Value, json};

/// The timed tool with a 30 s default window.
pub fn timed() -> ToolConfig {
    ToolConfig::timed(Timeout::Window(30.0))
}

/// The legacy tool.
pub fn legacy() -> ToolConfig {
    ToolConfig::default()
}

/// Both tools, for the limits the contract states once for both.
pub fn both() -> [ToolConfig; 2] {
    [legacy(), timed()]
}

/// An option with a label and a description.
pub fn opt(label: &str) -> Value {
    json!({"label": label, "description": format!("Means {label}.")})
}

/// A valid question number `i` for the tool of `mode`: two options, single-select.
pub fn question(mode: Mode, i: usize) -> Value {
    let mut q = json!({
        "question": format!("Question {i}?"),
        "header": format!("Head {i}"),
        "options": [opt("Yes (Recommended)"), opt("No")],
        "multiSelect": false,
    });
    if mode == Mode::Timed {
        q.as_object_mut()
            .unwrap()
            .insert("id".into(), json!(format!("q{i}")));
    }
    q
}

/// `n` valid questions for the tool of `mode`.
pub fn questions(mode: Mode, n: usize) -> Vec<Value> {
    (0..n).map(|i| question(mode, i)).collect()
}

/// `{"questions": questions}` as compact text.
pub fn args(questions: Vec<Value>) -> String {
    json!({ "questions": questions }).to_string()
}

/// Arguments with one valid question whose field `key` is set to `value`.
pub fn with_field(mode: Mode, key: &str, value: Value) -> String {
    let mut q = question(mode, 0);
    q.as_object_mut().unwrap().insert(key.into(), value);
    args(vec![q])
}

/// Arguments with one valid question whose first option's field `key` is `value`.
pub fn with_option_field(mode: Mode, key: &str, value: Value) -> String {
    let mut q = question(mode, 0);
    q["options"][0].as_object_mut().unwrap().insert(key.into(), value);
    args(vec![q])
}

/// Prepares `arguments`, failing the test with the error if they are refused.
pub fn accept(config: &ToolConfig, arguments: &str) -> Ask {
    match config.prepare(arguments) {
        Ok(ask) => ask,
        Err(e) => panic!("{:?} refused {arguments}: {e}", config.mode),
    }
}

/// The message of the refusal of `arguments`, failing the test if they pass.
pub fn refuse(config: &ToolConfig, arguments: &str) -> String {
    match config.prepare(arguments) {
        Ok(_) => panic!("{:?} accepted {arguments}", config.mode),
        Err(e) => e.to_string(),
    }
}

/// `n` copies of `c` (a multi-byte character proves counts are in `chars()`).
pub fn chars(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}

/// The `.json` files directly in `dir` (a path under the project root, such as
/// `scenarios` or `scenarios/failing`), sorted.
pub fn json_files(dir: &str) -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

/// Whether the scenario file at `path` is one of the big loads (`load-*`, but
/// `load-small`): 10^4 to 10^5 calls each. Tests that run every scenario many
/// times over (under several seeds, sweeps, both broker routes, every stream)
/// leave them out to keep CI in minutes; each is still run: `tests/scenarios.rs`
/// runs every file and `tests/trace_hashes.rs` pins every file's trace hash.
pub fn is_big_load(path: &std::path::Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    name.starts_with("load-") && name != "load-small.json"
}

/// `asksim ARGS` with the variables `env` set: its output, whatever its exit.
pub fn asksim(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_asksim"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the asksim binary runs")
}
