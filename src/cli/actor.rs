//! `asksim actor broker|answerer`: asksim's own broker, or its built-in answerer
//! acting on a policy, as an outside process speaking PROTOCOL.md on stdin and
//! stdout (what `--broker-cmd` and a scenario's `process` answerer start).

use std::process::ExitCode;

use super::EXIT_BAD_INPUT;
use crate::wire::{ActorAnswerer, ActorBroker, serve};

/// `asksim actor`'s arguments.
#[derive(clap::Args, Debug)]
pub(super) struct ActorArgs {
    #[command(subcommand)]
    role: ActorRole,
}

#[derive(clap::Subcommand, Debug)]
enum ActorRole {
    /// asksim's broker behind the protocol.
    Broker,
    /// asksim's built-in answerer behind the protocol, acting on a policy.
    Answerer {
        /// The policy, as a scenario's answerer row without its name, e.g.
        /// '{"accepts":"all","latency":2,"answer":"recommended"}'.
        #[arg(long, value_name = "JSON")]
        policy: String,
    },
}

pub(super) fn actor(args: &ActorArgs) -> ExitCode {
    let served = match &args.role {
        ActorRole::Broker => {
            let mut broker = ActorBroker::new();
            serve(|line| broker.handle_line(line))
        }
        ActorRole::Answerer { policy } => match policy_of(policy) {
            Ok(policy) => {
                let mut answerer = ActorAnswerer::new(policy);
                serve(|line| answerer.handle_line(line))
            }
            Err(error) => {
                eprintln!("asksim actor answerer: --policy: {error}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        },
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("asksim actor: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// Implementations outside asksim run on the virtual clock only (their replies
/// are stamped with virtual time): a real-clock run with one is bad input.
pub(super) fn virtual_only(
    clock: crate::scenario::Clock,
    outside_broker: bool,
    scenario: &crate::scenario::Scenario,
) -> Result<(), ExitCode> {
    if clock == crate::scenario::Clock::Real && (outside_broker || scenario.has_process_answerers()) {
        eprintln!(
            "asksim: --broker-cmd and process answerers run on the virtual clock only (PROTOCOL.md); drop --clock real"
        );
        return Err(ExitCode::from(EXIT_BAD_INPUT));
    }
    Ok(())
}

/// A policy from an answerer row without its name, checked as the scenario
/// format checks an answerer row (the same rules, the same messages).
fn policy_of(text: &str) -> Result<crate::policy::Policy, String> {
    let mut row: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Some(map) = row.as_object_mut() else {
        return Err("expected an object (an answerer row without its name)".into());
    };
    map.entry("name").or_insert_with(|| "policy".into());
    let scenario = serde_json::json!({ "name": "policy", "answerers": [row], "agents": [] });
    match crate::scenario::parse("--policy", &scenario.to_string()) {
        Ok(mut scenario) => Ok(scenario.answerers.remove(0).policy),
        Err(error) => Err(error.message.replacen("answerers[0].", "", 1)),
    }
}
