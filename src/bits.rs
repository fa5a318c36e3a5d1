//! Bitmaps kept as `u64` words: the ready set's live entries, the removed keys
//! of a set that is appended to.

/// The word of a bitmap that holds place `at`, and its bit there.
pub(crate) fn bit(at: usize) -> (usize, u64) {
    (at / 64, 1 << (at % 64))
}
