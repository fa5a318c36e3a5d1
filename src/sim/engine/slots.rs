//! What sits in the simulated world's broker and answerer slots: asksim's own
//! state machines (an answerer slot: any sans-IO [`Answerer`], the built-in
//! policy one or the program's own), or implementations asksim did not write,
//! outside processes behind the same interface ([`crate::wire`]). The world delivers to a slot and
//! carries out what it wrote into the `Out`, whichever it holds; an outside
//! process that fails ends the run with a [`ProcessFailure`] instead.

use std::collections::BTreeMap;

use crate::answerer::{Answerer, AnswererSetup as MachineSetup, Answerers, Replies};
use crate::broker::{BrokerConfig, BrokerState};
use crate::effect::Out;
use crate::protocol::{AnswererInput, AnswererIx, BrokerMsg, Name, Nanos};
use crate::scenario::AnswererSpec;
use crate::wire::{AnswererSetup, Endpoint, Life, OutsideAnswerer, OutsideBroker, ProcessFailure};

/// The broker of one life.
#[derive(Debug)]
pub enum BrokerSlot {
    /// asksim's own.
    Inside(BrokerState),
    /// An outside process.
    Outside(OutsideBroker),
}

impl BrokerSlot {
    /// Starts the broker of a life: asksim's, or the process `endpoint` names.
    pub fn boot(
        config: BrokerConfig,
        endpoint: Option<&Endpoint>,
        life: &Life,
        now: Nanos,
    ) -> Result<BrokerSlot, Box<ProcessFailure>> {
        match endpoint {
            None => {
                let broker =
                    BrokerState::new(config).expect("a scenario has at most ANSWERERS_MAX answerers");
                Ok(BrokerSlot::Inside(broker))
            }
            Some(endpoint) => {
                let peer = endpoint.connect("broker".into())?;
                let broker = OutsideBroker::start(peer, &config, life, now)?;
                Ok(BrokerSlot::Outside(broker))
            }
        }
    }

    /// Handles one message.
    pub fn handle(&mut self, msg: BrokerMsg, out: &mut Out) -> Result<(), Box<ProcessFailure>> {
        match self {
            BrokerSlot::Inside(broker) => {
                broker.handle(msg, out);
                Ok(())
            }
            BrokerSlot::Outside(broker) => broker.handle(msg, out),
        }
    }

    /// Whether any call is open.
    pub fn has_open_calls(&self) -> bool {
        match self {
            BrokerSlot::Inside(broker) => broker.has_open_calls(),
            BrokerSlot::Outside(broker) => broker.has_open_calls(),
        }
    }

    /// Whether a crash of answerer `index` could still change a call: it owns
    /// or is offered one. An outside broker does not say whose calls are
    /// whose, so with one any open call counts.
    pub fn crash_could_change(&self, index: AnswererIx) -> bool {
        match self {
            BrokerSlot::Inside(broker) => broker.involves(index),
            BrokerSlot::Outside(broker) => broker.has_open_calls(),
        }
    }

    /// The broker's own account of its open calls at `now`.
    pub fn open_calls(&mut self, now: Nanos) -> Result<BTreeMap<String, &'static str>, Box<ProcessFailure>> {
        match self {
            BrokerSlot::Inside(broker) => Ok(broker.open_calls()),
            BrokerSlot::Outside(broker) => broker.status(now),
        }
    }
}

/// One answerer of one life.
pub enum AnswererSlot {
    /// A sans-IO answerer in this process: asksim's built-in one acting on its
    /// row's policy, or the program's own.
    Inside(Box<dyn Answerer>),
    /// An outside process.
    Outside(OutsideAnswerer),
}

impl std::fmt::Debug for AnswererSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnswererSlot::Inside(_) => f.write_str("Inside"),
            AnswererSlot::Outside(answerer) => f.debug_tuple("Outside").field(answerer).finish(),
        }
    }
}

impl AnswererSlot {
    /// Starts the answerer at `index` of a life from its row (or as the
    /// program's own, when `own` names it), drawing from the stream `stream`;
    /// what it does on starting goes into `out`.
    pub fn boot(
        spec: &AnswererSpec,
        index: AnswererIx,
        stream: u64,
        life: &Life,
        own: &Answerers,
        out: &mut Out,
    ) -> Result<AnswererSlot, Box<ProcessFailure>> {
        // The program's own answerer replaces its row, a process row too.
        let command = spec.process.as_ref().filter(|_| !own.contains(&spec.name));
        let Some(command) = command else {
            let setup = MachineSetup {
                index,
                name: &spec.name,
                seed: stream,
                policy: &spec.policy,
            };
            let mut answerer = own.make(&setup);
            answerer.start(&mut Replies::new(out, index));
            return Ok(AnswererSlot::Inside(answerer));
        };
        let name = Name::from(spec.name.as_str());
        let peer = Endpoint::Process(command.clone()).connect(format!("answerer {name}"))?;
        let setup = AnswererSetup {
            name,
            index,
            seed: stream,
        };
        let answerer = OutsideAnswerer::start(peer, setup, life, out)?;
        Ok(AnswererSlot::Outside(answerer))
    }

    /// Handles one input at `index` of the waterfall.
    pub fn handle(
        &mut self,
        index: AnswererIx,
        input: AnswererInput,
        out: &mut Out,
    ) -> Result<(), Box<ProcessFailure>> {
        match self {
            AnswererSlot::Inside(answerer) => {
                answerer.handle(input, &mut Replies::new(out, index));
                Ok(())
            }
            AnswererSlot::Outside(answerer) => answerer.handle(input, out),
        }
    }
}
