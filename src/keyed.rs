//! A map by name or callId: found in O(1) as events come, read in key order.
//!
//! The projection looks a question up by callId, and an agent by name, at
//! nearly every event. In a B-tree that is O(log n) string comparisons per
//! lookup (at 10^5 questions, a tenth of a run's time went to `memcmp`), so the
//! per-event cost grew with the run (SPEC §6 "Cost"). Here lookups, inserts and
//! removals hash the key once (rustc-hash), and every read in order (`iter`,
//! `keys`, `values`, `&map` in a `for`, serialisation) sorts the keys first:
//! nothing iterates the hash table's own order, so nothing of it reaches output.
//! Those reads are what a run's end, a restart or a report does, never a
//! per-event path.

use std::collections::BTreeMap;
use std::fmt;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::protocol::Text;

/// A map by [`Text`] key: hashed for lookups, sorted for every ordered read.
#[derive(Clone, PartialEq)]
pub struct Keyed<V>(FxHashMap<Text, V>);

impl<V> Default for Keyed<V> {
    fn default() -> Self {
        Keyed(FxHashMap::default())
    }
}

impl<V> Keyed<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty map with room for `n` entries: one built from a count it
    /// knows grows by no rehash (at 10^5 each rehash moved every entry to a
    /// place in a table no longer in the cache).
    pub fn with_capacity(n: usize) -> Self {
        Keyed(FxHashMap::with_capacity_and_hasher(n, Default::default()))
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.0.get(key)
    }

    /// The value of `key`, to change.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.0.get_mut(key)
    }

    /// The stored key (shared, not copied) and value of `key`.
    pub fn get_key_value(&self, key: &str) -> Option<(&Text, &V)> {
        self.0.get_key_value(key)
    }

    /// Whether `key` is in it.
    pub fn contains_key(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// Puts `value` under `key`; the value it replaced, if any.
    pub fn insert(&mut self, key: Text, value: V) -> Option<V> {
        self.0.insert(key, value)
    }

    /// Takes `key` out.
    pub fn remove(&mut self, key: &str) -> Option<V> {
        self.0.remove(key)
    }

    /// Empties it.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Every entry, in key order (sorts: O(n log n)).
    pub fn iter(&self) -> std::vec::IntoIter<(&Text, &V)> {
        in_key_order(self.0.iter(), |(key, _)| key).into_iter()
    }

    /// Every entry, in key order, to change.
    pub fn iter_mut(&mut self) -> std::vec::IntoIter<(&Text, &mut V)> {
        in_key_order(self.0.iter_mut(), |(key, _)| key).into_iter()
    }

    /// Every key, in order.
    pub fn keys(&self) -> impl Iterator<Item = &Text> {
        self.iter().map(|(k, _)| k)
    }

    /// Every value, in key order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }

    /// Every key in no particular order, without the sort: as
    /// [`Keyed::values_unordered`], never let the order reach output.
    pub fn keys_unordered(&self) -> impl Iterator<Item = &Text> {
        self.0.keys()
    }

    /// Every value in no particular order, without the sort: only for a fold
    /// whose result cannot depend on the order (a count, integer samples sorted
    /// afterwards). The order is the hash table's, fixed for a given build and
    /// run, but not the key order: never let it reach output.
    pub fn values_unordered(&self) -> impl Iterator<Item = &V> {
        self.0.values()
    }
}

impl<V> std::ops::Index<&str> for Keyed<V> {
    type Output = V;

    fn index(&self, key: &str) -> &V {
        self.get(key).unwrap_or_else(|| panic!("no entry {key:?}"))
    }
}

impl<'a, V> IntoIterator for &'a Keyed<V> {
    type Item = (&'a Text, &'a V);
    type IntoIter = std::vec::IntoIter<(&'a Text, &'a V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<V> FromIterator<(Text, V)> for Keyed<V> {
    fn from_iter<I: IntoIterator<Item = (Text, V)>>(entries: I) -> Self {
        Keyed(entries.into_iter().collect())
    }
}

impl<V: fmt::Debug> fmt::Debug for Keyed<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<V: Serialize> Serialize for Keyed<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Keyed<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let entries = BTreeMap::<Text, V>::deserialize(deserializer)?;
        Ok(entries.into_iter().collect())
    }
}

/// A set of [`Text`] keys: hashed for membership, sorted for every ordered read.
#[derive(Clone, Default, PartialEq)]
pub struct KeyedSet(FxHashSet<Text>);

impl KeyedSet {
    /// Adds `key`.
    pub fn insert(&mut self, key: Text) -> bool {
        self.0.insert(key)
    }

    /// Takes `key` out.
    pub fn remove(&mut self, key: &str) -> bool {
        self.0.remove(key)
    }

    /// Every key, in order (sorts: O(n log n)).
    pub fn iter(&self) -> std::vec::IntoIter<&Text> {
        in_key_order(self.0.iter(), |key| key).into_iter()
    }
}

/// `items` sorted by the key `key` reads from each, in the keys' string order.
///
/// A comparison of two keys reads both where the table keeps them, and in a
/// table of 10^5 that is a cache miss a comparison: the sorts of a restart's
/// plan in the loss family at 10^5 (`restart::plan`) waited in `memcmp`. Here
/// each key's first 16 bytes are read once, into a number beside its item
/// whose order is theirs (zero-padded, big-endian), and the sort compares
/// those numbers; only keys whose first 16 bytes are the same are compared
/// whole. Zero padding keeps the order: a key that is a prefix of another pads
/// with zeros, which no byte is below, and two prefixes that pad alike are
/// compared whole. 200,000 questions read in callId order: 8.9 ms, against
/// 24.6 ms sorted the plain way (`projection_order` in
/// `benches/projection.rs`). The sorted items are moved out of their
/// decorated list into a list of their own, which the bench's time includes.
fn in_key_order<T>(items: impl Iterator<Item = T>, key: impl Fn(&T) -> &Text) -> Vec<T> {
    let mut decorated: Vec<(u128, T)> = items.map(|item| (head(key(&item)), item)).collect();
    decorated
        .sort_unstable_by(|(a_head, a), (b_head, b)| a_head.cmp(b_head).then_with(|| key(a).cmp(key(b))));
    decorated.into_iter().map(|(_, item)| item).collect()
}

/// The first 16 bytes of `key`, zero-padded, as a big-endian number: ordered
/// as the bytes are.
fn head(key: &str) -> u128 {
    let bytes = key.as_bytes();
    let mut head = [0u8; 16];
    let n = bytes.len().min(head.len());
    head[..n].copy_from_slice(&bytes[..n]);
    u128::from_be_bytes(head)
}

impl FromIterator<Text> for KeyedSet {
    fn from_iter<I: IntoIterator<Item = Text>>(keys: I) -> Self {
        KeyedSet(keys.into_iter().collect())
    }
}

impl fmt::Debug for KeyedSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_of_heads_then_whole_keys_is_the_string_order() {
        // Keys that tie on their first 16 bytes, prefixes of one another, with
        // a NUL (which pads alike), bytes past ASCII, the empty key.
        let keys = [
            "root-10/1",
            "root-1/1",
            "root-1",
            "root-1\0",
            "",
            "\0",
            "a-very-long-agent-name/2",
            "a-very-long-agent-name/10",
            "a-very-long-agent-nam",
            "a-very-long-agent-name",
            "é",
            "z",
            "zz\u{7f}",
            "zz\u{80}",
        ];
        let set: KeyedSet = keys.iter().map(|k| Text::from(*k)).collect();
        let mut expected: Vec<&str> = keys.to_vec();
        expected.sort_unstable();
        let got: Vec<&str> = set.iter().map(|k| k.as_str()).collect();
        assert_eq!(got, expected);
        let map: Keyed<usize> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (Text::from(*k), i))
            .collect();
        let got: Vec<&str> = map.keys().map(|k| k.as_str()).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn every_ordered_read_is_in_key_order_whatever_the_insertion_order() {
        let keys = ["root-9/1", "root-10/1", "a", "root-1/12", "root-1/2", "zz", "b/1"];
        let mut map = Keyed::new();
        for (i, k) in keys.iter().enumerate() {
            map.insert(Text::from(*k), i);
        }
        let mut sorted: Vec<&str> = keys.to_vec();
        sorted.sort_unstable();
        let read: Vec<&str> = map.keys().map(|k| k.as_str()).collect();
        assert_eq!(read, sorted);
        let by_for: Vec<&str> = (&map).into_iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(by_for, sorted);
        let values: Vec<usize> = map.values().copied().collect();
        let expected: Vec<usize> = sorted
            .iter()
            .map(|k| keys.iter().position(|x| x == k).expect("inserted"))
            .collect();
        assert_eq!(values, expected);
        // Serialised and printed in key order too, and read back equal.
        let text = serde_json::to_string(&map).expect("serialises");
        let order: Vec<usize> = sorted
            .iter()
            .map(|k| text.find(&format!("\"{k}\"")).expect("key"))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
        let back: Keyed<usize> = serde_json::from_str(&text).expect("deserialises");
        assert_eq!(back, map);
        assert!(format!("{map:?}").starts_with("{\"a\": 2, \"b/1\": 6"));
    }

    #[test]
    fn lookups_and_removals_by_str() {
        let mut map: Keyed<u32> = [("x/1".into(), 1), ("x/2".into(), 2)].into_iter().collect();
        assert_eq!(map.get("x/1"), Some(&1));
        *map.get_mut("x/2").expect("there") += 40;
        assert_eq!(map["x/2"], 42);
        assert!(map.contains_key("x/1"));
        assert_eq!(map.get_key_value("x/1").map(|(k, _)| k.as_str()), Some("x/1"));
        assert_eq!(map.remove("x/1"), Some(1));
        assert_eq!(map.len(), 1);
        map.clear();
        assert!(map.is_empty());

        let mut set: KeyedSet = ["b".into(), "a".into()].into_iter().collect();
        assert!(set.insert("c".into()));
        assert!(!set.insert("a".into()));
        assert!(set.remove("b"));
        assert_eq!(set.iter().map(|k| k.as_str()).collect::<Vec<_>>(), ["a", "c"]);
    }
}
