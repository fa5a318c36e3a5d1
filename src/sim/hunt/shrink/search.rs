//! The search: delta debugging (Zeller's ddmin) over every list of the scenario,
//! to a fixed point, then a pass that proves 1-minimality.
//!
//! Every candidate is the current scenario less some elements (and what named
//! them, [`lists::repair`]); it is serialised, parsed like any file (an invalid one
//! is skipped) and run under the same seed and strategy on the virtual clock. It
//! replaces the current scenario only when it fails the same way
//! ([`super::signature`]). Runs are deterministic, so each distinct candidate text
//! is run once (a memo by SHA-256); the proving pass mostly re-reads that memo.
//!
//! The only wall-clock decision is the time bound: checked before each run (a run
//! under way finishes), and once it is hit every further candidate counts as not
//! failing, so the search stops with the smallest failing scenario found so far.

use std::collections::HashMap;
use std::time::Instant;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Progress;
use super::lists::{self, List, Seg, Tally};
use super::signature::{Failure, Signature, signature};
use crate::record::Hashes;
use crate::scenario::{self, Clock, Strategy};
use crate::sim::engine::driver::RunOptions;
use crate::sim::judge::judged;
use crate::sim::judge::summary::summarise;

/// Most passes over every list; each pass that changes nothing ends the search long
/// before, since every accepted candidate is strictly smaller.
const PASSES_MAX: u32 = 10_000;
/// Most times `jitter.max` is halved in one search: enough to go from a second to
/// under a microsecond.
const HALVINGS_MAX: u32 = 24;
/// The optional top-level keys the search tries to remove, and those of `limits`.
const KEYS: [&str; 3] = ["about", "jitter", "limits"];
const LIMIT_KEYS: [&str; 2] = ["virtual_s_max", "events_max"];

/// How a search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// Removing any one remaining element no longer fails the same way.
    Minimal,
    /// The time bound was hit first.
    OutOfTime,
    /// [`PASSES_MAX`] passes went by (never seen: each pass that changes nothing
    /// ends the search).
    PassesMax,
}

/// What runs a candidate: the file label, the seed, the strategy, the program's
/// own answerers.
pub(super) struct Runner<'a> {
    pub label: &'a str,
    pub seed: u64,
    pub strategy: Strategy,
    pub answerers: &'a crate::answerer::Answerers,
    pub broker: Option<&'a crate::wire::Endpoint>,
}

impl Runner<'_> {
    /// The failure signature of the scenario in `text`; `None` when it is not a
    /// valid scenario (or, never on the virtual clock without a log, cannot run).
    pub(super) fn signature(&self, text: &str) -> Option<Signature> {
        let scenario = scenario::parse(self.label, text).ok()?;
        self.run(&scenario)
    }

    /// The failure signature of a run of `scenario`.
    pub(super) fn run(&self, scenario: &scenario::Scenario) -> Option<Signature> {
        let options = RunOptions {
            seed: self.seed,
            clock: Clock::Virtual,
            strategy: self.strategy,
            keep_events: false,
            log: None,
            taps: Vec::new(),
            broker: self.broker.cloned(),
            answerers: self.answerers.clone(),
            journal_after: None,
            hashes: Hashes::TraceAndOrder,
        };
        let output = judged::run_options(scenario, options).ok()?;
        let summary = summarise(scenario, self.label, &output);
        Some(signature(&summary, output.projection()))
    }
}

pub(super) struct Search<'a> {
    runner: Runner<'a>,
    primary: Failure,
    /// The smallest scenario found so far that fails the same way.
    pub current: Value,
    /// Candidates tried: run, or ruled out by their file alone
    /// ([`Search::may_fail`]); memo hits not counted.
    pub runs: u64,
    memo: HashMap<[u8; 32], bool>,
    deadline: Option<Instant>,
    out_of_time: bool,
    halvings: u32,
    elements_start: usize,
    progress: &'a mut dyn FnMut(Progress),
}

impl<'a> Search<'a> {
    /// A search from `start`, which fails with `primary`, until `deadline` (`None`:
    /// the bound could not be represented, so there is none).
    pub(super) fn new(
        runner: Runner<'a>,
        primary: Failure,
        start: Value,
        deadline: Option<Instant>,
        progress: &'a mut dyn FnMut(Progress),
    ) -> Search<'a> {
        Search {
            runner,
            primary,
            elements_start: Tally::of(&start).total(),
            current: start,
            runs: 0,
            memo: HashMap::new(),
            deadline,
            out_of_time: false,
            halvings: 0,
            progress,
        }
    }

    /// Shrinks to a fixed point, then proves 1-minimality (or runs out of time).
    pub(super) fn minimise(&mut self) -> End {
        self.report();
        for _ in 0..PASSES_MAX {
            let changed = self.pass();
            if self.out_of_time {
                return End::OutOfTime;
            }
            if !changed && self.certify() {
                return End::Minimal;
            }
            if self.out_of_time {
                return End::OutOfTime;
            }
        }
        End::PassesMax
    }

    /// One pass: ddmin over every list, then the optional keys. Whether anything
    /// was removed.
    fn pass(&mut self) -> bool {
        let mut changed = false;
        // Lists are found again after each removal: it shifts the paths of the
        // lists after it (and repairs may shorten earlier ones; the next pass sees
        // those).
        let mut all = lists::lists(&self.current);
        let mut k = 0;
        while let Some(list) = all.get(k).cloned() {
            if self.ddmin(&list) {
                changed = true;
                all = lists::lists(&self.current);
            }
            if self.out_of_time {
                return changed;
            }
            k += 1;
        }
        changed | self.simplify_keys()
    }

    /// Whether the candidate fails the same way as the original; memoised.
    fn fails(&mut self, candidate: &Value) -> bool {
        let Ok(text) = serde_json::to_string(candidate) else {
            return false;
        };
        let key: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        if let Some(&verdict) = self.memo.get(&key) {
            return verdict;
        }
        if self.out_of_time || self.deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            self.out_of_time = true;
            return false;
        }
        self.runs += 1;
        let verdict = match scenario::parse(self.runner.label, &text) {
            Ok(scenario) if self.may_fail(&scenario) => {
                (self.runner.run(&scenario)).is_some_and(|signature| signature.contains(&self.primary))
            }
            _ => false,
        };
        self.memo.insert(key, verdict);
        self.report();
        verdict
    }

    /// Whether `candidate` can fail the same way at all, as its file shows: a
    /// `counts` failure needs every call that made the count differ, so a
    /// candidate whose agents can no longer make one of them (the agent is gone,
    /// or makes fewer calls: the rule of `cancel_call` references) would only run
    /// to be rejected. A load whose count is off by one holds thousands of such
    /// calls, and each such candidate was a run of the whole load.
    fn may_fail(&self, candidate: &scenario::Scenario) -> bool {
        match &self.primary {
            Failure::Count { calls, .. } => {
                let reach = scenario::Reach::of(candidate);
                calls.keys().all(|call| reach.can_exist(call))
            }
            _ => true,
        }
    }

    /// Makes `candidate` current if it fails the same way.
    fn accept(&mut self, candidate: Option<Value>) -> bool {
        let Some(candidate) = candidate else { return false };
        if candidate == self.current || !self.fails(&candidate) {
            return false;
        }
        self.current = candidate;
        self.report();
        true
    }

    fn report(&mut self) {
        let progress = Progress {
            runs: self.runs,
            elements: Tally::of(&self.current).total(),
            elements_start: self.elements_start,
        };
        (self.progress)(progress);
    }

    /// Keeps only the elements of the list at `path` that `keep` says.
    fn try_keep(&mut self, path: &[Seg], keep: impl Fn(usize) -> bool) -> bool {
        let candidate = lists::keep(&self.current, path, keep);
        self.accept(candidate)
    }

    /// ddmin over one list: the whole list first (often none of it is needed),
    /// then chunks alone and complements at doubling granularity. Never tries a
    /// list shorter than its minimum. Whether anything was removed.
    fn ddmin(&mut self, list: &List) -> bool {
        let len_min = list.len_min;
        let Some(len) = lists::len_at(&self.current, &list.path) else {
            return false;
        };
        if len_min == 0 && len > 0 && self.try_keep(&list.path, |_| false) {
            return true;
        }
        let mut changed = false;
        let mut n = 2;
        // Each round removes an element or doubles n; at most log2(len) + 1
        // doublings come between two removals.
        let rounds_max = len.saturating_mul(usize::BITS as usize + 1).saturating_add(1);
        for _ in 0..rounds_max {
            let Some(len) = lists::len_at(&self.current, &list.path) else {
                break;
            };
            if len < 2 || len <= len_min || self.out_of_time {
                break;
            }
            let n_now = n.min(len);
            let chunks = split(len, n_now);
            if let Some(next_n) = self.ddmin_round(list, len, &chunks) {
                changed = true;
                n = next_n;
                continue;
            }
            if n_now >= len {
                break;
            }
            n = (2 * n_now).min(len);
        }
        changed
    }

    /// One ddmin round at `chunks.len()` chunks: a chunk alone, else a
    /// complement. The next granularity when one failed the same way.
    fn ddmin_round(&mut self, list: &List, len: usize, chunks: &[(usize, usize)]) -> Option<usize> {
        for &(from, to) in chunks {
            let size = to - from;
            if size >= list.len_min && size < len && self.try_keep(&list.path, |i| (from..to).contains(&i)) {
                return Some(2);
            }
        }
        for &(from, to) in chunks {
            let size = to - from;
            if len - size >= list.len_min && self.try_keep(&list.path, |i| !(from..to).contains(&i)) {
                return Some(chunks.len().saturating_sub(1).max(2));
            }
        }
        None
    }

    /// Removes `about`, `jitter` (else halves `jitter.max`) and `limits` (else
    /// each of its keys), where that still fails the same way.
    fn simplify_keys(&mut self) -> bool {
        let mut changed = false;
        for key in KEYS {
            changed |= self.try_remove(&[key]);
        }
        while self.halvings < HALVINGS_MAX && !self.out_of_time {
            let Some(max) = self.current.pointer("/jitter/max").and_then(Value::as_f64) else {
                break;
            };
            let mut candidate = self.current.clone();
            if let Some(slot) = candidate.pointer_mut("/jitter/max") {
                *slot = Value::from(max / 2.0);
            }
            self.halvings += 1;
            if !(max > 0.0 && self.accept(Some(candidate))) {
                break;
            }
            changed = true;
        }
        for key in LIMIT_KEYS {
            changed |= self.try_remove(&["limits", key]);
        }
        changed
    }

    /// Removes the key at `path` (an object's keys, outermost first).
    fn try_remove(&mut self, path: &[&str]) -> bool {
        let Some((last, parents)) = path.split_last() else {
            return false;
        };
        let mut candidate = self.current.clone();
        let parent = parents
            .iter()
            .try_fold(&mut candidate, |value, key| value.get_mut(*key));
        let removed = parent
            .and_then(Value::as_object_mut)
            .and_then(|object| object.shift_remove(*last));
        removed.is_some() && self.accept(Some(candidate))
    }

    /// The proving pass: tries removing each remaining element and key alone.
    /// `true` when none of them fails the same way (the scenario is 1-minimal);
    /// `false` when one did (it is removed, and the search goes on).
    fn certify(&mut self) -> bool {
        for list in lists::lists(&self.current) {
            let len = lists::len_at(&self.current, &list.path).unwrap_or(0);
            for i in 0..len {
                if len > list.len_min && self.try_keep(&list.path, |j| j != i) {
                    return false;
                }
            }
        }
        let keys = KEYS.iter().map(|key| vec![*key]);
        let limit_keys = LIMIT_KEYS.iter().map(|key| vec!["limits", *key]);
        for path in keys.chain(limit_keys) {
            if self.try_remove(&path) {
                return false;
            }
        }
        !self.out_of_time
    }
}

/// `len` elements in `n` contiguous chunks of sizes within one of each other, as
/// half-open ranges.
fn split(len: usize, n: usize) -> Vec<(usize, usize)> {
    let n = n.clamp(1, len.max(1));
    (0..n).map(|k| (k * len / n, (k + 1) * len / n)).collect()
}
