//! SPEC §4.1 for real, through the library: this test binary is both a host
//! that embeds `Runtime` with a durable log (run with `--host LOG`) and the test
//! that SIGKILLs that host at seeded instants and starts it again, each time
//! recovering with `Runtime::recover` and re-attaching its agent loops to the
//! agents that came back. The host compacts its live log now and then, so some
//! kills land during or after a compaction.
//!
//! Kill points are counted in lines the host prints, read with a blocking read
//! of its stdout (no wall-clock sleep): the host prints a line for each effect
//! it saw leave the runtime (a tool result handed to it, a user message handed
//! to it). After the last, unkilled run: every call of every agent settled,
//! nothing open; the host never saw a result or a user message twice; every
//! late answer reached its agent exactly once (the log's projection).
//!
//! `harness = false` (Cargo.toml): the binary's own `main` decides which side
//! it is.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use asksim::durable::read::read_back;
use asksim::durable::recovery::restored;
use asksim::durable::{RecoverOptions, SyncPolicy};
use asksim::policy::{Accepts, Policy};
use asksim::projection::QuestionState;
use asksim::tool::{Timeout, ToolConfig};
use asksim::{AgentHandle, AnswererSlot, LogConfig, Runtime, RuntimeConfig};
use rand::{Rng, SeedableRng};

/// The host's agents: what each asks (its `timeout` argument, or none for the
/// tool's 30 s default).
const AGENTS: [(&str, &str); 5] = [
    ("windowed", r#","timeout":5"#),
    ("pending", r#","timeout":0.01"#),
    ("blocking", r#","timeout":-1"#),
    ("held", r#","timeout":0.01"#),
    ("default", ""),
];
/// Calls each agent makes over its lives.
const CALLS: u64 = 40;
/// Kills over the whole test.
const KILLS: usize = 24;
/// The longest the whole test may take before its watchdog ends it (a hang is
/// a failure, never a stuck CI job).
const WATCHDOG: Duration = Duration::from_secs(50);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--host") {
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        tokio.block_on(host(Path::new(&args[i + 1])));
        return;
    }
    kill_and_recover();
    println!("durable_library_crash: ok");
}

fn config() -> RuntimeConfig {
    let holder = Policy {
        accepts: Accepts::Agents(vec!["held".into()]),
        hold_after_s: Some(0.002),
        ..Policy::recommended_after(0.03)
    };
    RuntimeConfig {
        tool: ToolConfig::timed(Timeout::Window(30.0)),
        answerers: vec![
            AnswererSlot::Policy {
                name: "holder".into(),
                policy: holder,
            },
            AnswererSlot::Policy {
                name: "web".into(),
                policy: Policy::recommended_after(0.03),
            },
        ],
        ..RuntimeConfig::default()
    }
}

/// The host: starts (or recovers), runs every agent to its last call and its
/// last late answer, prints each effect it sees, and ends with `done`.
async fn host(path: &Path) {
    let config = || RuntimeConfig {
        log: Some(LogConfig::new(path)),
        ..config()
    };
    let fresh = std::fs::metadata(path).map_or(true, |m| m.len() == 0);
    let (runtime, mut agents) = if fresh {
        (Runtime::start(config()).await.expect("a start"), Vec::new())
    } else {
        let recovered = Runtime::recover(config(), path).await.expect("a recovery");
        if let Some(torn) = recovered.torn {
            println!("torn line {} ({} bytes)", torn.line, torn.bytes);
        }
        let agents = recovered
            .agents
            .into_iter()
            .map(|a| (a.handle, a.calls_made, a.pending))
            .collect();
        (recovered.runtime, agents)
    };
    // A root whose spawn never reached the disk starts afresh.
    for (name, _) in AGENTS {
        if !agents
            .iter()
            .any(|(h, _, _): &(AgentHandle, u64, Vec<String>)| h.name() == name)
        {
            agents.push((
                runtime.spawn_root(name, None).await.expect("a root"),
                0,
                Vec::new(),
            ));
        }
    }
    let compactor = runtime.clone();
    let compacting = tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_millis(150));
        loop {
            every.tick().await;
            compactor.compact_log().expect("a compaction");
        }
    });
    let loops: Vec<_> = agents
        .into_iter()
        .map(|(handle, made, pending)| tokio::spawn(agent_loop(handle, made, pending)))
        .collect();
    for agent in loops {
        agent.await.expect("an agent loop");
    }
    compacting.abort();
    runtime.shutdown().await;
    println!("done");
}

/// One agent's model loop: its remaining calls, then every pending one closed,
/// printing every result and user message it is handed.
async fn agent_loop(agent: AgentHandle, made: u64, mut pending: Vec<String>) {
    let timeout = AGENTS
        .iter()
        .find(|(n, _)| *n == agent.name())
        .expect("a known agent")
        .1;
    let arguments = format!(
        r#"{{"questions":[{{"id":"go","question":"Proceed?","header":"Confirm","options":[{{"label":"Yes (Recommended)"}},{{"label":"No"}}]}}]{timeout}}}"#
    );
    let mut seen = 0;
    for _ in made..CALLS {
        let outcome = agent.ask(&arguments).await;
        let kind = if outcome.result.text.contains("\"pending\":true") {
            pending.push(outcome.call_id.clone());
            "pending"
        } else if outcome.result.text.contains("\"answers\"") {
            "answers"
        } else {
            "error"
        };
        println!("result {} {kind}", outcome.call_id);
        seen = print_messages(&agent, seen).await;
    }
    for call_id in &pending {
        agent.closed(call_id).await;
    }
    print_messages(&agent, seen).await;
}

/// Prints the user messages after the first `seen`; how many there are now.
async fn print_messages(agent: &AgentHandle, seen: usize) -> usize {
    let messages = agent.user_messages().await;
    for message in &messages[seen.min(messages.len())..] {
        let value: serde_json::Value = serde_json::from_str(message).expect("a user message is JSON");
        println!("message {}", value["callId"].as_str().unwrap_or("?"));
    }
    messages.len()
}

/// The test: seeded kills, a recovery after each, then a last run to the end.
fn kill_and_recover() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("host.jsonl");
    let (deadline_tx, deadline_rx) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if deadline_rx.recv_timeout(WATCHDOG).is_err() {
            eprintln!("durable_library_crash: no end within {WATCHDOG:?}");
            std::process::exit(1);
        }
    });
    let mut rng = rand::rngs::StdRng::seed_from_u64(20);
    let mut seen: Vec<String> = Vec::new();
    let mut killed = 0;
    for _ in 0..KILLS {
        let after = rng.gen_range(0..=6);
        let (lines, finished) = run_host(&path, Some(after));
        seen.extend(lines);
        if finished {
            break;
        }
        killed += 1;
    }
    assert_eq!(killed, KILLS, "the work ran out before every kill landed");
    let (lines, finished) = run_host(&path, None);
    assert!(finished, "the last run ends");
    seen.extend(lines);
    check(&path, &seen);
    let _ = deadline_tx.send(());
    let _ = watchdog.join();
}

/// Runs the host on `path` until it has printed `kill_after` effect lines (then
/// SIGKILLs it) or to its end; the lines it printed, and whether it finished.
fn run_host(path: &Path, kill_after: Option<usize>) -> (Vec<String>, bool) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .arg("--host")
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the host starts");
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut lines = Vec::new();
    let mut effects = 0;
    for line in stdout.by_ref() {
        let line = line.expect("the host's output");
        if line.starts_with("result ") || line.starts_with("message ") {
            effects += 1;
        }
        lines.push(line);
        if kill_after.is_some_and(|k| effects >= k) {
            child.kill().expect("SIGKILL");
            break;
        }
    }
    // What the host printed before it died was handed to it: read it all.
    lines.extend(stdout.map(|line| line.expect("the host's output")));
    let finished = lines.last().is_some_and(|l| l == "done");
    let status = child.wait().unwrap();
    assert!(
        kill_after.is_some() || status.success(),
        "the host failed: {status}"
    );
    (lines, finished && status.success())
}

/// The end state: what the log folds to, and what the host saw.
fn check(path: &Path, seen: &[String]) {
    let results: Vec<&str> = seen.iter().filter_map(|l| l.strip_prefix("result ")).collect();
    let messages: Vec<&str> = seen.iter().filter_map(|l| l.strip_prefix("message ")).collect();
    let unique = |items: &[&str], what: &str| {
        let mut set = BTreeSet::new();
        for item in items {
            let call_id = item.split(' ').next().unwrap();
            assert!(
                set.insert(call_id.to_owned()),
                "the host was handed a {what} of {call_id} twice"
            );
        }
    };
    unique(&results, "result");
    unique(&messages, "user message");
    let options = RecoverOptions {
        policy: SyncPolicy::None,
        events_max: u64::MAX,
        keep: false,
        open_calls_max: asksim::limits::OPEN_CALLS_MAX,
    };
    let recorder = restored(read_back(path, None).expect("the log reads back"), options);
    let projection = recorder.projection();
    let mut per_agent: BTreeMap<&str, u64> = BTreeMap::new();
    for (call_id, question) in &projection.questions {
        assert!(
            matches!(
                question.state,
                QuestionState::Answered | QuestionState::LateAnswered
            ),
            "{call_id} ended {:?}",
            question.state
        );
        if question.state == QuestionState::LateAnswered {
            assert!(
                question.delivered,
                "{call_id}: its late answer never reached the agent"
            );
        }
        *per_agent.entry(question.agent.as_str()).or_default() += 1;
    }
    // What the host was handed is what the log says it was handed: a result
    // handed out before its line was durable would be lost in a crash, and the
    // log would then tell another story (pending from the restart on, say).
    for result in &results {
        let (call_id, kind) = result.split_once(' ').unwrap();
        let question = &projection.questions[call_id];
        let first = question.first.map(|(k, _)| k.as_str().to_owned());
        let logged = match first.as_deref() {
            Some("answers") => "answers",
            Some("pending") => "pending",
            _ => "error",
        };
        assert_eq!(
            kind, logged,
            "{call_id}: the host was handed {kind}, the log says {first:?}"
        );
    }
    for call_id in &messages {
        let question = &projection.questions[*call_id];
        assert_eq!(question.state, QuestionState::LateAnswered, "{call_id}");
    }
    for (name, _) in AGENTS {
        assert_eq!(per_agent.get(name), Some(&CALLS), "{name}: every call asked once");
        let record = &projection.agents[name];
        let distinct: BTreeSet<_> = record.messages.iter().collect();
        assert_eq!(
            distinct.len(),
            record.messages.len(),
            "{name}: a user message delivered twice"
        );
    }
    let losses = seen.iter().filter(|l| l.starts_with("torn line")).count();
    println!(
        "durable_library_crash: {} effects seen, {losses} torn lines",
        results.len() + messages.len()
    );
}
