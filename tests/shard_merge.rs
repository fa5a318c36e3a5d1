//! Sharded sweeps and `asksim merge` (issue #14): the shard rule (the i-th seed of
//! the range is in shard i mod N, shards counted from 0), `--shard auto/N` from
//! `JOB_COMPLETION_INDEX` or `SLURM_ARRAY_TASK_ID`, the JSON Lines a shard writes,
//! and a merge that gives the report of one sweep over the same seeds or refuses
//! (exit 2, naming the file) whatever would make it wrong.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use asksim::scenario;
use asksim::sim::hunt::seeds::SeedRange;
use asksim::sim::hunt::seeds::Shard;
use asksim::sim::hunt::shard::{SeedContext, SeedRecord};
use asksim::sim::hunt::sweep::{SweepOptions, run_seed};
use proptest::prelude::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tempfile::TempDir;

fn scenario_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name)
}

/// The binary, with neither index variable inherited (the tests may run inside a
/// Slurm job or a pod).
fn asksim() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_asksim"));
    command
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("SLURM_ARRAY_TASK_ID");
    command
}

fn run(command: &mut Command) -> Output {
    command.output().expect("asksim runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `asksim sweep FILE --seeds SEEDS --jobs 1 EXTRA…`.
fn sweep(file: &Path, seeds: &str, extra: &[&str]) -> Output {
    run(asksim()
        .args(["sweep", file.to_str().unwrap(), "--seeds", seeds, "--jobs", "1"])
        .args(extra))
}

/// Runs every shard K/N of the sweep into `dir/shard-K.jsonl`; returns the paths.
fn shards(dir: &Path, file: &Path, seeds: &str, n: u64, extra: &[&str]) -> Vec<PathBuf> {
    (0..n)
        .map(|k| {
            let path = dir.join(format!("shard-{k}.jsonl"));
            let shard = format!("{k}/{n}");
            let out = sweep(
                file,
                seeds,
                &[&["--shard", &shard, "--out", path.to_str().unwrap()], extra].concat(),
            );
            assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
            path
        })
        .collect()
}

fn merge(paths: &[PathBuf], json: bool) -> Output {
    let mut command = asksim();
    command.arg("merge").args(paths);
    if json {
        command.arg("--json");
    }
    run(&mut command)
}

/// A report's JSON text without its `wall_s` (the one field allowed to differ).
fn without_wall(text: &str) -> String {
    let at = text.find(",\"wall_s\":").expect("the report has wall_s");
    let number = &text[at + ",\"wall_s\":".len()..];
    let end = number
        .find(|c: char| !(c.is_ascii_digit() || ".eE+-".contains(c)))
        .unwrap();
    format!("{}{}", &text[..at], &number[end..])
}

/// Shards then merge give the bytes of one sweep's `--json` (wall time aside),
/// and its exit code.
fn assert_merge_equals_sweep(file: &Path, seeds: &str, n: u64, extra: &[&str]) -> i32 {
    let dir = tempfile::tempdir().unwrap();
    let one = sweep(file, seeds, &[&["--json"], extra].concat());
    let paths = shards(dir.path(), file, seeds, n, extra);
    let merged = merge(&paths, true);
    assert_eq!(merged.status.code(), one.status.code(), "{}", stderr(&merged));
    assert_eq!(without_wall(&stdout(&merged)), without_wall(&stdout(&one)));
    one.status.code().unwrap()
}

#[test]
fn merged_shards_print_the_json_of_one_sweep_over_the_same_seeds() {
    // The scenario's exact expectations hold for some seeds only, so the sweep has
    // failing seeds, reproduce commands and both sides of the race.
    let file = scenario_path("race-answer-vs-expiry.json");
    let code = assert_merge_equals_sweep(&file, "0..150", 4, &[]);
    assert_eq!(code, 1, "some seeds fail: merge exits 1 like the sweep");
}

#[test]
fn merged_shards_equal_one_sweep_under_every_flag_that_changes_a_run() {
    let file = scenario_path("race-hold-vs-expiry.json");
    let extra = ["--invariants-only", "--explore", "pct:3"];
    let code = assert_merge_equals_sweep(&file, "1000..1090", 3, &extra);
    assert_eq!(code, 0);
    let quickstart = scenario_path("quickstart.json");
    assert_merge_equals_sweep(&quickstart, "5..=40", 5, &["--explore", "fifo"]);
}

#[test]
fn merge_prints_the_human_report_of_one_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("race-answer-vs-expiry.json");
    let one = stdout(&sweep(&file, "0..40", &[]));
    let merged = stdout(&merge(&shards(dir.path(), &file, "0..40", 3, &[]), false));
    // Every line but the last, which ends with the wall time.
    let body = |text: &str| text.lines().rev().skip(1).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(body(&merged), body(&one));
    assert!(merged.contains("FAIL seed"), "{merged}");
}

#[test]
fn a_range_ending_at_u64_max_shards_and_merges() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("quickstart.json");
    let seeds = "18446744073709551614..=18446744073709551615";
    // Three shards of two seeds: shard 2/3 holds none and still writes its file.
    let paths = shards(dir.path(), &file, seeds, 3, &[]);
    assert_eq!(seeds_in(&paths[0]), [18446744073709551614]);
    assert_eq!(seeds_in(&paths[1]), [18446744073709551615]);
    assert_eq!(seeds_in(&paths[2]), Vec::<u64>::new());
    let one = sweep(&file, seeds, &["--json"]);
    let merged = merge(&paths, true);
    assert_eq!(merged.status.code(), Some(0), "{}", stderr(&merged));
    assert_eq!(without_wall(&stdout(&merged)), without_wall(&stdout(&one)));
    assert!(stdout(&merged).contains("\"to\":18446744073709551616"));
}

/// The seeds of a shard file's run lines, in file order.
fn seeds_in(path: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|line| line.starts_with("{\"run\":"))
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["run"]["seed"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

#[test]
fn shard_k_of_n_runs_the_seeds_whose_index_is_k_mod_n() {
    // The documented example: seeds 10..20 in 3 shards.
    let dir = tempfile::tempdir().unwrap();
    let paths = shards(dir.path(), &scenario_path("quickstart.json"), "10..20", 3, &[]);
    assert_eq!(seeds_in(&paths[0]), [10, 13, 16, 19]);
    assert_eq!(seeds_in(&paths[1]), [11, 14, 17]);
    assert_eq!(seeds_in(&paths[2]), [12, 15, 18]);
}

fn range(from: u64, len: u64) -> SeedRange {
    SeedRange {
        from,
        to: u128::from(from) + u128::from(len),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Every seed of the range is in exactly one shard, the one its index names;
    /// each shard enumerates exactly its seeds, in order; the sizes add up and
    /// differ by at most one. Ranges end anywhere up to u64::MAX.
    #[test]
    fn every_seed_is_in_exactly_one_shard(
        len in 1u64..300,
        n in 1u64..40,
        start in any::<u64>(),
        at_the_top in any::<bool>(),
    ) {
        let from = if at_the_top { u64::MAX - (len - 1) } else { start.min(u64::MAX - (len - 1)) };
        let seeds = range(from, len);
        let shards: Vec<Shard> = (0..n).map(|k| Shard::new(k, n).unwrap()).collect();
        for i in 0..len {
            let seed = from + i;
            let holders: Vec<u64> = shards.iter().filter(|s| s.holds(seeds, seed)).map(|s| s.index()).collect();
            prop_assert_eq!(holders, vec![i % n]);
        }
        let mut total = 0;
        for shard in &shards {
            let listed: Vec<u64> = (0..shard.len(seeds)).map(|nth| shard.seed(seeds, nth)).collect();
            let expected: Vec<u64> = (0..len).filter(|i| i % n == shard.index()).map(|i| from + i).collect();
            prop_assert_eq!(&listed, &expected);
            total += listed.len() as u64;
        }
        prop_assert_eq!(total, len);
        let sizes: Vec<u64> = shards.iter().map(|s| s.len(seeds)).collect();
        prop_assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        // Nothing outside the range belongs to any shard.
        if from > 0 {
            prop_assert!(shards.iter().all(|s| !s.holds(seeds, from - 1)));
        }
        if let Ok(past) = u64::try_from(seeds.to) {
            prop_assert!(shards.iter().all(|s| !s.holds(seeds, past)));
        }
    }
}

#[test]
fn a_shard_out_of_range_is_a_usage_error() {
    let file = scenario_path("quickstart.json");
    for bad in [
        "3/3", "0/0", "x/2", "1/x", "2", "-1/2", "auto/0", "auto/x", "0/100001", "",
    ] {
        let out = sweep(&file, "0..10", &[&format!("--shard={bad}")]);
        assert_eq!(out.status.code(), Some(2), "--shard {bad:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("--shard"), "{}", stderr(&out));
    }
    let ok = sweep(&file, "0..10", &["--shard", "99999/100000"]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "an empty shard is a shard: {}",
        stderr(&ok)
    );
}

/// `sweep --shard auto/3 --out` with the given environment; the folder of its
/// output file, and that file's path.
fn auto(env: &[(&str, &str)]) -> (Output, TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auto.jsonl");
    let file = scenario_path("quickstart.json");
    let mut command = asksim();
    command
        .args(["sweep", file.to_str().unwrap(), "--seeds", "0..9", "--jobs", "1"])
        .args(["--shard", "auto/3", "--out", path.to_str().unwrap()])
        .envs(env.iter().copied());
    (run(&mut command), dir, path)
}

#[test]
fn auto_takes_k_from_job_completion_index() {
    let (out, _dir, path) = auto(&[("JOB_COMPLETION_INDEX", "1")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("shard 1/3 from JOB_COMPLETION_INDEX=1"),
        "{}",
        stderr(&out)
    );
    assert_eq!(seeds_in(&path), [1, 4, 7]);
}

#[test]
fn auto_takes_k_from_slurm_array_task_id() {
    let (out, _dir, path) = auto(&[("SLURM_ARRAY_TASK_ID", "2")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("shard 2/3 from SLURM_ARRAY_TASK_ID=2"),
        "{}",
        stderr(&out)
    );
    assert_eq!(seeds_in(&path), [2, 5, 8]);
}

#[test]
fn auto_prefers_job_completion_index_when_both_are_set() {
    let (out, _dir, path) = auto(&[("JOB_COMPLETION_INDEX", "0"), ("SLURM_ARRAY_TASK_ID", "2")]);
    assert!(
        stderr(&out).contains("from JOB_COMPLETION_INDEX=0"),
        "{}",
        stderr(&out)
    );
    assert_eq!(seeds_in(&path), [0, 3, 6]);
}

#[test]
fn auto_without_an_index_variable_exits_2_naming_both() {
    let (out, _dir, path) = auto(&[]);
    assert_eq!(out.status.code(), Some(2));
    let message = stderr(&out);
    assert!(
        message.contains("JOB_COMPLETION_INDEX") && message.contains("SLURM_ARRAY_TASK_ID"),
        "{message}"
    );
    assert!(!path.exists(), "nothing written");
}

#[test]
fn auto_with_a_bad_index_exits_2_naming_the_variable() {
    for (name, value) in [
        ("JOB_COMPLETION_INDEX", "one"),
        ("JOB_COMPLETION_INDEX", ""),
        ("SLURM_ARRAY_TASK_ID", "-1"),
        ("SLURM_ARRAY_TASK_ID", "3"),
    ] {
        let (out, _, _) = auto(&[(name, value)]);
        assert_eq!(out.status.code(), Some(2), "{name}={value}");
        assert!(stderr(&out).contains(name), "{}", stderr(&out));
    }
}

#[test]
fn a_shard_file_holds_each_seed_and_a_closing_line_naming_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_path("race-answer-vs-expiry.json");
    let paths = shards(dir.path(), &file, "0..20", 2, &["--explore", "pct:2"]);
    let text = std::fs::read_to_string(&paths[1]).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (end, runs) = lines.split_last().unwrap();
    assert_eq!(runs.len(), 10);
    for line in runs {
        let run = &line["run"];
        for key in [
            "seed",
            "outcomes",
            "trace_hash",
            "order_hash",
            "timing_hash",
            "violations",
            "expectations",
            "limit",
            "crashed",
            "reproduce",
        ] {
            assert!(run.get(key).is_some(), "a run line has {key}: {run}");
        }
        assert!(run["expectations"]["failures"].is_array());
    }
    let end = &end["shard"];
    assert_eq!(end["asksim"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        end["build"].as_str().unwrap().len(),
        64,
        "SHA-256 of the executable"
    );
    let sha = Sha256::digest(std::fs::read(&file).unwrap());
    let sha: String = sha.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(end["scenario_sha256"], sha);
    assert_eq!(end["seeds"], serde_json::json!({"from": 0, "to": 20}));
    assert_eq!(end["shard"], "1/2");
    assert_eq!(end["explore"], "pct:2");
    assert_eq!(end["clock"], "virtual");
    assert_eq!(end["invariants_only"], false);
    assert_eq!(end["runs"], 10);
    assert!(end["totals"].is_object());
}

/// A seed's record carries everything of its summary but the wall-clock fields,
/// so `sweep::report` folds the same thing from a file as from the runs.
#[test]
fn a_seed_record_gives_back_its_summary_but_the_wall_clock() {
    let dir = tempfile::tempdir().unwrap();
    let limit = dir.path().join("limit.json");
    let text = r#"{"name":"limit","limits":{"virtual_s_max":1},"agents":[{"name":"root","script":[{"work":1},{"work":1}]}]}"#;
    std::fs::write(&limit, text).unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json") && !common::is_big_load(path))
        .collect();
    files.push(limit);
    let mut limits = 0;
    for file in files {
        let scenario = scenario::load(&file).unwrap();
        let options = SweepOptions {
            file: file.display().to_string(),
            seeds: "0..3".parse().unwrap(),
            jobs: 1,
            clock: scenario.clock,
            strategy: scenario.explore.unwrap_or_default(),
            invariants_only: false,
            shard: Shard::WHOLE,
            answerers: Default::default(),
            broker: None,
        };
        let context = SeedContext {
            scenario: &scenario.name,
            clock: options.clock,
            strategy: options.strategy,
        };
        for seed in 0..3 {
            let result = run_seed(&scenario, &options, seed);
            let line = serde_json::to_string(&SeedRecord::new(seed, &result)).unwrap();
            let back = serde_json::from_str::<SeedRecord>(&line)
                .unwrap()
                .into_result(&context)
                .unwrap();
            let strip = |summary: &asksim::sim::Summary| {
                let mut value = serde_json::to_value(summary).unwrap();
                let object = value.as_object_mut().unwrap();
                object.remove("wall_s");
                object.remove("throughput");
                value
            };
            assert_eq!(
                strip(&back.summary),
                strip(&result.summary),
                "{} seed {seed}",
                file.display()
            );
            assert_eq!(
                (&back.order_hash, &back.timing_hash),
                (&result.order_hash, &result.timing_hash)
            );
            limits += u64::from(result.summary.limit.is_some());
        }
    }
    assert!(limits > 0, "a limit went through the record");
}

#[test]
fn a_seed_record_refuses_an_invariant_or_limit_this_build_does_not_know() {
    let context = SeedContext {
        scenario: "x",
        clock: asksim::scenario::Clock::Virtual,
        strategy: asksim::scenario::Strategy::Random,
    };
    let record = |violation: &str, limit: &str| {
        let text = format!(
            r#"{{"seed":1,"outcomes":{{"answered":0,"pending":0,"errors":{{}},"lost_on_restart":0,"open":0,"late_answered":0,"withdrawn":0,"pending_open":0}},"trace_hash":"t","order_hash":"o","timing_hash":"m","violations":[{{"invariant":"{violation}","callId":"root/1","seq":4,"detail":"d"}}],"expectations":{{"passed":0,"failed":0,"failures":[]}},"limit":{limit},"crashed":null,"reproduce":"r","calls":1,"events":4,"virtual_s":1.0,"latency_s":{{"p50":0,"p99":0,"max":0}},"lateness_s":{{"p50":0,"p99":0,"max":0}}}}"#
        );
        serde_json::from_str::<SeedRecord>(&text)
            .unwrap()
            .into_result(&context)
    };
    let known = record("exactly_once", "\"events_max\"").unwrap();
    assert_eq!(known.summary.invariants.violations[0].invariant, "exactly_once");
    assert_eq!(known.summary.limit, Some("events_max"));
    let refused = |result: Result<_, String>| result.err().unwrap_or_default();
    assert!(refused(record("no_such_invariant", "null")).contains("no_such_invariant"));
    assert!(refused(record("exactly_once", "\"no_such_limit\"")).contains("no_such_limit"));
}

// ---------------------------------------------------------------------------
// Every reason merge refuses: exit 2, nothing on stdout, the file named.

/// Three good shard files of a failing sweep (`race-answer-vs-expiry`, 0..30).
fn good_shards() -> (TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let paths = shards(
        dir.path(),
        &scenario_path("race-answer-vs-expiry.json"),
        "0..30",
        3,
        &[],
    );
    (dir, paths)
}

/// Merge refuses the files: exit 2, nothing printed, stderr names `file` and
/// says `what`.
fn assert_refused(paths: &[PathBuf], file: &Path, what: &str) {
    let out = merge(paths, true);
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{message}");
    assert!(out.stdout.is_empty(), "nothing merged: {}", stdout(&out));
    assert!(
        message.contains(&file.display().to_string()),
        "names {}: {message}",
        file.display()
    );
    assert!(message.contains(what), "says {what:?}: {message}");
}

/// Rewrites a shard file's lines with `edit`, then seals it again (the closing
/// line's `lines_sha256`), as a buggy or hostile writer would: what merge must
/// then catch is the content, not the checksum.
fn edit_sealed(path: &Path, edit: impl FnOnce(&mut Vec<String>)) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut end = lines.pop().unwrap();
    edit(&mut lines);
    let mut hasher = Sha256::new();
    for line in &lines {
        hasher.update(format!("{line}\n").as_bytes());
    }
    let sha: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let at = end.find("\"lines_sha256\":\"").unwrap() + "\"lines_sha256\":\"".len();
    end.replace_range(at..at + 64, &sha);
    lines.push(end);
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// Replaces `from` by `to` in a file's closing line.
fn edit_closing(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let (body, end) = text.trim_end().rsplit_once('\n').unwrap();
    assert!(end.contains(from), "{from} in {end}");
    std::fs::write(path, format!("{body}\n{}\n", end.replacen(from, to, 1))).unwrap();
}

#[test]
fn merge_refuses_a_missing_shard() {
    let (_dir, paths) = good_shards();
    let out = merge(&paths[..2], true);
    assert_eq!(out.status.code(), Some(2));
    let message = stderr(&out);
    assert!(message.contains("missing seeds: shard 2/3"), "{message}");
    assert!(
        message.contains(&paths[0].display().to_string()),
        "names the files given: {message}"
    );
}

#[test]
fn merge_refuses_a_file_missing_a_seed() {
    let (_dir, paths) = good_shards();
    edit_sealed(&paths[1], |lines| {
        lines.remove(2);
    });
    // Shard 1/3 of 0..30 is 1, 4, 7, …: its third seed is 7.
    assert_refused(&paths, &paths[1], "seed 7 is missing");
}

#[test]
fn merge_refuses_a_seed_twice_in_a_file() {
    let (_dir, paths) = good_shards();
    edit_sealed(&paths[0], |lines| {
        let copy = lines[3].clone();
        lines.push(copy);
    });
    assert_refused(&paths, &paths[0], "seed 9 twice");
}

#[test]
fn merge_refuses_a_shard_given_twice() {
    let (dir, mut paths) = good_shards();
    let copy = dir.path().join("copy-of-shard-1.jsonl");
    std::fs::copy(&paths[1], &copy).unwrap();
    paths.push(copy.clone());
    assert_refused(&paths, &copy, "shard 1/3 again");
}

#[test]
fn merge_refuses_a_seed_outside_its_shard() {
    let (_dir, paths) = good_shards();
    edit_sealed(&paths[2], |lines| {
        lines[0] = lines[0].replacen("{\"run\":{\"seed\":2,", "{\"run\":{\"seed\":3,", 1);
    });
    assert_refused(&paths, &paths[2], "seed 3 is not in shard 2/3");
}

#[test]
fn merge_refuses_shards_of_another_scenario() {
    let (dir, mut paths) = good_shards();
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    paths[2] = shards(&other, &scenario_path("quickstart.json"), "0..30", 3, &[]).remove(2);
    assert_refused(&paths, &paths[2], "another scenario");
}

#[test]
fn merge_refuses_shards_of_another_build() {
    let (_dir, paths) = good_shards();
    let text = std::fs::read_to_string(&paths[1]).unwrap();
    let at = text.find("\"build\":\"").unwrap() + "\"build\":\"".len();
    edit_closing(&paths[1], &text[at..at + 64], &"0".repeat(64));
    assert_refused(&paths, &paths[1], "another build");
}

#[test]
fn merge_refuses_shards_of_another_version() {
    let (_dir, paths) = good_shards();
    let version = format!("\"asksim\":\"{}\"", env!("CARGO_PKG_VERSION"));
    edit_closing(&paths[0], &version, "\"asksim\":\"99.0.0\"");
    assert_refused(&paths, &paths[0], "written by asksim 99.0.0");
}

#[test]
fn merge_refuses_shards_of_another_seed_range() {
    let (dir, mut paths) = good_shards();
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let file = scenario_path("race-answer-vs-expiry.json");
    paths[1] = shards(&other, &file, "0..33", 3, &[]).remove(1);
    assert_refused(&paths, &paths[1], "another seed range: 0..33");
}

#[test]
fn merge_refuses_shards_of_another_shard_count() {
    let (dir, mut paths) = good_shards();
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let file = scenario_path("race-answer-vs-expiry.json");
    paths[1] = shards(&other, &file, "0..30", 4, &[]).remove(1);
    assert_refused(&paths, &paths[1], "another shard count");
}

#[test]
fn merge_refuses_shards_of_another_strategy() {
    let (dir, mut paths) = good_shards();
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let file = scenario_path("race-answer-vs-expiry.json");
    paths[1] = shards(&other, &file, "0..30", 3, &["--explore", "fifo"]).remove(1);
    assert_refused(&paths, &paths[1], "another strategy: --explore fifo");
}

#[test]
fn merge_refuses_shards_of_another_clock() {
    // A scenario with nothing to do runs at once on the real clock too.
    let dir = tempfile::tempdir().unwrap();
    let idle = dir.path().join("idle.json");
    std::fs::write(&idle, r#"{"name":"idle"}"#).unwrap();
    let mut paths = shards(dir.path(), &idle, "0..4", 2, &[]);
    let real = dir.path().join("real");
    std::fs::create_dir_all(&real).unwrap();
    paths[1] = shards(&real, &idle, "0..4", 2, &["--clock", "real"]).remove(1);
    assert_refused(&paths, &paths[1], "another clock: --clock real");
}

#[test]
fn merge_refuses_shards_of_other_flags() {
    let (dir, mut paths) = good_shards();
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let file = scenario_path("race-answer-vs-expiry.json");
    paths[2] = shards(&other, &file, "0..30", 3, &["--invariants-only"]).remove(2);
    assert_refused(&paths, &paths[2], "other flags: --invariants-only");
}

#[test]
fn merge_refuses_a_file_without_its_closing_line() {
    let (_dir, paths) = good_shards();
    let text = std::fs::read_to_string(&paths[1]).unwrap();
    let (body, _) = text.trim_end().rsplit_once('\n').unwrap();
    std::fs::write(&paths[1], format!("{body}\n")).unwrap();
    assert_refused(&paths, &paths[1], "truncated: no closing line");
    std::fs::write(&paths[1], "").unwrap();
    assert_refused(&paths, &paths[1], "truncated: no closing line");
}

#[test]
fn merge_refuses_a_file_cut_inside_a_line() {
    let (_dir, paths) = good_shards();
    let text = std::fs::read(&paths[0]).unwrap();
    std::fs::write(&paths[0], &text[..text.len() - 40]).unwrap();
    let lines = text.iter().filter(|b| **b == b'\n').count();
    assert_refused(&paths, &paths[0], &format!("line {lines}: not a shard line"));
}

#[test]
fn merge_refuses_a_line_that_is_not_json() {
    let (_dir, paths) = good_shards();
    let text = std::fs::read_to_string(&paths[2]).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1] = "{\"run\": not json";
    std::fs::write(&paths[2], lines.join("\n") + "\n").unwrap();
    assert_refused(&paths, &paths[2], "line 2: not a shard line");
}

#[test]
fn merge_refuses_a_damaged_line_that_is_still_json() {
    let (_dir, paths) = good_shards();
    let text = std::fs::read_to_string(&paths[0]).unwrap();
    let damaged = text.replacen("\"answered\":1,", "\"answered\":7,", 1);
    assert_ne!(damaged, text);
    std::fs::write(&paths[0], damaged).unwrap();
    assert_refused(&paths, &paths[0], "damaged");
}

#[test]
fn merge_refuses_a_line_after_the_closing_line() {
    let (_dir, paths) = good_shards();
    let text = std::fs::read_to_string(&paths[0]).unwrap();
    let first = text.lines().next().unwrap().to_owned();
    std::fs::write(&paths[0], format!("{text}{first}\n")).unwrap();
    assert_refused(&paths, &paths[0], "a line after the closing line");
}

#[test]
fn merge_refuses_a_file_it_cannot_read() {
    let (dir, mut paths) = good_shards();
    paths[1] = dir.path().join("no-such-shard.jsonl");
    assert_refused(&paths, &paths[1], "cannot read it");
    paths[1] = dir.path().to_path_buf();
    assert_refused(&paths, dir.path(), "cannot read it");
}
