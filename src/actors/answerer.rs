//! The built-in answerer as a ractor actor, linked under the broker: when it
//! dies (a fault, or a panic), the broker's supervision hears of it.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::{Host, Shared, TimerSink, Timers, execute, guarded};
use crate::answerer::AnswererState;
use crate::effect::{Out, Spawn};
use crate::protocol::AnswererMsg;

pub(crate) struct AnswererActor;

pub(crate) struct AnswererArgs {
    pub shared: Arc<Shared>,
    pub state: AnswererState,
    pub index: usize,
}

pub(crate) struct AnswererShell {
    index: usize,
    shared: Arc<Shared>,
    state: AnswererState,
    timers: Timers,
    out: Out,
}

struct Dies {
    dead: bool,
}

impl Host for Dies {
    async fn spawn(&mut self, _: &Arc<Shared>, _: Spawn) {}
    fn die(&mut self) {
        self.dead = true;
    }
}

impl Actor for AnswererActor {
    type Msg = AnswererMsg;
    type State = AnswererShell;
    type Arguments = AnswererArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<AnswererMsg>,
        args: AnswererArgs,
    ) -> Result<AnswererShell, ActorProcessingErr> {
        let mut shell = AnswererShell {
            index: args.index,
            shared: args.shared,
            state: args.state,
            timers: Timers::default(),
            out: Out::default(),
        };
        let now = shell.shared.now();
        shell.out.reset(now, None);
        shell.state.start(crate::protocol::seconds(now), &mut shell.out);
        let mut host = Dies { dead: false };
        execute(&shell.shared, &mut shell.out, &mut shell.timers, &mut host).await;
        if host.dead {
            myself.stop(Some("crash".into()));
        }
        Ok(shell)
    }

    async fn handle(
        &self,
        myself: ActorRef<AnswererMsg>,
        msg: AnswererMsg,
        shell: &mut AnswererShell,
    ) -> Result<(), ActorProcessingErr> {
        shell.out.reset(shell.shared.now(), None);
        let (state, out) = (&mut shell.state, &mut shell.out);
        let ok = guarded(&shell.shared, || state.handle(msg, out));
        let mut host = Dies { dead: !ok };
        execute(&shell.shared, &mut shell.out, &mut shell.timers, &mut host).await;
        shell.shared.answerer_handled(shell.index);
        if host.dead {
            shell.timers.cancel_all(&shell.shared);
            myself.stop(Some("crash".into()));
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<AnswererMsg>,
        shell: &mut AnswererShell,
    ) -> Result<(), ActorProcessingErr> {
        shell.timers.cancel_all(&shell.shared);
        shell.shared.answerer_died(shell.index);
        Ok(())
    }
}
