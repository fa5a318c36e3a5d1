//! A host that survives a real crash: its runtime writes a durable log, the
//! process is SIGKILLed with a question pending, and the next start recovers
//! from the log with `Runtime::recover`, re-attaches to the agent that came back
//! and gets the late answer the model was promised.
//!
//! Run with `cargo run --example recover`. It runs itself twice: first as the
//! host that is killed (`--crash`), then as the host that recovers.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use asksim::policy::Policy;
use asksim::tool::{Timeout, ToolConfig};
use asksim::{AnswererSlot, LogConfig, Runtime, RuntimeConfig};

const ARGS: &str = r#"{"questions":[{"id":"db","question":"Which database should the service use?","header":"Database","options":[{"label":"Postgres (Recommended)"},{"label":"SQLite"}]}],"timeout":0.2}"#;

/// The host's configuration, the same in every life: the tool, the waterfall (a
/// user who takes 0.5 s to answer) and the log.
fn config(log: &Path) -> RuntimeConfig {
    RuntimeConfig {
        tool: ToolConfig::timed(Timeout::Window(30.0)),
        answerers: vec![AnswererSlot::Policy {
            name: "web".into(),
            policy: Policy::recommended_after(0.5),
        }],
        log: Some(LogConfig::new(log)),
        ..RuntimeConfig::default()
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, log] = &args[..]
        && flag == "--crash"
    {
        return crash(Path::new(log)).await;
    }
    let dir = tempfile::tempdir().expect("a temp dir");
    let log = dir.path().join("host.jsonl");
    let mut first = Command::new(std::env::current_exe().unwrap())
        .arg("--crash")
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the first life runs");
    let mut said = String::new();
    BufReader::new(first.stdout.take().unwrap())
        .read_line(&mut said)
        .expect("the first life's line");
    print!("first life: {said}");
    first.kill().expect("SIGKILL");
    println!("first life ended: {}", first.wait().unwrap());
    recover(&log).await;
}

/// The first life: a question goes pending; then it waits to be killed.
async fn crash(log: &Path) {
    let runtime = Runtime::start(config(log)).await.expect("a runtime");
    let root = runtime.spawn_root("root", None).await.expect("a root");
    let outcome = root.ask(ARGS).await;
    // The result's line was durable before `ask` returned (the write-ahead rule):
    // whatever happens now, the log says root/1 is pending.
    println!("{} -> {}", outcome.call_id, outcome.result.text);
    std::future::pending::<()>().await;
}

/// The second life: recover, re-attach, and get the late answer.
async fn recover(log: &Path) {
    let recovered = Runtime::recover(config(log), log)
        .await
        .expect("the log recovers");
    println!(
        "recovered {} events; crashed: {}; re-offered: {:?}",
        recovered.events, recovered.crashed, recovered.reopened
    );
    for agent in &recovered.agents {
        println!(
            "back: {} (lineage {:?}, {} calls made, pending {:?})",
            agent.handle.name(),
            agent.lineage,
            agent.calls_made,
            agent.pending
        );
        for call_id in &agent.pending {
            agent.handle.closed(call_id).await;
        }
        for message in agent.handle.user_messages().await {
            println!("user message: {message}");
        }
        let next = agent.handle.ask(ARGS).await;
        println!("the next call is {}", next.call_id);
    }
    recovered.runtime.shutdown().await;
}
