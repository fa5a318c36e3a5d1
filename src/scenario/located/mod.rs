//! A bad file's error as its author reads it: where in the file (`position`:
//! the line and column of a JSON path, and the path of a serde position) and in
//! the format's words (`plain`: what a field takes, not Rust's type names).

pub(super) mod plain;
pub(super) mod position;
