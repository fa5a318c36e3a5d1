//! What sits in the simulated world's broker and answerer slots: asksim's own
//! state machines, or implementations asksim did not write, outside processes
//! behind the same interface ([`crate::wire`]). The world delivers to a slot and
//! carries out what it wrote into the `Out`, whichever it holds; an outside
//! process that fails ends the run with a [`ProcessFailure`] instead.

use std::collections::BTreeMap;

use crate::answerer::AnswererState;
use crate::broker::{BrokerConfig, BrokerState};
use crate::effect::Out;
use crate::protocol::{AnswererMsg, BrokerMsg, Name, Nanos, seconds};
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

    /// Whether any call is open (a crash can change something only then).
    pub fn has_open_calls(&self) -> bool {
        match self {
            BrokerSlot::Inside(broker) => broker.has_open_calls(),
            BrokerSlot::Outside(broker) => broker.has_open_calls(),
        }
    }

    /// The broker's own account of its open calls at `now`.
    pub fn open_calls(&mut self, now: Nanos) -> Result<BTreeMap<String, &'static str>, Box<ProcessFailure>> {
        match self {
            BrokerSlot::Inside(broker) => Ok(broker.status().open),
            BrokerSlot::Outside(broker) => broker.status(now),
        }
    }
}

/// One answerer of one life.
#[derive(Debug)]
pub enum AnswererSlot {
    /// asksim's built-in answerer acting on its policy (boxed: it is the larger).
    Inside(Box<AnswererState>),
    /// An outside process.
    Outside(OutsideAnswerer),
}

impl AnswererSlot {
    /// Starts the answerer at `index` of a life from its row, drawing from the
    /// stream `stream`; what it does on starting goes into `out`.
    pub fn boot(
        spec: &AnswererSpec,
        index: usize,
        stream: u64,
        life: &Life,
        out: &mut Out,
    ) -> Result<AnswererSlot, Box<ProcessFailure>> {
        let name = Name::from(spec.name.as_str());
        match &spec.process {
            None => {
                let mut answerer = AnswererState::new(index, name, spec.policy.clone(), stream);
                answerer.start(seconds(out.now()), out);
                Ok(AnswererSlot::Inside(Box::new(answerer)))
            }
            Some(command) => {
                let peer = Endpoint::Process(command.clone()).connect(format!("answerer {name}"))?;
                let setup = AnswererSetup {
                    name,
                    index,
                    seed: stream,
                };
                let answerer = OutsideAnswerer::start(peer, setup, life, out)?;
                Ok(AnswererSlot::Outside(answerer))
            }
        }
    }

    /// Handles one message.
    pub fn handle(&mut self, msg: AnswererMsg, out: &mut Out) -> Result<(), Box<ProcessFailure>> {
        match self {
            AnswererSlot::Inside(answerer) => {
                answerer.handle(msg, out);
                Ok(())
            }
            AnswererSlot::Outside(answerer) => answerer.handle(msg, out),
        }
    }
}
