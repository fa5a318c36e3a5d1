//! A sans-IO answerer (the built-in policy one, or a user's
//! [`crate::answerer::Answerer`]) as a ractor actor, linked under the broker:
//! when it dies (a fault, or a panic), the broker's supervision hears of it.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::{Host, Shared, TimerSink, Timers, execute, guarded};
use crate::answerer::{Answerer, Replies};
use crate::effect::{Out, Spawn};
use crate::protocol::{AnswererInput, AnswererIx};

pub(crate) struct AnswererActor;

pub(crate) struct AnswererArgs {
    pub shared: Arc<Shared>,
    pub state: Box<dyn Answerer>,
    pub index: AnswererIx,
}

pub(crate) struct AnswererShell {
    index: AnswererIx,
    shared: Arc<Shared>,
    state: Box<dyn Answerer>,
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
    type Msg = AnswererInput;
    type State = AnswererShell;
    type Arguments = AnswererArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<AnswererInput>,
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
        shell.state.start(&mut Replies::new(&mut shell.out, shell.index));
        let mut host = Dies { dead: false };
        execute(&shell.shared, &mut shell.out, &mut shell.timers, &mut host).await;
        if host.dead {
            myself.stop(Some("crash".into()));
        }
        Ok(shell)
    }

    async fn handle(
        &self,
        myself: ActorRef<AnswererInput>,
        msg: AnswererInput,
        shell: &mut AnswererShell,
    ) -> Result<(), ActorProcessingErr> {
        shell.out.reset(shell.shared.now(), None);
        let (state, out, index) = (&mut shell.state, &mut shell.out, shell.index);
        let ok = guarded(&shell.shared, || state.handle(msg, &mut Replies::new(out, index)));
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
        _myself: ActorRef<AnswererInput>,
        shell: &mut AnswererShell,
    ) -> Result<(), ActorProcessingErr> {
        shell.timers.cancel_all(&shell.shared);
        shell.shared.answerer_died(shell.index);
        Ok(())
    }
}
