//! A broken invariant, as every checker of the judging room reports it and every
//! report prints it: the invariant, the callId and the `seq` of the event at
//! fault (SPEC §6).

use serde::Serialize;

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    /// Which invariant.
    pub invariant: &'static str,
    /// The call it is about, if any.
    #[serde(rename = "callId")]
    pub call_id: Option<String>,
    /// The `seq` of the offending event.
    pub seq: u64,
    /// What was seen.
    pub detail: String,
}

impl std::fmt::Display for Violation {
    /// `invariant (callId X, seq N): detail`, as every report prints it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let call = self.call_id.as_deref().unwrap_or("-");
        write!(
            f,
            "{} (callId {call}, seq {}): {}",
            self.invariant, self.seq, self.detail
        )
    }
}
