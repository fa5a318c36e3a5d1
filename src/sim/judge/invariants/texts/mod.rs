//! What the model reads, judged against the contract: whether the answers it
//! got are the batch submitted ([`content`]), and the exact texts rebuilt
//! (SPEC §2.4): the two user messages ([`message`]) and every tool result that
//! is not `pending` ([`result_text`]). Each names what differs and gives both.

pub mod content;
pub mod message;
pub mod result_text;
