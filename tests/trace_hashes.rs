//! Every scenario's `trace_hash` (the SHA-256 of its log under its own seed),
//! pinned: a refactor must not move a byte of any run. When a change moves a hash
//! on purpose (the log's bytes or the scheduler's choices change), re-pin with
//! `ASKSIM_BLESS=1 cargo test --release --test suite trace_hashes::` and say
//! why in the commit. Only `ASKSIM_BLESS=1` re-pins (any other value is ignored), never when
//! `CI` is set (CI checks, it does not bless), and what moved is printed either
//! way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use asksim::scenario::{self, Clock};
use asksim::sim;

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/trace_hashes.json")
}

fn hashes() -> BTreeMap<String, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|file| {
            let scenario = scenario::load(file).unwrap_or_else(|e| panic!("{e}"));
            // Real-clock runs are not reproducible to the byte; their hash is not pinned.
            (scenario.clock == Clock::Virtual).then(|| {
                let output = sim::run(&scenario, scenario.seed, Clock::Virtual).unwrap();
                let name = file.file_name().unwrap().to_string_lossy().into_owned();
                (name, output.recording.trace_hash)
            })
        })
        .collect()
}

/// Whether to re-pin: `ASKSIM_BLESS` exactly `1`, and not under CI.
fn blessing(bless: Option<&str>, ci: bool) -> bool {
    bless == Some("1") && !ci
}

#[test]
fn only_asksim_bless_1_outside_ci_re_pins() {
    assert!(blessing(Some("1"), false));
    for value in [None, Some("0"), Some(""), Some("true"), Some("yes"), Some(" 1")] {
        assert!(!blessing(value, false), "{value:?}");
    }
    assert!(!blessing(Some("1"), true), "never under CI");
}

#[test]
fn every_scenario_keeps_its_trace_hash() {
    let now = hashes();
    let pinned: BTreeMap<String, String> =
        serde_json::from_str(&std::fs::read_to_string(golden()).expect("tests/golden/trace_hashes.json"))
            .unwrap();
    let moved: Vec<String> = now
        .iter()
        .filter(|(file, hash)| pinned.get(*file) != Some(hash))
        .map(|(file, hash)| {
            format!(
                "{file}: {} -> {hash}",
                pinned.get(file).map_or("(new)", String::as_str)
            )
        })
        .chain(
            pinned
                .keys()
                .filter(|f| !now.contains_key(*f))
                .map(|f| format!("{f}: gone")),
        )
        .collect();
    if !moved.is_empty() {
        eprintln!("trace hashes moved:\n{}", moved.join("\n"));
    }
    let bless = std::env::var("ASKSIM_BLESS").ok();
    let ci = std::env::var_os("CI").is_some();
    if blessing(bless.as_deref(), ci) {
        let text = serde_json::to_string_pretty(&now).unwrap() + "\n";
        std::fs::write(golden(), text).unwrap();
        eprintln!("re-pinned {} trace hashes ({} moved)", now.len(), moved.len());
        return;
    }
    if bless.is_some() {
        eprintln!("ASKSIM_BLESS={bless:?} ignored: only ASKSIM_BLESS=1 re-pins, and never when CI is set");
    }
    assert!(
        moved.is_empty(),
        "trace hashes moved (re-pin with ASKSIM_BLESS=1 only if the change is meant to, and say why in the commit):\n{}",
        moved.join("\n")
    );
}
