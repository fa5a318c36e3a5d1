//! Script steps' arguments validated once per run, not once per call.
//!
//! Every copy of a scenario's `count` row (and every turn of a `repeat` body) holds
//! the same arguments text, one `Arc<str>` shared by all of them. Validating it
//! ([`ToolConfig::prepare`]) gives the same [`Ask`] or the same error each time,
//! so the agents of a run share one memo keyed by that `Arc`'s address: the
//! first call parses, the rest take a clone whose questions are the same `Arc`s
//! (10,000 roots asking one question hold it once, not 10,000 times). The memo
//! keeps each key's `Arc` alive, so an address cannot be reused by other text
//! while it is in the memo; its size is bounded by the scenario's distinct
//! steps, never by its calls. Arguments that are not shared (a library caller's
//! text, `ask_unresolved`'s merge) are validated on every call, as before.

use std::sync::{Arc, Mutex, PoisonError};

use rustc_hash::FxHashMap;

use crate::tool::{ArgumentError, Ask, ToolConfig};

type Entry = (Arc<str>, ToolConfig, Result<Ask, ArgumentError>);

/// The memo, shared by the agents of one run (clones share it).
#[derive(Clone, Debug, Default)]
pub struct Prepared(Arc<Mutex<FxHashMap<usize, Entry>>>);

impl Prepared {
    /// `arguments` validated under `tool`: from the memo when these very
    /// arguments (the same `Arc`) were validated under the same config before.
    pub fn prepare(&self, tool: ToolConfig, arguments: &Arc<str>) -> Result<Ask, ArgumentError> {
        let key = Arc::as_ptr(arguments).cast::<u8>() as usize;
        let mut memo = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((held, config, prepared)) = memo.get(&key)
            && Arc::ptr_eq(held, arguments)
            && *config == tool
        {
            return prepared.clone();
        }
        let prepared = tool.prepare(arguments);
        memo.insert(key, (arguments.clone(), tool, prepared.clone()));
        prepared
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Timeout;

    const ARGS: &str = r#"{"questions":[{"id":"a","question":"Go?","header":"Go","options":[{"label":"Yes"},{"label":"No"}]}]}"#;

    #[test]
    fn the_same_arguments_share_one_validation() {
        let memo = Prepared::default();
        let tool = ToolConfig::timed(Timeout::Window(5.0));
        let shared: Arc<str> = ARGS.into();
        let first = memo.prepare(tool, &shared).expect("valid");
        let again = memo.prepare(tool, &shared.clone()).expect("valid");
        assert!(
            Arc::ptr_eq(&first.questions, &again.questions),
            "a hit shares the parse"
        );
        let copy: Arc<str> = ARGS.into();
        let other = memo.prepare(tool, &copy).expect("valid");
        assert!(
            !Arc::ptr_eq(&first.questions, &other.questions),
            "other text is parsed anew"
        );
        assert_eq!(first.questions, other.questions);
    }

    #[test]
    fn another_config_is_validated_under_its_own_rules() {
        let memo = Prepared::default();
        let shared: Arc<str> = ARGS.into();
        let timed = memo
            .prepare(ToolConfig::timed(Timeout::Window(5.0)), &shared)
            .expect("valid");
        assert_eq!(timed.schema, crate::tool::Schema::Timed);
        // The legacy definition has no `id`: the memo must not hand it the timed parse.
        let legacy = memo
            .prepare(ToolConfig::default(), &shared)
            .expect_err("no id in legacy");
        assert_eq!(legacy.path, "questions[0].id");
        assert_eq!(
            memo.prepare(ToolConfig::default(), &shared).expect_err("again"),
            legacy
        );
    }
}
