//! "Did you mean …?": the known name closest to a misspelt one.
//!
//! The rule: a known name is suggested when its edit distance to the unknown word
//! (optimal string alignment: an insertion, a deletion, a substitution or a swap of
//! two neighbouring characters counts 1; case counts) is at most 1 for a known name
//! of up to 4 characters and at most 2 for a longer one, and no other known name is
//! as close. So `wrok` → `work`, `agnets` → `agents`, `scirpt` → `script`, but `x`
//! suggests nothing, nor does a word halfway between two names.
//!
//! serde's derived shapes report unknown keys and variants in fixed words (`unknown
//! field `…`, expected one of `a`, `b``); [`with_suggestion`] reads those and adds
//! the suggestion, so every shape of the format gets it from one place.

/// The one known name close enough to `word` (see the module doc), if any.
pub(crate) fn closest<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    let mut tied = false;
    for name in known {
        let allowed = if name.chars().count() <= 4 { 1 } else { 2 };
        let d = distance(word, name);
        if d > allowed || d == 0 {
            continue;
        }
        match best {
            Some((best_d, _)) if d > best_d => {}
            Some((best_d, _)) if d == best_d => tied = true,
            _ => {
                best = Some((d, name));
                tied = false;
            }
        }
    }
    best.filter(|_| !tied).map(|(_, name)| name)
}

/// Optimal string alignment distance between `a` and `b`, in characters.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Rows i-2, i-1 and i of the usual table.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            current[j] = d;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// serde's message about an unknown field or variant, with `; did you mean `x`?`
/// appended when one of the names it expected is close; any other message as is.
pub(super) fn with_suggestion(message: &str) -> String {
    let unknown = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix));
    // The word is the user's text and may hold anything; the expected names that
    // follow the last "`, expected " are the format's and hold no backquote.
    let suggestion = unknown.and_then(|rest| {
        let (word, expected) = rest.rsplit_once("`, expected ")?;
        let names = expected.split('`').skip(1).step_by(2);
        closest(word, names)
    });
    match suggestion {
        Some(name) => format!("{message}; did you mean `{name}`?"),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_counts_edits_and_swaps() {
        assert_eq!(distance("", ""), 0);
        assert_eq!(distance("work", "work"), 0);
        assert_eq!(distance("wrok", "work"), 1);
        assert_eq!(distance("wrk", "work"), 1);
        assert_eq!(distance("agnets", "agents"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("é", "e"), 1);
    }

    #[test]
    fn closest_suggests_one_near_name_only() {
        let known = ["name", "agents", "answerers", "events"];
        assert_eq!(closest("agnets", known), Some("agents"));
        assert_eq!(closest("nme", known), Some("name"));
        assert_eq!(closest("x", known), None);
        assert_eq!(closest("colour", known), None);
        // Short names allow one edit only.
        assert_eq!(closest("nmae", ["name"]), Some("name"));
        assert_eq!(closest("nm", ["name"]), None);
        // A tie suggests nothing.
        assert_eq!(closest("ab", ["abc", "abd"]), None);
        // An exact name is not a suggestion.
        assert_eq!(closest("name", known), None);
    }

    #[test]
    fn serde_messages_get_the_suggestion() {
        assert_eq!(
            with_suggestion("unknown field `agnets`, expected one of `name`, `agents`"),
            "unknown field `agnets`, expected one of `name`, `agents`; did you mean `agents`?"
        );
        assert_eq!(
            with_suggestion("unknown variant `kyed`, expected `all` or `keyed`"),
            "unknown variant `kyed`, expected `all` or `keyed`; did you mean `keyed`?"
        );
        assert_eq!(
            with_suggestion("unknown variant `wall`, expected `virtual` or `real`"),
            "unknown variant `wall`, expected `virtual` or `real`"
        );
        assert_eq!(
            with_suggestion("unknown field `a`, there are no fields"),
            "unknown field `a`, there are no fields"
        );
        assert_eq!(with_suggestion("invalid type: map"), "invalid type: map");
    }
}
