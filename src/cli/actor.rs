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

/// Why an implementation outside asksim is refused on the real clock (see
/// `virtual_clock_only`): their replies are stamped with virtual time.
pub(super) const OUTSIDE_VIRTUAL_ONLY: &str =
    "--broker-cmd and process answerers run on the virtual clock only (PROTOCOL.md)";

/// The implementations outside asksim a command is given, checked before its
/// first run (and after the real clock refused them, [`OUTSIDE_VIRTUAL_ONLY`]):
/// each must start. A command that cannot start (a typo, a file that is not
/// executable) is bad input too, exit 2 with the flag or the answerer named,
/// not a run that fails (exit 1) with a report of nothing, or a sweep whose
/// every seed fails the same way. `scenario` is `None` where the command reads
/// its file later (`shrink`, which refuses such a failure itself).
pub(super) fn outside_checked(
    command: &str,
    broker: Option<&crate::wire::Endpoint>,
    scenario: Option<&crate::scenario::Scenario>,
) -> Result<(), ExitCode> {
    let bad = |what: &str, why: &str| {
        eprintln!("asksim {command}: {what}: {why}");
        Err(ExitCode::from(EXIT_BAD_INPUT))
    };
    if let Some(crate::wire::Endpoint::Process(words)) = broker
        && let Err(why) = starts(words)
    {
        return bad("--broker-cmd", &why);
    }
    let processes = scenario.into_iter().flat_map(|s| &s.answerers);
    for (name, words) in processes.filter_map(|a| Some((&a.name, a.process.as_ref()?))) {
        if let Err(why) = starts(words) {
            return bad(&format!("answerer {name:?}: process"), &why);
        }
    }
    Ok(())
}

/// Whether the process of `command` can be started, or why not: started, then
/// killed at once (PROTOCOL.md "Lifecycle": a process may be killed at any
/// time, as every run's end does).
fn starts(command: &[String]) -> Result<(), String> {
    (crate::wire::Process::start(command))
        .map(drop)
        .map_err(|broken| broken.reason)
}

/// A policy from an answerer row without its name, checked as the scenario
/// format checks an answerer row (the same rules, the same messages).
fn policy_of(text: &str) -> Result<crate::policy::Policy, String> {
    let row: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if !row.is_object() {
        return Err("expected an object (an answerer row without its name)".into());
    }
    crate::scenario::policy(&row)
}
