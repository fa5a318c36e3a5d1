//! `asksim merge`: the files of a sharded sweep (`shard.rs`) folded into the report
//! one sweep over the same seeds prints, through the same fold (`sweep::report`).
//!
//! Nothing is merged silently. Before folding, every file must be whole (a closing
//! line, valid JSON on every line, seed lines matching the closing line's
//! checksum), written by this version of asksim, and every file must come from the
//! same sweep: one build, one scenario file (SHA-256), one seed range, one N, one
//! strategy, one clock, one `--invariants-only`. Every shard 0..N-1 must be given
//! exactly once, each holding exactly its seeds. Any other case is an error naming
//! the file and what is wrong (exit 2).
//!
//! The merged `wall_s` is the longest shard's: the sweep's elapsed time when every
//! shard runs at once, which is what `wall_s` means for one machine (the sum would
//! be machine time, another quantity).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::scenario::{self, Clock, FILE_BYTES_MAX, Strategy};
use crate::sim::hunt::seeds::{SeedRange, Shard};
use crate::sim::hunt::shard::{Line, SeedContext, SeedRecord, ShardEnd, sha256_hex};
use crate::sim::hunt::sweep::{self, SeedResult, SweepOptions, SweepReport};

/// Longest line of a shard file: a closing line holds the scenario's text, at most
/// `FILE_BYTES_MAX` bytes, which JSON escaping at most doubles (newlines and
/// quotes; other control characters cannot stand raw in a JSON file), plus the
/// rest of the line.
pub const LINE_BYTES_MAX: u64 = 2 * FILE_BYTES_MAX + (1 << 20);

/// Why the files cannot be merged (exit 2).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// Something wrong with one file.
    #[error("{file}: {what}")]
    File {
        /// The file, as given.
        file: String,
        /// What is wrong.
        what: String,
    },
    /// Something wrong with the set of files (a shard no file holds).
    #[error("{0}")]
    Set(String),
}

fn file_error(file: &str, what: impl Into<String>) -> MergeError {
    MergeError::File {
        file: file.to_owned(),
        what: what.into(),
    }
}

/// One shard file, read and checked on its own.
struct ShardFile {
    file: String,
    end: ShardEnd,
    seeds: SeedRange,
    /// The seed lines, with their line numbers.
    records: Vec<(usize, SeedRecord)>,
}

/// Merges the shard files at `paths` into the report of one sweep over their seeds.
pub fn merge(paths: &[PathBuf]) -> Result<SweepReport, MergeError> {
    let mut shards = Vec::with_capacity(paths.len());
    for path in paths {
        shards.push(read_shard(path)?);
    }
    let Some(first) = shards.first() else {
        return Err(MergeError::Set("no shard file given".into()));
    };
    for other in &shards[1..] {
        same_sweep(first, other)?;
    }
    every_shard_once(&shards)?;
    fold(shards)
}

/// Reads one file: its lines, its closing line, its checksum and its seeds.
fn read_shard(path: &Path) -> Result<ShardFile, MergeError> {
    let file = path.display().to_string();
    let opened = File::open(path).map_err(|e| file_error(&file, format!("cannot read it: {e}")))?;
    let mut reader = BufReader::new(opened);
    let (mut records, mut end, mut hasher) = (Vec::new(), None, Sha256::new());
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let n = (&mut reader)
            .take(LINE_BYTES_MAX + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| file_error(&file, format!("line {number}: cannot read it: {e}")))?;
        if n == 0 {
            break;
        }
        if n as u64 > LINE_BYTES_MAX {
            return Err(file_error(
                &file,
                format!("line {number}: longer than {LINE_BYTES_MAX} bytes"),
            ));
        }
        if end.is_some() {
            return Err(file_error(
                &file,
                format!("line {number}: a line after the closing line"),
            ));
        }
        match serde_json::from_slice::<Line>(&line) {
            Ok(Line::Run(record)) => {
                hasher.update(&line);
                records.push((number, record));
            }
            Ok(Line::End(closing)) => end = Some(closing),
            Err(e) => return Err(file_error(&file, format!("line {number}: not a shard line: {e}"))),
        }
    }
    let Some(end) = end else {
        return Err(file_error(
            &file,
            "truncated: no closing line (the shard did not finish, or the file was cut short)",
        ));
    };
    let lines_sha256: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    if lines_sha256 != end.lines_sha256 {
        return Err(file_error(
            &file,
            "damaged: its seed lines do not match the closing line's lines_sha256",
        ));
    }
    let seeds = end
        .seeds
        .range()
        .map_err(|e| file_error(&file, format!("closing line: seeds: {e}")))?;
    let shard = ShardFile {
        file,
        end,
        seeds,
        records,
    };
    check_own(&shard)?;
    Ok(shard)
}

/// A file on its own: this version wrote it, its scenario text is the one hashed,
/// and it holds every seed of its shard exactly once and no other.
fn check_own(shard: &ShardFile) -> Result<(), MergeError> {
    let (file, end) = (shard.file.as_str(), &shard.end);
    let version = env!("CARGO_PKG_VERSION");
    if end.asksim != version {
        return Err(file_error(
            file,
            format!(
                "written by asksim {}; this is asksim {version}, which merges only its own version's shards",
                end.asksim
            ),
        ));
    }
    if sha256_hex(end.scenario_text.as_bytes()) != end.scenario_sha256 {
        return Err(file_error(
            file,
            "damaged: the scenario text does not match its scenario_sha256",
        ));
    }
    let (seeds, k) = (shard.seeds, end.shard);
    let mut lines = BTreeMap::new();
    for (number, record) in &shard.records {
        if let Some(first) = lines.insert(record.seed, *number) {
            return Err(file_error(
                file,
                format!("seed {} twice (lines {first} and {number})", record.seed),
            ));
        }
        if !k.holds(seeds, record.seed) {
            return Err(file_error(
                file,
                format!(
                    "line {number}: seed {} is not in shard {k} of {seeds}",
                    record.seed
                ),
            ));
        }
    }
    if let Some(nth) = (0..k.len(seeds)).find(|nth| !lines.contains_key(&k.seed(seeds, *nth))) {
        let (seed, count) = (k.seed(seeds, nth), k.len(seeds));
        return Err(file_error(
            file,
            format!("seed {seed} is missing (shard {k} of {seeds} holds {count} seeds)"),
        ));
    }
    if end.runs != shard.records.len() as u64 {
        return Err(file_error(
            file,
            format!(
                "damaged: the closing line counts {} runs, the file holds {}",
                end.runs,
                shard.records.len()
            ),
        ));
    }
    Ok(())
}

/// Two files of one sweep: everything that changes a seed's result, or the
/// seeds, is equal.
fn same_sweep(first: &ShardFile, other: &ShardFile) -> Result<(), MergeError> {
    let (a, b) = (&first.end, &other.end);
    let differs = |what: &str, theirs: String, ours: String| {
        Err(file_error(
            &other.file,
            format!(
                "{what} {theirs}, but {} has {ours}: not shards of one sweep",
                first.file
            ),
        ))
    };
    if a.build != b.build {
        return differs(
            "another build of asksim: executable sha256",
            b.build.clone(),
            a.build.clone(),
        );
    }
    if a.scenario_sha256 != b.scenario_sha256 {
        let (ours, theirs) = (&a.scenario_sha256, &b.scenario_sha256);
        return differs("another scenario: file sha256", theirs.clone(), ours.clone());
    }
    if first.seeds != other.seeds {
        return differs(
            "another seed range:",
            other.seeds.to_string(),
            first.seeds.to_string(),
        );
    }
    if a.shard.count() != b.shard.count() {
        let (ours, theirs) = (a.shard.count(), b.shard.count());
        return differs("another shard count: N =", theirs.to_string(), ours.to_string());
    }
    if a.explore != b.explore {
        return differs(
            "another strategy: --explore",
            b.explore.clone(),
            a.explore.clone(),
        );
    }
    if a.clock != b.clock {
        return differs("another clock: --clock", b.clock.clone(), a.clock.clone());
    }
    if a.invariants_only != b.invariants_only {
        let flag = |on: bool| {
            if on {
                "--invariants-only".to_owned()
            } else {
                "no --invariants-only".to_owned()
            }
        };
        return differs("other flags:", flag(b.invariants_only), flag(a.invariants_only));
    }
    if a.broker_cmd != b.broker_cmd {
        let cmd = |c: &Option<String>| c.clone().unwrap_or_else(|| "asksim's own broker".into());
        return differs(
            "another broker: --broker-cmd",
            cmd(&b.broker_cmd),
            cmd(&a.broker_cmd),
        );
    }
    Ok(())
}

/// Every shard 0..N-1 is given exactly once.
fn every_shard_once(shards: &[ShardFile]) -> Result<(), MergeError> {
    let mut given: BTreeMap<u64, &str> = BTreeMap::new();
    for shard in shards {
        let k = shard.end.shard;
        if let Some(before) = given.insert(k.index(), &shard.file) {
            return Err(file_error(
                &shard.file,
                format!("shard {k} again: {before} holds it too"),
            ));
        }
    }
    let count = shards[0].end.shard.count();
    let seeds = shards[0].seeds;
    let missing: BTreeSet<u64> = (0..count).filter(|k| !given.contains_key(k)).collect();
    let Some(&k) = missing.first() else {
        return Ok(());
    };
    let shard = Shard::new(k, count).expect("a missing index is below N");
    let files: Vec<&str> = given.values().copied().collect();
    let more = match missing.len() {
        1 => String::new(),
        n => format!(" (and {} more shards)", n - 1),
    };
    Err(MergeError::Set(format!(
        "missing seeds: shard {shard}{more} is in none of the files given ({}); it holds {} of the {} seeds of {seeds}",
        files.join(", "),
        shard.len(seeds),
        seeds.len()
    )))
}

/// Folds the checked files through `sweep::report`, with the scenario the shards
/// ran (parsed again from its text) and the options they shared.
fn fold(shards: Vec<ShardFile>) -> Result<SweepReport, MergeError> {
    let first = &shards[0];
    let end = &first.end;
    let file = first.file.clone();
    let parsed = scenario::parse(&end.scenario_file, &end.scenario_text)
        .map_err(|e| file_error(&file, format!("its scenario does not parse: {e}")))?;
    let strategy: Strategy = end
        .explore
        .parse()
        .map_err(|e| file_error(&file, format!("closing line: explore: {e}")))?;
    let clock = Clock::named(&end.clock).ok_or_else(|| {
        file_error(
            &file,
            format!("closing line: clock: {:?} is not a clock", end.clock),
        )
    })?;
    let broker = match &end.broker_cmd {
        Some(cmd) => Some(
            crate::wire::Endpoint::parse(cmd)
                .map_err(|e| file_error(&file, format!("closing line: broker_cmd: {e}")))?,
        ),
        None => None,
    };
    let options = SweepOptions {
        broker,
        file: end.scenario_file.clone(),
        seeds: first.seeds,
        jobs: 1,
        clock,
        strategy,
        invariants_only: end.invariants_only,
        shard: Shard::WHOLE,
        answerers: Default::default(),
    };
    let scenario = sweep::swept(&parsed, &options);
    let context = SeedContext {
        scenario: &scenario.name,
        clock,
        strategy,
    };
    let wall_s = shards.iter().map(|s| s.end.wall_s).fold(0.0, f64::max);
    let mut results: BTreeMap<u64, SeedResult> = BTreeMap::new();
    for shard in shards {
        for (number, record) in shard.records {
            let seed = record.seed;
            let result = record
                .into_result(&context)
                .map_err(|e| file_error(&shard.file, format!("line {number}: {e}")))?;
            results.insert(seed, result);
        }
    }
    Ok(sweep::report(&scenario, &options, results, wall_s))
}
