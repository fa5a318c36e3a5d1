//! A turn as a `CancellationToken`, watched for the broker: code outside the
//! runtime may fire a turn directly, and one watcher per turn tells the broker.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::super::Shared;
use crate::protocol::{AgentId, BrokerMsg, Envelope, Turn};

/// Tells the broker when `token` fires, unless the runtime dies first.
pub(super) fn watch(shared: &Arc<Shared>, agent: AgentId, token: &CancellationToken, turn: Turn) {
    let (shared, token) = (shared.clone(), token.clone());
    shared.counts.task();
    tokio::spawn(async move {
        tokio::select! {
            biased;
            _ = shared.epoch.cancelled() => {}
            _ = token.cancelled() => shared.route(Envelope::Broker(BrokerMsg::CancelTurn { agent, turn })),
        }
    });
}
