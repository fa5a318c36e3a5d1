//! The JSON Lines file each shard of a sweep writes for `asksim merge`
//! (`merge.rs`), and the sweep that writes it. Which seeds a shard runs is the
//! rule of `seeds.rs`.
//!
//! # The file (`--out`)
//!
//! One JSON object per line: for every seed of the shard, in seed order,
//! `{"run": SeedRecord}`; then one closing line, `{"shard": ShardEnd}`, written
//! last. A file without its closing line is truncated (the shard did not finish,
//! or the copy was cut short). The closing line carries what `merge` checks before
//! it folds anything: the version and build, the scenario (its SHA-256 and its
//! text), the seed range, K/N, the strategy, the clock, `--invariants-only`,
//! `--broker-cmd`, and
//! the SHA-256 of every seed line above it (`lines_sha256`), so a damaged line is
//! found even when it is still valid JSON.
//!
//! A [`SeedRecord`] holds what `sweep::report` reads of a seed's result, nothing
//! derived from the wall clock, so `merge` rebuilds each seed's
//! [`SeedResult`] and folds them with that same function: a field the sweep report
//! gains from a seed's summary reaches `merge` through [`SeedRecord::into_result`],
//! which names every field of [`Summary`] (a new one does not compile until it is
//! carried or ruled out here).

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::scenario::{Clock, Scenario, Strategy};
use crate::sim::engine::output::Limit;
use crate::sim::hunt::seeds::{SEEDS_MAX, SeedRange, Shard};
use crate::sim::hunt::sweep::{self, SeedResult, SweepOptions, SweepReport};
use crate::sim::judge::expect::ExpectationReport;
use crate::sim::judge::invariants::{INVARIANTS, Violation};
use crate::sim::judge::latency::LatencySummary;
use crate::sim::judge::outcomes::Outcomes;
use crate::sim::judge::summary::{InvariantReport, Summary, Throughput};

/// A broken invariant, as a shard file holds it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViolationRecord {
    /// Which invariant: one of [`INVARIANTS`].
    pub invariant: String,
    /// The call it is about, if any.
    #[serde(rename = "callId")]
    pub call_id: Option<String>,
    /// The `seq` of the offending event.
    pub seq: u64,
    /// What was seen.
    pub detail: String,
}

impl ViolationRecord {
    fn new(violation: &Violation) -> ViolationRecord {
        ViolationRecord {
            invariant: violation.invariant.to_owned(),
            call_id: violation.call_id.clone(),
            seq: violation.seq,
            detail: violation.detail.clone(),
        }
    }

    fn into_violation(self) -> Result<Violation, String> {
        let Some(invariant) = INVARIANTS.iter().find(|name| **name == self.invariant) else {
            return Err(format!(
                "{:?} is not an invariant this build checks",
                self.invariant
            ));
        };
        Ok(Violation {
            invariant,
            call_id: self.call_id,
            seq: self.seq,
            detail: self.detail,
        })
    }
}

/// One seed's result as a shard file holds it (`{"run": …}`): what
/// `sweep::report` reads of it, and what a person looking at one seed wants.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedRecord {
    /// The seed.
    pub seed: u64,
    /// How its calls settled.
    pub outcomes: Outcomes,
    /// SHA-256 of its event log.
    pub trace_hash: String,
    /// Its order hash (`distinct_traces`).
    pub order_hash: String,
    /// Its timing hash (`distinct_timings`).
    pub timing_hash: String,
    /// Broken invariants.
    pub violations: Vec<ViolationRecord>,
    /// Its expectations' verdict (`failures`: the failed ones).
    pub expectations: ExpectationReport,
    /// The limit that stopped it, if one did.
    pub limit: Option<String>,
    /// The panic that ended it, if one did.
    pub crashed: Option<String>,
    /// The outside process that failed it, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_failed: Option<crate::wire::ProcessFailure>,
    /// The command that reproduces it, when it failed.
    pub reproduce: Option<String>,
    /// Tool calls made.
    pub calls: u64,
    /// Events recorded.
    pub events: u64,
    /// Seconds on the run's clock.
    pub virtual_s: f64,
    /// Call start → settlement.
    pub latency_s: LatencySummary,
    /// How late each `pending` came past its window's end.
    pub lateness_s: LatencySummary,
    /// The races it reached, and which side won.
    #[serde(default)]
    pub coverage: crate::sim::judge::coverage::Coverage,
}

/// What every seed of a shard shares, which a [`SeedRecord`] leaves out.
pub struct SeedContext<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    /// The clock.
    pub clock: Clock,
    /// The scheduling strategy.
    pub strategy: Strategy,
}

impl SeedRecord {
    /// The record of `seed`'s result.
    pub fn new(seed: u64, result: &SeedResult) -> SeedRecord {
        let s = &result.summary;
        SeedRecord {
            seed,
            outcomes: s.outcomes.clone(),
            trace_hash: s.trace_hash.clone(),
            order_hash: result.order_hash.clone(),
            timing_hash: result.timing_hash.clone(),
            violations: s.invariants.violations.iter().map(ViolationRecord::new).collect(),
            expectations: s.expectations.clone(),
            limit: s.limit.map(str::to_owned),
            crashed: s.crashed.clone(),
            process_failed: s.process_failed.clone(),
            reproduce: s.reproduce.clone(),
            calls: s.calls,
            events: s.events,
            virtual_s: s.virtual_s,
            latency_s: s.latency_s.clone(),
            lateness_s: s.lateness_s.clone(),
            coverage: s.coverage.clone(),
        }
    }

    /// The seed's result again, as `sweep::report` folds it. Left out, because a
    /// seed's wall time is no property of the seed: `wall_s` and `throughput`
    /// (zero here). An invariant or limit this build does not know is an error.
    pub fn into_result(self, context: &SeedContext) -> Result<SeedResult, String> {
        let violations = self
            .violations
            .into_iter()
            .map(ViolationRecord::into_violation)
            .collect::<Result<Vec<_>, _>>()?;
        let limit = match self.limit {
            None => None,
            Some(name) => {
                Some(limit_named(&name).ok_or_else(|| format!("{name:?} is not a limit of this build"))?)
            }
        };
        let summary = Summary {
            scenario: context.scenario.to_owned(),
            seed: self.seed,
            clock: context.clock.as_str(),
            explore: context.strategy.to_string(),
            calls: self.calls,
            outcomes: self.outcomes,
            invariants: InvariantReport {
                checked: INVARIANTS.to_vec(),
                violations,
            },
            expectations: self.expectations,
            trace_hash: self.trace_hash,
            order_hash: self.order_hash.clone(),
            virtual_s: self.virtual_s,
            wall_s: 0.0,
            latency_s: self.latency_s,
            lateness_s: self.lateness_s,
            throughput: Throughput::default(),
            limit,
            crashed: self.crashed,
            process_failed: self.process_failed,
            events: self.events,
            coverage: self.coverage,
            reproduce: self.reproduce,
        };
        Ok(SeedResult {
            summary,
            order_hash: self.order_hash,
            timing_hash: self.timing_hash,
        })
    }
}

/// A limit's name back to the name the report holds. The match is exhaustive, so a
/// new [`Limit`] does not compile until it is listed here.
fn limit_named(name: &str) -> Option<&'static str> {
    let listed = |limit: Limit| match limit {
        Limit::VirtualSMax | Limit::EventsMax => limit.as_str(),
    };
    [Limit::VirtualSMax, Limit::EventsMax]
        .into_iter()
        .map(listed)
        .find(|known| *known == name)
}

/// A seed range as a shard file holds it (`to` may be 2^64: `A..=u64::MAX`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RangeRecord {
    /// First seed.
    pub from: u64,
    /// One past the last seed.
    pub to: u128,
}

impl RangeRecord {
    /// The range, checked as `--seeds` checks it.
    pub fn range(&self) -> Result<SeedRange, String> {
        let (from, to) = (u128::from(self.from), self.to);
        if to <= from || to > u128::from(u64::MAX) + 1 || to - from > u128::from(SEEDS_MAX) {
            return Err(format!(
                "{}..{} is not a range of 1 to {SEEDS_MAX} seeds",
                self.from, self.to
            ));
        }
        Ok(SeedRange {
            from: self.from,
            to: self.to,
        })
    }
}

impl From<SeedRange> for RangeRecord {
    fn from(seeds: SeedRange) -> RangeRecord {
        RangeRecord {
            from: seeds.from,
            to: seeds.to,
        }
    }
}

/// A shard file's closing line (`{"shard": …}`): what ran, and its totals.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardEnd {
    /// The asksim version that wrote it (`CARGO_PKG_VERSION`).
    pub asksim: String,
    /// The build: SHA-256 of the executable's bytes ([`build_id`]).
    pub build: String,
    /// The scenario's name.
    pub scenario: String,
    /// The scenario file, as the shard was given it.
    pub scenario_file: String,
    /// SHA-256 of the scenario file's bytes.
    pub scenario_sha256: String,
    /// The whole sweep's seed range (not only this shard's seeds).
    pub seeds: RangeRecord,
    /// K/N.
    pub shard: Shard,
    /// The scheduling strategy.
    pub explore: String,
    /// `virtual` or `real`.
    pub clock: String,
    /// Whether `--invariants-only` was given.
    pub invariants_only: bool,
    /// The outside broker's command (`--broker-cmd`), if the broker was not asksim's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_cmd: Option<String>,
    /// Seeds this shard ran.
    pub runs: u64,
    /// Of them, how many passed.
    pub passed: u64,
    /// Of them, how many failed.
    pub failed: u64,
    /// Outcomes summed over this shard's seeds.
    pub totals: Outcomes,
    /// Distinct event orders among this shard's seeds.
    pub distinct_traces: u64,
    /// Distinct event streams with their times among this shard's seeds.
    pub distinct_timings: u64,
    /// Seconds of wall time this shard took.
    pub wall_s: f64,
    /// SHA-256 of every line above this one, newlines included.
    pub lines_sha256: String,
    /// The scenario file's text, verbatim: `merge` parses it again, so it needs
    /// no copy of the file.
    pub scenario_text: String,
}

/// One line of a shard file.
#[derive(Debug, Serialize, Deserialize)]
pub enum Line {
    /// A seed's result.
    #[serde(rename = "run")]
    Run(SeedRecord),
    /// The closing line.
    #[serde(rename = "shard")]
    End(ShardEnd),
}

/// Why a shard could not write its file (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    /// The executable could not be read to identify the build.
    #[error("cannot identify the build: cannot read the executable {path}: {error}")]
    Build {
        /// The executable.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// The output could not be written.
    #[error("cannot write the shard output to {path}: {error}")]
    Write {
        /// The output.
        path: String,
        /// Why.
        error: std::io::Error,
    },
}

/// SHA-256 in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The build's identity: SHA-256 of the running executable's bytes. The version
/// alone does not do: two builds of one version from different code (a branch, a
/// local edit) may run a seed differently, and their shards must not be merged.
pub fn build_id() -> Result<String, ShardError> {
    let failed = |path: &Path, error| ShardError::Build {
        path: path.display().to_string(),
        error,
    };
    let path = std::env::current_exe().map_err(|e| failed(Path::new("(current executable)"), e))?;
    let mut file = File::open(&path).map_err(|e| failed(&path, e))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buffer).map_err(|e| failed(&path, e))?;
        if n == 0 {
            return Ok(hex(&hasher.finalize()));
        }
        hasher.update(&buffer[..n]);
    }
}

/// Runs this process's shard of the sweep (`options.shard`) and writes its JSON
/// Lines to `out`; returns the shard's own report. `text` is the scenario file's
/// text, `scenario` what it parsed to. The build is identified and `out` created
/// before any seed runs, so a bad path fails at once.
pub fn sweep_to_file(
    scenario: &Scenario,
    text: &str,
    options: &SweepOptions,
    out: &Path,
    progress: impl Fn(u64),
) -> Result<SweepReport, ShardError> {
    let build = build_id()?;
    let failed = |error| ShardError::Write {
        path: out.display().to_string(),
        error,
    };
    let mut writer = BufWriter::new(File::create(out).map_err(failed)?);
    let scenario = sweep::swept(scenario, options);
    let (mut lines, mut fold, mut written) = (Sha256::new(), sweep::Fold::default(), Ok(()));
    let wall_s = sweep::run_seeds(&scenario, options, progress, |seed, result| {
        let line = json_line(&Line::Run(SeedRecord::new(seed, &result)));
        lines.update(line.as_bytes());
        if written.is_ok() {
            written = writer.write_all(line.as_bytes());
        }
        fold.add(seed, &result);
    });
    written.map_err(failed)?;
    let report = fold.report(&scenario, options, wall_s);
    let end = ShardEnd {
        asksim: env!("CARGO_PKG_VERSION").to_owned(),
        build,
        scenario: report.scenario.clone(),
        scenario_file: options.file.clone(),
        scenario_sha256: sha256_hex(text.as_bytes()),
        seeds: options.seeds.into(),
        shard: options.shard,
        explore: report.explore.clone(),
        clock: options.clock.as_str().to_owned(),
        invariants_only: options.invariants_only,
        broker_cmd: options.broker.as_ref().map(crate::wire::Endpoint::shell_text),
        runs: report.runs,
        passed: report.passed,
        failed: report.failed.len() as u64,
        totals: report.totals.clone(),
        distinct_traces: report.distinct_traces,
        distinct_timings: report.distinct_timings,
        wall_s: report.wall_s,
        lines_sha256: hex(&lines.finalize()),
        scenario_text: text.to_owned(),
    };
    let line = json_line(&Line::End(end));
    writer.write_all(line.as_bytes()).map_err(failed)?;
    writer
        .into_inner()
        .map_err(|e| failed(e.into_error()))?
        .sync_all()
        .map_err(failed)?;
    Ok(report)
}

fn json_line(line: &Line) -> String {
    let mut text = serde_json::to_string(line).expect("a shard line serialises");
    text.push('\n');
    text
}
