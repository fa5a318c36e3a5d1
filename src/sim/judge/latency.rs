//! Latency figures of a run (SPEC §6 `latency_s`, and `lateness_s`): call start
//! to settlement, and how late each `pending` came past its window, as p50, p99
//! and max by an HDR histogram's rule.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::projection::Projection;
use crate::tool::ResultKind;

/// Seconds from a call's start to its settlement.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// The largest sample a histogram takes: about 115 days in microseconds, every
/// time a run's limits allow.
const SAMPLE_US_MAX: u64 = 10_000_000_000_000;

/// Microseconds from seconds, as a histogram records them.
fn micros(seconds: f64) -> u64 {
    ((seconds.max(0.0) * 1e6) as u64).min(SAMPLE_US_MAX)
}

/// p50, p99 and max of samples in microseconds, as an HDR histogram with three
/// significant figures reports them: the histogram's quantile is the highest value
/// equivalent to the sample at rank `max(1, ceil(q * n))`, so the samples are
/// sorted and that rule applied directly, with the histogram only for its bucket
/// arithmetic. The same figures as recording them all and reading quantiles,
/// without walking every bucket of the range per quantile (which took a third of
/// a small sweep's time).
fn percentiles(samples: &mut [u64]) -> LatencySummary {
    if samples.is_empty() {
        return LatencySummary::default();
    }
    samples.sort_unstable();
    let h = Histogram::<u64>::new_with_bounds(1, 2, 3).expect("valid histogram bounds");
    let n = samples.len();
    let seconds = |value: u64| h.highest_equivalent(value) as f64 / 1e6;
    let at = |q: f64| {
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
        seconds(samples[rank - 1])
    };
    LatencySummary {
        p50: at(0.5),
        p99: at(0.99),
        max: seconds(samples[n - 1]),
    }
}

/// From each call's start to its first tool result.
pub fn latency(projection: &Projection) -> LatencySummary {
    let mut samples = Vec::with_capacity(projection.questions.len() + projection.rejected.len());
    // Integer samples, sorted below: the order they are gathered in is not read.
    for question in projection.questions.values_unordered() {
        if let Some((_, t)) = question.first {
            samples.push(micros(t - question.requested_t));
        }
    }
    samples.extend(projection.rejected.values().map(|_| 0));
    percentiles(&mut samples)
}

/// For every call that returned `pending`: how long after its window's end.
pub fn lateness(projection: &Projection) -> LatencySummary {
    let mut samples = Vec::new();
    for question in projection.questions.values_unordered() {
        if let (Some((ResultKind::Pending, t)), Some(w)) = (question.first, question.window_s())
            && w > 0.0
        {
            samples.push(micros(t - (question.requested_t + w)));
        }
    }
    percentiles(&mut samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures of a histogram that recorded every sample and read its
    /// quantiles, as the report computed them before.
    fn by_histogram(samples: &[u64]) -> LatencySummary {
        let mut h = Histogram::<u64>::new_with_bounds(1, SAMPLE_US_MAX, 3).unwrap();
        for &s in samples {
            h.saturating_record(s);
        }
        let seconds = |q: f64| h.value_at_quantile(q) as f64 / 1e6;
        LatencySummary {
            p50: seconds(0.5),
            p99: seconds(0.99),
            max: h.max() as f64 / 1e6,
        }
    }

    #[test]
    fn percentiles_equal_those_of_a_histogram_holding_every_sample() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut sets: Vec<Vec<u64>> = vec![vec![0], vec![0, 0, 5], vec![1, 2, 3], vec![SAMPLE_US_MAX, 3]];
        for n in [1usize, 2, 99, 100, 101, 1000, 4321] {
            let set = (0..n)
                .map(|_| match rng.gen_range(0..4) {
                    0 => 0,
                    1 => rng.gen_range(0..2_048),
                    2 => rng.gen_range(0..100_000_000),
                    _ => rng.gen_range(0..SAMPLE_US_MAX),
                })
                .collect();
            sets.push(set);
        }
        for set in sets {
            let expected = by_histogram(&set);
            let got = percentiles(&mut set.clone());
            assert_eq!(
                (got.p50, got.p99, got.max),
                (expected.p50, expected.p99, expected.max),
                "{} samples",
                set.len()
            );
        }
        let none = percentiles(&mut []);
        assert_eq!((none.p50, none.p99, none.max), (0.0, 0.0, 0.0));
    }
}
