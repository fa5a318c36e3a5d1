//! The run's one seed and the streams derived from it: every random draw of a
//! run (answerer latencies, jitter, the scheduler's choices) comes from a stream
//! of the run's seed, so the same seed replays the same run.

/// The stream of answerer `index` (0-based): its latencies.
pub fn answerer_stream(seed: u64, index: usize) -> u64 {
    derive_seed(seed, 1 + index as u64)
}

/// The stream of message jitter.
pub fn jitter_stream(seed: u64) -> u64 {
    derive_seed(seed, 0)
}

/// A stream seed from the run's seed: SplitMix64 over the pair, so streams of
/// nearby seeds or numbers do not overlap.
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed
        ^ stream
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(0x632B_E59B_D9B4_E019);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
