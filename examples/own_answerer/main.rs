//! Your own answerer under the simulator, then on the actor runtime: the web
//! client of `client.rs` races the agent's turn being cancelled, `explore --all`
//! finds both orders of the tie, `shrink` keeps what the losing order needs, and
//! the same client answers a call on the real runtime.
//!
//! Run with `cargo run --example own_answerer`. The runtime part runs on paused
//! time, so it ends at once.

mod client;

use std::time::Duration;

use asksim::answerer::Answerers;
use asksim::sim::hunt::explore::{self, ExploreOptions};
use asksim::sim::hunt::shrink::{self, ShrinkOptions};
use asksim::tool::{Timeout, ToolConfig};
use asksim::{AnswererSlot, Runtime, RuntimeConfig};
use client::WebClient;

/// The race: see the file's `about`. Its `web` row is a stand-in for the
/// command line; this program replaces it with the client.
pub const SCENARIO: &str = include_str!("web-client-vs-cancel.json");

/// The person clicks 3 s after the offer.
pub const THINK: Duration = Duration::from_secs(3);

/// The program's own answerers: `web` is the client.
pub fn answerers() -> Answerers {
    Answerers::new().with("web", |_setup| Box::new(WebClient::new(THINK)))
}

fn main() {
    let scenario = asksim::scenario::parse("web-client-vs-cancel.json", SCENARIO).expect("a valid scenario");
    let options = ExploreOptions {
        answerers: answerers(),
        ..ExploreOptions::new(scenario.seed, 10_000)
    };
    let report = explore::explore(&scenario, "web-client-vs-cancel.json", options, |_| {});
    print!("{}", explore::render(&report));

    let options = ShrinkOptions {
        answerers: answerers(),
        seed: Some(first_failing_seed()),
        ..ShrinkOptions::default()
    };
    let shrunk = shrink::shrink("web-client-vs-cancel.json", SCENARIO, &options, &mut |_| {});
    // The shrunk file goes to the system's temporary directory, not the
    // repository (its command line runs the file's stand-in row, not the
    // client: run it with this program's answerers, as above).
    let out = std::env::temp_dir().join("web-client-vs-cancel.min.json");
    match shrunk.map(|report| (std::fs::write(&out, &report.text), report)) {
        Ok((Ok(()), report)) => print!("{}", shrink::render(&report, &out.display().to_string())),
        Ok((Err(error), _)) => println!("shrink: cannot write {}: {error}", out.display()),
        Err(error) => println!("shrink: {error}"),
    }
    on_the_runtime();
}

/// The first seed under which the cancel wins the tie (a random strategy picks
/// a winner per seed).
fn first_failing_seed() -> u64 {
    let scenario = asksim::scenario::parse("x.json", SCENARIO).expect("a valid scenario");
    (0..64)
        .find(|&seed| {
            let mut options = asksim::sim::RunOptions::new(&scenario, seed, scenario.clock);
            options.answerers = answerers();
            let output = asksim::sim::run_options(&scenario, options).expect("no log");
            !asksim::sim::summarise(&scenario, "x.json", &output).passed()
        })
        .unwrap_or(0)
}

/// The same client in the library's runtime: an actor of its own, its timers
/// on tokio (paused here, so 3 s pass at once).
#[asksim::tokio::main(crate = "asksim::tokio", flavor = "current_thread", start_paused = true)]
async fn on_the_runtime() {
    let runtime = Runtime::start(RuntimeConfig {
        tool: ToolConfig::timed(Timeout::Window(2.0)),
        answerers: vec![AnswererSlot::Machine {
            name: "web".into(),
            machine: Box::new(WebClient::new(THINK)),
        }],
        ..RuntimeConfig::default()
    })
    .await
    .expect("the runtime starts");
    let root = runtime.spawn_root("root", None).await.expect("a root agent");
    let outcome = root
        .ask(
            r#"{"questions":[{"id":"deploy","question":"Deploy the build?","header":"Deploy",
                "options":[{"label":"Yes (Recommended)"},{"label":"No"}]}]}"#,
        )
        .await;
    println!("on the runtime: {} -> {}", outcome.call_id, outcome.result.text);
    runtime.shutdown().await;
}
