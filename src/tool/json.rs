//! [`Json`]: the JSON tree the timed tool's walk reads, borrowed from the
//! arguments text.
//!
//! serde_json's `Value` (with `preserve_order`, as this crate builds it) gives
//! every object an `IndexMap` (two allocations and a SipHash per key) and every
//! string its own `String`, all to be thrown away once the walk has copied what
//! it keeps into a [`super::Question`]. This tree borrows every string it can
//! from the text and keeps an object's fields as a list in document order: about
//! a fifth of the allocations for the same arguments (BENCHMARKS.md, issue #23).
//!
//! It refuses what `Value` would read differently: an object with a repeated
//! key (`Value` keeps the last value at the first key's place) or with
//! serde_json's private raw-value key. A caller that
//! gets any error here falls back on `Value`, so what the model reads for any
//! input is what the walk over `Value` gave.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// One JSON value. Numbers are only ever named in messages here (the timeout,
/// the one number the tool reads, is read as a `Value`), so they carry nothing.
#[derive(Debug, PartialEq)]
pub(crate) enum Json<'a> {
    Null,
    Bool(bool),
    Number,
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    /// Fields in document order, no key twice.
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

/// The fields of an object, in document order.
pub(crate) type Fields<'a> = [(Cow<'a, str>, Json<'a>)];

/// The key by which serde_json's `Value` (with `raw_value`) reads an object
/// whose first key it is as the JSON text of its value, not as an object.
const VALUE_RAW_KEY: &str = "$serde_json::private::RawValue";

/// Fields a question or an option has at most (`id`, `question`, `header`,
/// `options`, `multiSelect`): room for them at once, as a list grown from empty
/// would take two allocations for four fields.
const FIELDS_EXPECTED: usize = 5;

impl<'a> Json<'a> {
    /// The JSON type, for messages (the same words as [`super::walk::kind`]).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }

    /// The same value, its strings borrowed from `value`.
    pub(crate) fn of(value: &'a Value) -> Json<'a> {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(_) => Json::Number,
            Value::String(s) => Json::String(Cow::Borrowed(s)),
            Value::Array(items) => Json::Array(items.iter().map(Json::of).collect()),
            Value::Object(map) => Json::Object(
                map.iter()
                    .map(|(key, value)| (Cow::Borrowed(key.as_str()), Json::of(value)))
                    .collect(),
            ),
        }
    }

    /// How many arrays and objects deep it goes (0 for a scalar).
    pub(crate) fn depth(&self) -> usize {
        match self {
            Json::Array(items) => 1 + items.iter().map(Json::depth).max().unwrap_or(0),
            Json::Object(fields) => 1 + fields.iter().map(|(_, v)| v.depth()).max().unwrap_or(0),
            _ => 0,
        }
    }
}

/// The value of `key` among `fields`.
pub(crate) fn field<'f, 'a>(fields: &'f Fields<'a>, key: &str) -> Option<&'f Json<'a>> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

/// An object's key, borrowed from the text unless it holds an escape.
pub(crate) struct Key<'a>(pub Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Json<'de>, E> {
        Ok(Json::Number)
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s.to_owned())))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut fields: Vec<(Cow<'de, str>, Json<'de>)> = Vec::with_capacity(FIELDS_EXPECTED);
        while let Some(Key(key)) = map.next_key()? {
            if key == VALUE_RAW_KEY || fields.iter().any(|(seen, _)| *seen == key) {
                return Err(de::Error::custom("read differently by Value"));
            }
            let value = map.next_value()?;
            fields.push((key, value));
        }
        Ok(Json::Object(fields))
    }
}
