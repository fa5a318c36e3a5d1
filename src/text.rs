//! [`Text`]: an immutable string held in place when short and shared when
//! long, the type of every name and callId the actors, events and records
//! carry.

use ecow::EcoString;

/// An immutable string: names and callIds travel in every message and event
/// and key the tables of every actor and observer. Up to 15 bytes (`root-4711`,
/// `root-4711/2`, nearly every name and callId) it is held in its own 16 bytes,
/// so a clone is a copy, a drop does nothing and a hash or a comparison reads
/// no other memory; a longer one is shared, and a clone is a reference count.
///
/// It was an `Arc<str>`: at a tree of 10^5 agents each clone and drop of a
/// name (the agent's, the broker's, the judge's tables, its final result)
/// touched its allocation's count long after the cache had let it go, and each
/// table keyed by names read them again to hash and compare at every growth
/// (BENCHMARKS.md, issue #19).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Text(EcoString);

impl Text {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text `args` write (`Text::format(format_args!(…))`), written
    /// straight into the text: with no allocation when it is held in place
    /// (15 bytes), where `format!(…).into()` made a `String` and then copied
    /// it. A callId is made so for every call.
    pub fn format(args: std::fmt::Arguments<'_>) -> Text {
        if let Some(text) = args.as_str() {
            return Text::from(text);
        }
        let mut text = EcoString::new();
        std::fmt::Write::write_fmt(&mut text, args).expect("writing to a string never fails");
        Text(text)
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Text {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Text {
        Text(EcoString::from(text))
    }
}

impl From<String> for Text {
    fn from(text: String) -> Text {
        Text(EcoString::from(text))
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl serde::Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
        String::deserialize(deserializer).map(Text::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Short or long, constant or not, the text is what `format!` writes.
    #[test]
    fn a_formatted_text_is_what_format_writes() {
        let long = "n".repeat(64);
        for name in [
            "root",
            "",
            "é",
            &long[2..],
            &long[1..],
            &long,
            "a-much-longer-name/child/grandchild",
        ] {
            for n in [1u64, 42, u64::MAX] {
                let text = Text::format(format_args!("{name}/{n}"));
                assert_eq!(text, format!("{name}/{n}"));
            }
        }
        assert_eq!(Text::format(format_args!("constant")), "constant");
    }
}
