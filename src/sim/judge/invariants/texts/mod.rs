//! The exact texts the model reads, rebuilt from the contract (SPEC §2.4):
//! the two user messages ([`message`]) and every tool result that is not
//! `pending` ([`result_text`]). Each names what differs and gives both texts.

pub mod message;
pub mod result_text;
