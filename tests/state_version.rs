//! SPEC §4: a projection snapshot cached on disk carries `stateVersion`, and the
//! version must be bumped "whenever the projection's state or fold changes", or a
//! snapshot cached before the change is reused and gives a different state. A test
//! cannot see a change of meaning, but it can see a change of output: the fold of
//! a log that mixes both schemas and reaches every state
//! (`tests/fixtures/mixed-schemas.jsonl`, and from version 6 on a log whose
//! agent's turn fires twice, `fired-twice.jsonl`) is pinned, as a digest, beside
//! the version ([`FOLD_DIGESTS`]). A fold change without a bump fails here.

use std::path::Path;

use asksim::log::{FOLD_DIGESTS, STATE_VERSION};
use asksim::projection::{Projection, QuestionState};
use sha2::{Digest, Sha256};

fn folded(fixture: &str) -> Projection {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    let (_, events) = asksim::log::read_file(&path).expect("the fixture reads");
    Projection::fold(&events)
}

fn mixed_schemas() -> Projection {
    folded("mixed-schemas.jsonl")
}

/// The digest of `projection`'s JSON and, after a newline, that of the fixture
/// whose agent's turns fire twice (`fired-twice.jsonl`, from version 6 on):
/// between them the folds reach every state the projection keeps.
fn digest(projection: &Projection) -> String {
    let mut json = serde_json::to_string(projection).expect("a projection serialises");
    json.push('\n');
    json.push_str(&serde_json::to_string(&folded("fired-twice.jsonl")).expect("a projection serialises"));
    Sha256::digest(json.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn pinned() -> Option<&'static str> {
    FOLD_DIGESTS
        .iter()
        .find(|(v, _)| *v == STATE_VERSION)
        .map(|(_, d)| *d)
}

#[test]
fn the_fold_of_a_mixed_schema_log_is_the_one_pinned_for_this_state_version() {
    let digest = digest(&mixed_schemas());
    let how = match pinned() {
        None => format!("STATE_VERSION {STATE_VERSION} has no row: add ({STATE_VERSION}, \"{digest}\")"),
        Some(_) => format!(
            "the projection's fold changed: bump STATE_VERSION in src/log.rs to {} and add the row ({}, \"{digest}\"); never edit an old row",
            STATE_VERSION + 1,
            STATE_VERSION + 1
        ),
    };
    assert_eq!(pinned(), Some(digest.as_str()), "{how}");
}

/// The pin bites: the fold of version 3, which kept a pending question's
/// pending text in `settled`, is not the fold pinned for this version.
#[test]
fn a_fold_that_keeps_the_pending_text_again_does_not_pass_for_this_version() {
    let mut projection = mixed_schemas();
    let pending = projection
        .questions
        .iter_mut()
        .find(|(_, q)| q.state == QuestionState::Pending)
        .expect("the fixture has a pending question");
    let (call_id, question) = pending;
    question.settled = Some(asksim::tool::ToolResult::pending(call_id).text.into());
    assert_ne!(Some(digest(&projection).as_str()), pinned());
}

#[test]
fn each_state_version_pins_a_digest_of_its_own_and_the_last_is_the_codes() {
    let versions: Vec<u32> = FOLD_DIGESTS.iter().map(|(v, _)| *v).collect();
    assert!(
        versions.windows(2).all(|w| w[0] < w[1]),
        "rows in version order: {versions:?}"
    );
    assert_eq!(
        versions.last(),
        Some(&STATE_VERSION),
        "the last row is the code's version"
    );
    let mut digests: Vec<&str> = FOLD_DIGESTS.iter().map(|(_, d)| *d).collect();
    digests.sort();
    digests.dedup();
    assert_eq!(
        digests.len(),
        FOLD_DIGESTS.len(),
        "two versions with one fold: one bump too many"
    );
    for (_, digest) in FOLD_DIGESTS {
        assert!(
            digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
            "{digest}"
        );
    }
}
