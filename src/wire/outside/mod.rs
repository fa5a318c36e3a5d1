//! What an outside broker's reply must and may say, checked as it comes in
//! (PROTOCOL.md 3.3): `answering` holds the rules that tie an effect to the
//! line it answers, `messages` the exact texts of the user messages.

pub(super) mod answering;
pub(super) mod messages;
