//! The final results of a run's scripts, kept in the order the scripts ended,
//! and found by agent when asked.
//!
//! An agent's last final result is its own: one of a life before a process
//! loss that ended again after the restart is replaced. The table by agent
//! that says which is last is made at the first look-up, not at the run's end:
//! most runs never look one up (only a scenario's `final_results`
//! expectations and library callers do), and at a tree of 10^5 agents making
//! it was 4% of the run, a hash of each agent's name, out of the cache by
//! then, and a place in a table of 10^5 (BENCHMARKS.md, issue #19,
//! thirty-ninth session). The table is a [`crate::keyed::Keyed`]: every read
//! in order (`iter`, serialisation, `Debug`) sorts by agent, and nothing of
//! the table's own order reaches output.

use std::fmt;
use std::sync::OnceLock;

use serde::{Serialize, Serializer};

use crate::dense::CHUNK;
use crate::effect::FinalResult;
use crate::keyed::Keyed;
use crate::protocol::Text;

/// Final results in the order their scripts ended, in chunks of [`CHUNK`] once
/// past the first: a vector grown by doubling held up to half its room empty
/// at a run's end, which is its peak when every agent's script ends last.
#[derive(Clone, Default)]
pub struct Finals {
    ended: Vec<Vec<FinalResult>>,
    /// By agent, the place in `ended` of its last: made at the first look-up.
    last: OnceLock<Keyed<usize>>,
}

impl Finals {
    /// Adds the final result of a script that just ended.
    pub(crate) fn push(&mut self, final_result: FinalResult) {
        self.last.take();
        match self.ended.last_mut() {
            Some(chunk) if chunk.len() < CHUNK => chunk.push(final_result),
            _ => {
                let mut chunk = Vec::with_capacity(if self.ended.is_empty() { 0 } else { CHUNK });
                chunk.push(final_result);
                self.ended.push(chunk);
            }
        }
    }

    /// The final result of `agent` (its last), if its script ended.
    pub fn get(&self, agent: &str) -> Option<&FinalResult> {
        self.last().get(agent).map(|&place| self.at(place))
    }

    /// Whether `agent`'s script ended.
    pub fn contains_key(&self, agent: &str) -> bool {
        self.last().contains_key(agent)
    }

    /// How many agents' scripts ended.
    pub fn len(&self) -> usize {
        self.last().len()
    }

    /// Whether none did.
    pub fn is_empty(&self) -> bool {
        self.ended.is_empty()
    }

    /// Each agent's final result, by agent name.
    pub fn iter(&self) -> impl Iterator<Item = (&Text, &FinalResult)> + '_ {
        self.last().iter().map(|(agent, &place)| (agent, self.at(place)))
    }

    fn at(&self, place: usize) -> &FinalResult {
        &self.ended[place / CHUNK][place % CHUNK]
    }

    /// The table by agent: its last final result's place.
    fn last(&self) -> &Keyed<usize> {
        self.last.get_or_init(|| {
            let mut last = Keyed::with_capacity(self.ended.iter().map(Vec::len).sum());
            for (place, final_result) in self.ended.iter().flatten().enumerate() {
                last.insert(final_result.agent_name().clone(), place);
            }
            last
        })
    }
}

impl FromIterator<FinalResult> for Finals {
    /// Final results in the order their scripts ended.
    fn from_iter<I: IntoIterator<Item = FinalResult>>(ended: I) -> Self {
        let mut finals = Finals::default();
        ended
            .into_iter()
            .for_each(|final_result| finals.push(final_result));
        finals
    }
}

impl fmt::Debug for Finals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for Finals {
    /// A map by agent name, in name order.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(agent: &str, errors: usize) -> FinalResult {
        let errors = (0..errors).map(|i| serde_json::json!(i)).collect();
        FinalResult::new(agent.into(), Vec::new(), Vec::new(), errors)
    }

    /// An agent's last final result is found, past a chunk's end too, and
    /// ordered reads go by name, not by the order the scripts ended.
    #[test]
    fn an_agents_last_final_result_is_its_own() {
        let mut finals = Finals::default();
        finals.push(ended("b", 1));
        assert_eq!(
            finals.get("b").map(FinalResult::to_value),
            Some(ended("b", 1).to_value())
        );
        finals.push(ended("a", 0));
        finals.push(ended("b", 2));
        for i in 0..CHUNK + 5 {
            finals.push(ended(&format!("n{i:05}"), 0));
        }
        finals.push(ended("a", 3));
        assert_eq!(finals.len(), CHUNK + 7);
        assert_eq!(
            finals.get("b").map(FinalResult::to_value),
            Some(ended("b", 2).to_value())
        );
        assert_eq!(
            finals.get("a").map(FinalResult::to_value),
            Some(ended("a", 3).to_value())
        );
        assert!(finals.contains_key(&format!("n{:05}", CHUNK + 4)));
        assert!(finals.get("c").is_none());
        let names: Vec<&str> = finals.iter().map(|(agent, _)| agent.as_ref()).take(3).collect();
        assert_eq!(names, ["a", "b", "n00000"]);
        let json = serde_json::to_value(&finals).unwrap();
        assert_eq!(json["a"], ended("a", 3).to_value());
        assert_eq!(json.as_object().unwrap().len(), CHUNK + 7);
    }
}
