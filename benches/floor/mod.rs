//! The floor (issue #23): the least a message costs on ractor and on plain
//! tokio, measured in the same criterion run as the runtime's own benches. A
//! request/reply is one message in and one reply out through an
//! `RpcReplyPort` (ractor) or a oneshot (tokio); a one-way send is a cast (ractor)
//! or an unbounded mpsc send (tokio), timed over a burst that one round trip
//! closes, so each figure is per message handled.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::{mpsc, oneshot};

/// What the floor's actor and task take.
pub enum FloorMsg {
    /// Counted and dropped.
    Cast(u64),
    /// Answered with the count so far.
    Call(RpcReplyPort<u64>),
}

/// The floor's ractor actor: counts casts, answers calls.
pub struct FloorActor;

impl Actor for FloorActor {
    type Msg = FloorMsg;
    type State = u64;
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<FloorMsg>, _: ()) -> Result<u64, ActorProcessingErr> {
        Ok(0)
    }

    async fn handle(
        &self,
        _: ActorRef<FloorMsg>,
        msg: FloorMsg,
        count: &mut u64,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            FloorMsg::Cast(n) => *count = count.wrapping_add(n),
            FloorMsg::Call(reply) => {
                let _ = reply.send(*count);
            }
        }
        Ok(())
    }
}

/// Starts the floor's actor (inside a tokio runtime).
pub async fn start_actor() -> ActorRef<FloorMsg> {
    let (actor, _) = Actor::spawn(None, FloorActor, ()).await.expect("the floor actor");
    actor
}

/// One request/reply to the actor.
pub async fn actor_call(actor: &ActorRef<FloorMsg>) -> u64 {
    ractor::call!(actor, FloorMsg::Call).expect("the floor actor answers")
}

/// `burst` casts, then one call that comes back once they were all handled.
pub async fn actor_casts(actor: &ActorRef<FloorMsg>, burst: u64) -> u64 {
    for n in 0..burst {
        ractor::cast!(actor, FloorMsg::Cast(n)).expect("the floor actor takes a cast");
    }
    actor_call(actor).await
}

/// What the plain-tokio task takes.
enum TaskMsg {
    Cast(u64),
    Call(oneshot::Sender<u64>),
}

/// The same on plain tokio: one task, an unbounded mpsc in, oneshot replies.
#[derive(Clone)]
pub struct FloorTask {
    tx: mpsc::UnboundedSender<TaskMsg>,
}

impl FloorTask {
    /// Spawns the task (inside a tokio runtime).
    pub fn start() -> FloorTask {
        let (tx, mut rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut count = 0u64;
            while let Some(msg) = rx.recv().await {
                match msg {
                    TaskMsg::Cast(n) => count = count.wrapping_add(n),
                    TaskMsg::Call(reply) => {
                        let _ = reply.send(count);
                    }
                }
            }
        });
        FloorTask { tx }
    }

    /// One request/reply.
    pub async fn call(&self) -> u64 {
        let (reply, rx) = oneshot::channel();
        self.tx.send(TaskMsg::Call(reply)).expect("the floor task runs");
        rx.await.expect("the floor task answers")
    }

    /// `burst` sends, then one request/reply.
    pub async fn casts(&self, burst: u64) -> u64 {
        for n in 0..burst {
            self.tx.send(TaskMsg::Cast(n)).expect("the floor task runs");
        }
        self.call().await
    }
}
