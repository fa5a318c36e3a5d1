//! Which seeds a sweep runs: a range of seeds (`--seeds A..B`) and the share of it
//! one process of a sharded sweep takes (`--shard K/N`, issue #14). Sharded sweeps
//! split one range among N processes that never talk to each other (the pods of a
//! Kubernetes Indexed Job, the tasks of a Slurm job array): seeds need no
//! coordination, so the rule below is all the shards share.
//!
//! # The rule
//!
//! Shards count from 0: `--shard K/N` with `0 <= K < N` and `1 <= N <=`
//! [`SHARDS_MAX`]. The i-th seed of the range (seed `A + i` of `A..B`, i from 0)
//! belongs to shard `i mod N`: shard K runs `A+K, A+K+N, A+K+2N, …`, every seed is
//! in exactly one shard, and shard sizes differ by at most one (a shard may be
//! empty when N exceeds the number of seeds). cargo-nextest's `--partition
//! count:K/N` counts from 1; counting from 0 makes K the very index a cluster hands
//! the process (`JOB_COMPLETION_INDEX`, or `SLURM_ARRAY_TASK_ID` of an array
//! `--array=0-(N-1)`), so `shard-3.jsonl` holds shard 3/N with no arithmetic in
//! the job script. `auto/N` reads K from one of [`INDEX_VARIABLES`].
//!

use std::ffi::OsString;

use serde::{Deserialize, Serialize};

/// Most seeds one sweep runs.
pub const SEEDS_MAX: u64 = 10_000_000;
/// A range of seeds: `A..B` (B excluded) or `A..=B`, up to `u64::MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SeedRange {
    /// First seed.
    pub from: u64,
    /// One past the last seed (past `u64::MAX` for `A..=18446744073709551615`).
    pub to: u128,
}

impl SeedRange {
    /// How many seeds.
    pub fn len(&self) -> u64 {
        (self.to - u128::from(self.from)) as u64
    }

    /// Whether it holds none (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `index`-th seed.
    pub fn seed(&self, index: u64) -> u64 {
        self.from + index
    }
}

/// `A..B`, or `A..=18446744073709551615` for a range that ends at the last seed
/// (its end is past every u64): always a range `--seeds` takes back.
impl std::fmt::Display for SeedRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match u64::try_from(self.to) {
            Ok(to) => write!(f, "{}..{to}", self.from),
            Err(_) => write!(f, "{}..={}", self.from, u64::MAX),
        }
    }
}

impl std::str::FromStr for SeedRange {
    type Err = String;

    fn from_str(s: &str) -> Result<SeedRange, String> {
        let number = |n: &str| {
            n.trim()
                .parse::<u64>()
                .map_err(|e| format!("bad seed {n:?}: {e}"))
        };
        let (from, to) = if let Some((a, b)) = s.split_once("..=") {
            (number(a)?, u128::from(number(b)?) + 1)
        } else if let Some((a, b)) = s.split_once("..") {
            (number(a)?, u128::from(number(b)?))
        } else {
            return Err(format!("expected A..B or A..=B, got {s:?}"));
        };
        if u128::from(from) >= to {
            return Err(format!("the range {s:?} holds no seed"));
        }
        if to - u128::from(from) > u128::from(SEEDS_MAX) {
            return Err(format!("the range {s:?} holds more than {SEEDS_MAX} seeds"));
        }
        Ok(SeedRange { from, to })
    }
}

/// Most shards one sweep is split into. Far more than a useful split (a shard
/// should run thousands of seeds to pay for starting a process), and few enough
/// that `merge` takes every shard's file on one command line.
pub const SHARDS_MAX: u64 = 100_000;

/// Where `--shard auto/N` reads K, in this order: Kubernetes sets the first in
/// every pod of an Indexed Job (0-based), Slurm the second in every task of a job
/// array.
pub const INDEX_VARIABLES: [&str; 2] = ["JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"];

/// This process's share of a sweep's seeds: shard `index` of `count` (the rule is
/// in the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Shard {
    index: u64,
    count: u64,
}

impl Shard {
    /// The whole range: shard 0 of 1.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`; an error says what is out of range.
    pub fn new(index: u64, count: u64) -> Result<Shard, String> {
        if count == 0 || count > SHARDS_MAX {
            return Err(format!("N must be from 1 to {SHARDS_MAX}, got {count}"));
        }
        if index >= count {
            return Err(format!(
                "K must be below N (shards count from 0: 0/{count} to {}/{count}), got {index}/{count}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    /// K, from 0.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// N.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// How many seeds of `seeds` this shard runs: the indices `i < len` with
    /// `i mod N == K`.
    pub fn len(&self, seeds: SeedRange) -> u64 {
        let all = seeds.len();
        if self.index >= all {
            0
        } else {
            (all - 1 - self.index) / self.count + 1
        }
    }

    /// Whether this shard runs no seed of `seeds`.
    pub fn is_empty(&self, seeds: SeedRange) -> bool {
        self.len(seeds) == 0
    }

    /// The `nth` seed this shard runs (`nth < self.len(seeds)`): the seed at index
    /// `K + nth * N` of the range. Below `len`, that index is below the range's
    /// length, so nothing overflows.
    pub fn seed(&self, seeds: SeedRange, nth: u64) -> u64 {
        debug_assert!(
            nth < self.len(seeds),
            "seed {nth} of a shard of {}",
            self.len(seeds)
        );
        seeds.seed(self.index + nth * self.count)
    }

    /// Whether `seed` is one of `seeds` and falls to this shard.
    pub fn holds(&self, seeds: SeedRange, seed: u64) -> bool {
        seed >= seeds.from && u128::from(seed) < seeds.to && (seed - seeds.from) % self.count == self.index
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl From<Shard> for String {
    fn from(shard: Shard) -> String {
        shard.to_string()
    }
}

impl TryFrom<String> for Shard {
    type Error = String;

    fn try_from(text: String) -> Result<Shard, String> {
        match text.parse::<ShardArg>()? {
            ShardArg::Fixed(shard) => Ok(shard),
            ShardArg::Auto { .. } => Err(format!("expected K/N, got {text:?}")),
        }
    }
}

/// `--shard`: `K/N`, or `auto/N` (K from the environment, [`resolve`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardArg {
    /// `K/N`.
    Fixed(Shard),
    /// `auto/N`.
    Auto {
        /// N.
        count: u64,
    },
}

impl std::str::FromStr for ShardArg {
    type Err = String;

    fn from_str(s: &str) -> Result<ShardArg, String> {
        let Some((k, n)) = s.split_once('/') else {
            return Err(format!("expected K/N or auto/N, got {s:?}"));
        };
        let number = |text: &str, what: &str| {
            text.parse::<u64>()
                .map_err(|_| format!("{what} must be a whole number, got {text:?} in {s:?}"))
        };
        let count = number(n, "N")?;
        if k == "auto" {
            Shard::new(0, count)?;
            return Ok(ShardArg::Auto { count });
        }
        Shard::new(number(k, "K")?, count).map(ShardArg::Fixed)
    }
}

/// The shard a sweep runs: the whole range without `--shard`; with `auto/N`, K from
/// the first of [`INDEX_VARIABLES`] that `env` finds set. Also gives, for `auto`,
/// a note saying which variable it used. An unset, non-numeric or out-of-range
/// index is an error naming the variable.
pub fn resolve(
    arg: Option<ShardArg>,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<(Shard, Option<String>), String> {
    let count = match arg {
        None => return Ok((Shard::WHOLE, None)),
        Some(ShardArg::Fixed(shard)) => return Ok((shard, None)),
        Some(ShardArg::Auto { count }) => count,
    };
    let Some((name, value)) = INDEX_VARIABLES
        .iter()
        .find_map(|name| env(name).map(|v| (*name, v)))
    else {
        return Err(format!(
            "auto/{count} takes K from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) or \
             SLURM_ARRAY_TASK_ID (a Slurm job array), and neither is set"
        ));
    };
    let text = value.to_string_lossy();
    let Ok(index) = text.parse::<u64>() else {
        return Err(format!(
            "{name}={text:?} is not a shard index (a whole number from 0)"
        ));
    };
    let shard = Shard::new(index, count).map_err(|_| {
        format!(
            "{name}={index} is not a shard of {count}: shards count from 0 (a Slurm array must be --array=0-{})",
            count - 1
        )
    })?;
    Ok((shard, Some(format!("shard {shard} from {name}={index}"))))
}
