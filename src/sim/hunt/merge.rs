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
use crate::sim::hunt::sweep::{self, SweepOptions, SweepReport};

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

/// One shard file, checked on its own. Its seed lines are not kept: the first
/// pass over the files checks them, the second folds them one line at a time, so
/// merging holds one seed line and the report in the making, never every seed's
/// result (a sharded sweep of 10^8 seeds merges in the memory of its report).
struct ShardFile {
    path: PathBuf,
    file: String,
    end: ShardEnd,
    seeds: SeedRange,
    lines_sha256: String,
}

/// Merges the shard files at `paths` into the report of one sweep over their seeds.
pub fn merge(paths: &[PathBuf]) -> Result<SweepReport, MergeError> {
    let mut shards = Vec::with_capacity(paths.len());
    for path in paths {
        shards.push(check_shard(path)?);
    }
    let Some(first) = shards.first() else {
        return Err(MergeError::Set("no shard file given".into()));
    };
    for other in &shards[1..] {
        same_sweep(first, other)?;
    }
    every_shard_once(&shards)?;
    fold(&shards)
}

/// Reads one file's lines: each seed line goes to `each` with its line number;
/// the closing line and the SHA-256 of the seed lines come back, the checksum
/// checked against the closing line's.
fn read_lines(
    path: &Path,
    file: &str,
    mut each: impl FnMut(usize, SeedRecord) -> Result<(), MergeError>,
) -> Result<(ShardEnd, String), MergeError> {
    let cannot = |e: std::io::Error| file_error(file, format!("cannot read it: {e}"));
    let opened = File::open(path).map_err(cannot)?;
    crate::log::not_a_directory(&opened.metadata().map_err(cannot)?).map_err(cannot)?;
    let mut reader = BufReader::new(opened);
    let (mut end, mut hasher) = (None, Sha256::new());
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let n = (&mut reader)
            .take(LINE_BYTES_MAX + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| file_error(file, format!("line {number}: cannot read it: {e}")))?;
        if n == 0 {
            break;
        }
        if n as u64 > LINE_BYTES_MAX {
            return Err(file_error(
                file,
                format!("line {number}: longer than {LINE_BYTES_MAX} bytes"),
            ));
        }
        if end.is_some() {
            return Err(file_error(
                file,
                format!("line {number}: a line after the closing line"),
            ));
        }
        match serde_json::from_slice::<Line>(&line) {
            Ok(Line::Run(record)) => {
                hasher.update(&line);
                each(number, record)?;
            }
            Ok(Line::End(closing)) => end = Some(closing),
            Err(e) => return Err(file_error(file, format!("line {number}: not a shard line: {e}"))),
        }
    }
    let Some(end) = end else {
        return Err(file_error(
            file,
            "truncated: no closing line (the shard did not finish, or the file was cut short)",
        ));
    };
    let lines_sha256: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    if lines_sha256 != end.lines_sha256 {
        return Err(file_error(
            file,
            "damaged: its seed lines do not match the closing line's lines_sha256",
        ));
    }
    Ok((end, lines_sha256))
}

/// The first pass over one file: its lines, its closing line, its checksum and its
/// seeds (only the seed numbers are kept, 8 bytes a line, until the file is checked).
fn check_shard(path: &Path) -> Result<ShardFile, MergeError> {
    let file = path.display().to_string();
    let mut seeds_seen = Vec::new();
    let (end, lines_sha256) = read_lines(path, &file, |_, record| {
        seeds_seen.push(record.seed);
        Ok(())
    })?;
    let seeds = end
        .seeds
        .range()
        .map_err(|e| file_error(&file, format!("closing line: seeds: {e}")))?;
    let shard = ShardFile {
        path: path.to_owned(),
        file,
        end,
        seeds,
        lines_sha256,
    };
    check_own(&shard, &seeds_seen)?;
    Ok(shard)
}

/// A file on its own: this version wrote it, its scenario text is the one hashed,
/// and it holds every seed of its shard exactly once and no other.
fn check_own(shard: &ShardFile, seeds_seen: &[u64]) -> Result<(), MergeError> {
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
    // Every line before the closing one is a seed line, so the i-th seed (from 0)
    // stands on line i + 1.
    let mut seen = vec![0u64; k.len(seeds).div_ceil(64) as usize];
    for (i, &seed) in seeds_seen.iter().enumerate() {
        let number = i + 1;
        if !k.holds(seeds, seed) {
            return Err(file_error(
                file,
                format!("line {number}: seed {seed} is not in shard {k} of {seeds}"),
            ));
        }
        let nth = (seed - seeds.from - k.index()) / k.count();
        let (word, bit) = ((nth / 64) as usize, 1u64 << (nth % 64));
        if seen[word] & bit != 0 {
            let first = seeds_seen.iter().position(|s| *s == seed).expect("seen before") + 1;
            return Err(file_error(
                file,
                format!("seed {seed} twice (lines {first} and {number})"),
            ));
        }
        seen[word] |= bit;
    }
    let held = |nth: u64| seen[(nth / 64) as usize] & (1u64 << (nth % 64)) != 0;
    if let Some(nth) = (0..k.len(seeds)).find(|nth| !held(*nth)) {
        let (seed, count) = (k.seed(seeds, nth), k.len(seeds));
        return Err(file_error(
            file,
            format!("seed {seed} is missing (shard {k} of {seeds} holds {count} seeds)"),
        ));
    }
    if end.runs != seeds_seen.len() as u64 {
        return Err(file_error(
            file,
            format!(
                "damaged: the closing line counts {} runs, the file holds {}",
                end.runs,
                seeds_seen.len()
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

/// The second pass: the checked files folded line by line through the fold a
/// sweep uses (`sweep::Fold`), with the scenario the shards ran (parsed again from
/// its text) and the options they shared. A file that changed since it was checked
/// is an error, not a merge of what it holds now.
fn fold(shards: &[ShardFile]) -> Result<SweepReport, MergeError> {
    let first = &shards[0];
    let (options, scenario) = swept_again(first)?;
    let context = SeedContext {
        scenario: &scenario.name,
        clock: options.clock,
        strategy: options.strategy,
    };
    let wall_s = shards.iter().map(|s| s.end.wall_s).fold(0.0, f64::max);
    let mut fold = sweep::Fold::default();
    for shard in shards {
        let (_, lines_sha256) = read_lines(&shard.path, &shard.file, |number, record| {
            let seed = record.seed;
            let result = record
                .into_result(&context)
                .map_err(|e| file_error(&shard.file, format!("line {number}: {e}")))?;
            fold.add(seed, &result);
            Ok(())
        })?;
        if lines_sha256 != shard.lines_sha256 {
            return Err(file_error(&shard.file, "changed while it was being merged"));
        }
    }
    Ok(fold.report(&scenario, &options, wall_s))
}

/// The options and the swept scenario of the sweep `shard` belongs to, from its
/// closing line.
fn swept_again(shard: &ShardFile) -> Result<(SweepOptions, scenario::Scenario), MergeError> {
    let (end, file) = (&shard.end, shard.file.as_str());
    let parsed = scenario::parse(&end.scenario_file, &end.scenario_text)
        .map_err(|e| file_error(file, format!("its scenario does not parse: {e}")))?;
    let strategy: Strategy = end
        .explore
        .parse()
        .map_err(|e| file_error(file, format!("closing line: explore: {e}")))?;
    let clock = Clock::named(&end.clock).ok_or_else(|| {
        file_error(
            file,
            format!("closing line: clock: {:?} is not a clock", end.clock),
        )
    })?;
    let broker = match &end.broker_cmd {
        Some(cmd) => Some(
            crate::wire::Endpoint::parse(cmd)
                .map_err(|e| file_error(file, format!("closing line: broker_cmd: {e}")))?,
        ),
        None => None,
    };
    let options = SweepOptions {
        broker,
        file: end.scenario_file.clone(),
        seeds: shard.seeds,
        jobs: 1,
        clock,
        strategy,
        invariants_only: end.invariants_only,
        shard: Shard::WHOLE,
        answerers: Default::default(),
    };
    let scenario = sweep::swept(&parsed, &options);
    Ok((options, scenario))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::hunt::shard::sweep_to_file;

    fn write_shard(path: &Path, invariants_only: bool) {
        let name = "race-two-answerers-tie.json";
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name);
        let text = std::fs::read_to_string(&file).expect("the scenario");
        let scenario = scenario::parse(name, &text).expect("it parses");
        let options = SweepOptions {
            file: name.to_owned(),
            seeds: "0..6".parse().expect("a range"),
            jobs: 1,
            clock: Clock::Virtual,
            strategy: Strategy::Random,
            invariants_only,
            shard: Shard::WHOLE,
            answerers: Default::default(),
            broker: None,
        };
        sweep_to_file(&scenario, &text, &options, path, |_| {}).expect("the shard is written");
    }

    /// The two passes read the file twice: a file replaced between them (by
    /// another whole shard file of the same name) is refused, not merged as it
    /// stands now.
    #[test]
    fn a_file_that_changes_between_check_and_fold_is_refused() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("shard.jsonl");
        write_shard(&path, false);
        let checked = check_shard(&path).expect("a whole shard file");
        assert!(
            fold(std::slice::from_ref(&checked)).is_ok(),
            "unchanged, it folds"
        );
        write_shard(&path, true);
        let error = fold(&[checked]).expect_err("changed since it was checked");
        assert!(
            error.to_string().ends_with("changed while it was being merged"),
            "{error}"
        );
    }
}
