//! Texts the checker reads again and again, read once each: what a pure
//! reading of a text gives, kept by the text.
//!
//! The checker reads a call's questions at each delivery that answers it, and
//! an answers result's text to judge it; each is a JSON parse of a few hundred
//! bytes, ~3,600 instructions for a question and its options. A load's calls
//! mostly share both: the copies of a `count` row or a `repeat` ask the same
//! questions, and one answerer's policy gives them the same answers, so the
//! same texts are parsed over and over (on `load-mixed-30k`, a tenth of what
//! recording executes beside the SHA-256: BENCHMARKS.md, issue #19,
//! forty-third session). A reading kept by its text answers the next one with
//! a hash of the text and a comparison.
//!
//! Only what is a function of the text alone is kept, so a kept reading is the
//! one the text would give again: nothing the checker concludes changes.
//! At most [`MOST`] texts are kept; past it they are all dropped and kept
//! again as they come (a load whose every call asks its own questions pays a
//! hash and a copy a reading, and holds no more than `MOST` of them).

use std::sync::Arc;

use rustc_hash::FxHashMap;

/// The most texts a [`Reread`] keeps.
pub const MOST: usize = 256;

/// Readings of texts, by the text.
pub struct Reread<V> {
    by_text: FxHashMap<Box<str>, Arc<V>>,
}

impl<V> Default for Reread<V> {
    fn default() -> Self {
        Reread {
            by_text: FxHashMap::default(),
        }
    }
}

impl<V> Reread<V> {
    /// The reading of `text`: the one kept, or `read(text)`, kept. `read` must
    /// be a function of the text alone.
    pub fn read(&mut self, text: &str, read: impl FnOnce(&str) -> V) -> Arc<V> {
        if let Some(kept) = self.by_text.get(text) {
            return Arc::clone(kept);
        }
        if self.by_text.len() >= MOST {
            self.by_text = FxHashMap::default();
        }
        let reading = Arc::new(read(text));
        self.by_text.insert(text.into(), Arc::clone(&reading));
        reading
    }

    /// How many texts it keeps.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.by_text.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text is read once while kept; the reading is the text's own; past
    /// `MOST` texts the store starts again and never holds more.
    #[test]
    fn a_text_is_read_once_and_the_store_stays_bounded() {
        let mut reread = Reread::default();
        let reads = std::cell::Cell::new(0);
        let length = |text: &str| {
            reads.set(reads.get() + 1);
            text.len()
        };
        assert_eq!(*reread.read("abc", length), 3);
        assert_eq!(*reread.read("abc", length), 3);
        assert_eq!(*reread.read("abcd", length), 4);
        assert_eq!(reads.get(), 2);
        for i in 0..3 * MOST {
            let text = format!("t{i}");
            assert_eq!(*reread.read(&text, length), text.len());
            assert!(reread.kept() <= MOST);
        }
        assert_eq!(reads.get(), 2 + 3 * MOST);
        // Dropped with the rest once the store started again: read anew.
        assert_eq!(*reread.read("abc", length), 3);
        assert_eq!(reads.get(), 3 + 3 * MOST);
    }
}
