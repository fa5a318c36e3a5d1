//! asksim's own state machines behind the protocol, as `asksim actor
//! broker|answerer` runs them: `broker` and `answerer` turn a line in into a
//! line of effects out, and `serve` drives one over stdin and stdout.

mod answerer;
mod broker;
mod lines;
mod serve;

pub use answerer::ActorAnswerer;
pub use broker::ActorBroker;
pub use serve::serve;
