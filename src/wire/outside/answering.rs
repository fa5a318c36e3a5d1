//! The line a broker's reply answers, and what that line allows and owes
//! (PROTOCOL.md 3.3). A verdict is about one thing an answerer sent, so it
//! belongs in the reply to that line and nowhere else; a registration's
//! verdicts (`registered`, and `spawned` to a child's owner, with the same
//! `error`) in the reply to its `register`; a `turn_fired` in the reply to the
//! `cancel_turn` that fired that id (or to the `register` of an agent born
//! under it); a withdrawal for `cancel_call`, `agent_stopped` or
//! `not_restorable` in the reply to that `cancel_call`, that `stop` or that
//! `restore`. An effect anywhere else is something nobody asked for: the
//! agent or answerer it reaches would act on a decision about nothing (a
//! script ended by a signal that never fired, a call owned by an answerer that
//! never accepted, a withdrawal that hides the `NO_ANSWERER` message).
//!
//! What a line owes: `registered` (and `spawned`) to a `register`, a verdict
//! to an `accept` or a `hold`, and `turn_fired` to every live agent a fired id
//! reaches (the view counts them per turn id) and to an agent registered under
//! a fired turn: left out, an owner's spawn or an agent's script waits for good
//! or runs on.
//!
//! Each check is O(1), but `turn_fired`'s reads the agent's turn chain, as the
//! broker itself must to decide it.

use std::collections::HashSet;

use crate::protocol::{
    AgentId, AnswererIx, BrokerMsg, CallId, DeclineReason, Name, Sent, Ticket, Turn, TurnId, WithdrawReason,
};
use crate::wire::broker_view::View;
use crate::wire::common::{turn_chain, turn_id_text};

/// The line at hand, as far as the rules need it.
#[derive(Debug)]
enum Line {
    Register {
        agent: AgentId,
        name: Name,
        owner: Option<AgentId>,
        turn: Turn,
    },
    Accept(Ticket, AnswererIx),
    Hold(Ticket, AnswererIx),
    Decline(Ticket, AnswererIx),
    Submit(Ticket, AnswererIx),
    Died(AnswererIx),
    Timer,
    /// The id it fires; `None` if an id of its turn had fired already.
    CancelTurn(Option<TurnId>),
    CancelCall(CallId),
    Stop(AgentId),
    Restore(CallId),
    Other,
}

/// A broker's decision about what an answerer sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `accepted`.
    Accepted,
    /// `held`.
    Held,
    /// `declined`, for this reason.
    Declined(DeclineReason),
    /// `refused`, of this.
    Refused(Sent),
}

impl Verdict {
    fn effect(self) -> String {
        match self {
            Verdict::Accepted => "`accepted`".into(),
            Verdict::Held => "`held`".into(),
            Verdict::Declined(reason) => format!("`declined` (reason `{}`)", reason.as_str()),
            Verdict::Refused(what) => format!("`refused` (what `{}`)", what.as_str()),
        }
    }

    /// The line it must answer.
    fn answers(self) -> &'static str {
        match self {
            Verdict::Accepted | Verdict::Refused(Sent::Accept) => "that answerer's `accept` of that ticket",
            Verdict::Held | Verdict::Refused(Sent::Hold) => "that answerer's `hold` of that ticket",
            Verdict::Refused(Sent::Submit) => "that answerer's `submit` of that ticket",
            Verdict::Declined(DeclineReason::Declined) => "that answerer's `decline` of that ticket",
            Verdict::Declined(DeclineReason::OfferTimeout) => "a `timer` (an offer timer firing)",
            Verdict::Declined(DeclineReason::Dead) => "that answerer's `answerer_died`",
        }
    }
}

/// What the reply to one line has said so far, against what the line allows
/// and owes.
#[derive(Debug)]
pub struct Answering {
    line: Line,
    /// A verdict on the accept, hold, decline or submit at hand was given.
    verdict: bool,
    /// The `error` of the `registered` given, if one was.
    registered: Option<Option<String>>,
    /// The `error` of the `spawned` given, if one was.
    spawned: Option<Option<String>>,
    /// The agents told `turn_fired` so far.
    told: HashSet<AgentId>,
}

impl Answering {
    /// A reply to nothing yet (before the first line).
    pub fn none() -> Answering {
        Answering::on(Line::Other)
    }

    fn on(line: Line) -> Answering {
        Answering {
            line,
            verdict: false,
            registered: None,
            spawned: None,
            told: HashSet::new(),
        }
    }

    /// The reply to `msg`, which `view` has not taken in yet (a `cancel_turn`
    /// fires its id only if no id of its turn fired before).
    pub fn to(msg: &BrokerMsg, view: &View) -> Answering {
        Answering::on(match msg {
            BrokerMsg::Register(reg) => Line::Register {
                agent: reg.agent,
                name: reg.name.clone(),
                owner: reg.owner,
                turn: reg.turn.clone(),
            },
            BrokerMsg::Accept { ticket, answerer } => Line::Accept(*ticket, *answerer),
            BrokerMsg::Hold { ticket, answerer } => Line::Hold(*ticket, *answerer),
            BrokerMsg::Decline { ticket, answerer } => Line::Decline(*ticket, *answerer),
            BrokerMsg::Submit { ticket, answerer, .. } => Line::Submit(*ticket, *answerer),
            BrokerMsg::AnswererDied { answerer } => Line::Died(*answerer),
            BrokerMsg::OutsideTimer { .. } => Line::Timer,
            BrokerMsg::CancelTurn { turn, .. } => {
                Line::CancelTurn((!turn.chain().iter().any(|t| view.fired(*t))).then(|| turn.id()))
            }
            BrokerMsg::CancelCall { call_id } => Line::CancelCall(call_id.clone()),
            BrokerMsg::Stop(agent) => Line::Stop(*agent),
            BrokerMsg::Restore(restored) => Line::Restore(restored.call_id.clone()),
            _ => Line::Other,
        })
    }

    /// `registered` for `agent`: exactly one, in the reply to its register.
    pub fn registered(&mut self, agent: AgentId, error: Option<&str>) -> Result<(), String> {
        // A second recorded the agent's spawn twice; one elsewhere, a spawn
        // that was never asked for.
        match &self.line {
            Line::Register { agent: asked, .. } if *asked == agent && self.registered.is_none() => {
                self.registered = Some(error.map(str::to_owned));
                self.same_verdict()
            }
            _ => Err(format!(
                "`registered` for agent {agent} outside the reply to its register, or a second one"
            )),
        }
    }

    /// `spawned` to `owner` about `child`: exactly one in the reply to the
    /// register of a child, to its owner, about it; none anywhere else.
    pub fn spawned(&mut self, owner: AgentId, child: &str, error: Option<&str>) -> Result<(), String> {
        let Line::Register {
            agent,
            name,
            owner: Some(asked),
            ..
        } = &self.line
        else {
            return Err(format!(
                "`spawned` to agent {owner} about {child:?} outside the reply to the `register` of a child \
                 (asksim registered no child {child:?} of agent {owner} in this line)"
            ));
        };
        if (*asked, &**name) != (owner, child) {
            return Err(format!(
                "`spawned` to agent {owner} about {child:?} in the reply to the register of agent {agent} \
                 ({name:?}), a child of agent {asked}: it goes to that owner, about that child"
            ));
        }
        if self.spawned.is_some() {
            return Err(format!("a second `spawned` to agent {owner} about {child:?}"));
        }
        self.spawned = Some(error.map(str::to_owned));
        self.same_verdict()
    }

    /// `registered` and `spawned` tell one verdict, the same to both.
    fn same_verdict(&self) -> Result<(), String> {
        let (Some(registered), Some(spawned), Line::Register { name, owner, .. }) =
            (&self.registered, &self.spawned, &self.line)
        else {
            return Ok(());
        };
        if registered == spawned {
            return Ok(());
        }
        let shown = |e: &Option<String>| e.as_deref().map_or("null".to_owned(), |e| format!("{e:?}"));
        Err(format!(
            "`spawned` tells agent {} error {} about {name:?}, `registered` tells the child error {}: \
             they carry the same verdict",
            owner.unwrap_or_default(),
            shown(spawned),
            shown(registered)
        ))
    }

    /// A verdict on what `name` (`answerer`) sent of `ticket`: only in the
    /// reply to that line, and one for an accept, hold, decline or submit.
    pub fn verdict(
        &mut self,
        verdict: Verdict,
        ticket: Ticket,
        answerer: AnswererIx,
        name: &str,
    ) -> Result<(), String> {
        let about = |t: &Ticket, a: &AnswererIx| (*t, *a) == (ticket, answerer);
        let on_line = match (verdict, &self.line) {
            (Verdict::Accepted | Verdict::Refused(Sent::Accept), Line::Accept(t, a))
            | (Verdict::Held | Verdict::Refused(Sent::Hold), Line::Hold(t, a))
            | (Verdict::Refused(Sent::Submit), Line::Submit(t, a))
            | (Verdict::Declined(DeclineReason::Declined), Line::Decline(t, a)) => about(t, a),
            // Several calls may time out or lose a dead answerer at once.
            (Verdict::Declined(DeclineReason::OfferTimeout), Line::Timer) => return Ok(()),
            (Verdict::Declined(DeclineReason::Dead), Line::Died(a)) if *a == answerer => return Ok(()),
            _ => false,
        };
        if !on_line {
            return Err(format!(
                "{} of ticket {ticket} for {name:?} outside the reply to {} (nobody sent what it decides)",
                verdict.effect(),
                verdict.answers()
            ));
        }
        if std::mem::replace(&mut self.verdict, true) {
            return Err(format!(
                "{} of ticket {ticket} for {name:?}: a second verdict on one line",
                verdict.effect()
            ));
        }
        Ok(())
    }

    /// `turn_fired` of `id` to `agent`: in the reply to the `cancel_turn` that
    /// fired `id`, to a live agent whose current turn holds it; or in the reply
    /// to the agent's own `register`, for a fired id of its turn. Once per
    /// agent in a reply.
    pub fn turn_fired(&mut self, agent: AgentId, id: TurnId, view: &View) -> Result<(), String> {
        self.reached(agent, id, view)?;
        match self.told.insert(agent) {
            true => Ok(()),
            false => Err(format!(
                "a second `turn_fired` to agent {agent} (of {:?}) in one reply",
                turn_id_text(id)
            )),
        }
    }

    /// Whether firing `id` in the line at hand reaches `agent`.
    fn reached(&self, agent: AgentId, id: TurnId, view: &View) -> Result<(), String> {
        let text = turn_id_text(id);
        match &self.line {
            Line::Register {
                agent: asked, turn, ..
            } if *asked == agent => match turn.fired_by(id) && view.fired(id) {
                true => Ok(()),
                false => Err(format!(
                    "`turn_fired` of {text:?} to agent {agent} in the reply to its register: its turn {:?} \
                     holds no such id that fired",
                    turn_chain(turn)
                )),
            },
            Line::CancelTurn(Some(fired)) if *fired == id => match view.agents.get(&agent) {
                Some(told) if told.live && (told.turn.outermost() == id || told.turn.fired_by(id)) => Ok(()),
                Some(told) if told.live => Err(format!(
                    "`turn_fired` of {text:?} to agent {agent}, whose current turn {:?} does not derive from it",
                    turn_chain(&told.turn)
                )),
                _ => Err(format!(
                    "`turn_fired` of {text:?} to agent {agent}, which is not live"
                )),
            },
            _ if !view.fired(id) => Err(format!(
                "`turn_fired` of {text:?} to agent {agent}: no `cancel_turn` fired that turn in this life"
            )),
            _ => Err(format!(
                "`turn_fired` of {text:?} to agent {agent} outside the reply to the `cancel_turn` that fired it \
                 (or to the agent's register)"
            )),
        }
    }

    /// A withdrawal of `call_id` (asked by `caller`) for `reason`: `NO_ANSWERER`
    /// in any reply, every other reason only in the reply to what it names.
    pub fn withdrawn(&self, reason: WithdrawReason, call_id: &str, caller: AgentId) -> Result<(), String> {
        let ok = match (reason, &self.line) {
            (WithdrawReason::NoAnswerer, _) => true,
            (WithdrawReason::CancelCall, Line::CancelCall(c))
            | (WithdrawReason::NotRestorable, Line::Restore(c)) => **c == *call_id,
            (WithdrawReason::AgentStopped, Line::Stop(a)) => *a == caller,
            _ => false,
        };
        match (ok, reason) {
            (true, _) | (_, WithdrawReason::NoAnswerer) => Ok(()),
            (_, WithdrawReason::CancelCall) => Err(format!(
                "{call_id} withdrawn for `cancel_call` outside the reply to a `cancel_call` of it (asksim cancelled \
                 nothing: a pending call nobody can answer is withdrawn for `NO_ANSWERER`, with its message)"
            )),
            (_, WithdrawReason::AgentStopped) => Err(format!(
                "{call_id} withdrawn for `agent_stopped` outside the reply to the `stop` of its agent {caller}"
            )),
            (_, WithdrawReason::NotRestorable) => Err(format!(
                "{call_id} withdrawn as `not_restorable` outside the reply to its `restore`"
            )),
        }
    }

    /// The `turn_fired` a line owes (PROTOCOL.md 4.2, 4.8): to every live agent
    /// a fired id reaches (its script ends), and to an agent registered under a
    /// fired turn; to none refused its registration.
    fn owed_turn_fired(&self, view: &View) -> Result<(), String> {
        match &self.line {
            Line::CancelTurn(Some(id)) if self.told.len() != view.reaches(*id) => Err(format!(
                "the reply to the cancel_turn that fired {:?} tells {} of the {} live agents whose current turn \
                 holds it (`turn_fired`): each must hear it, its script ends",
                turn_id_text(*id),
                self.told.len(),
                view.reaches(*id)
            )),
            Line::Register { agent, turn, .. } => {
                let fired = turn.chain().iter().find(|t| view.fired(**t));
                match (&self.registered, fired, self.told.contains(agent)) {
                    (Some(None), Some(id), false) => Err(format!(
                        "the reply to register of agent {agent} gives it no `turn_fired`: its turn holds {:?}, \
                         which fired",
                        turn_id_text(*id)
                    )),
                    (Some(Some(_)), _, true) => Err(format!(
                        "`turn_fired` to agent {agent}, whose registration was refused"
                    )),
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// What the line owed and the reply did not give.
    pub fn owed(&self, view: &View) -> Result<(), String> {
        self.owed_turn_fired(view)?;
        match &self.line {
            Line::Register { agent, .. } if self.registered.is_none() => Err(format!(
                "the reply to register gives agent {agent} no `registered`"
            )),
            Line::Register {
                agent,
                name,
                owner: Some(owner),
                ..
            } if self.spawned.is_none() => Err(format!(
                "the reply to register of agent {agent} ({name:?}, a child of agent {owner}) gives its owner no \
                 `spawned` (agent {owner} waits for it)"
            )),
            Line::Accept(ticket, _) if !self.verdict => Err(format!(
                "the reply to an accept of ticket {ticket} is neither `accepted` nor a refused accept"
            )),
            Line::Hold(ticket, _) if !self.verdict => Err(format!(
                "the reply to a hold of ticket {ticket} is neither `held` nor a refused hold"
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::Out;
    use crate::protocol::Registration;

    fn id(agent: AgentId, n: u32) -> TurnId {
        TurnId { agent, n }
    }

    fn register(agent: AgentId, owner: Option<AgentId>, turn: Turn) -> BrokerMsg {
        BrokerMsg::Register(Box::new(Registration {
            agent,
            name: format!("a{agent}").into(),
            owner,
            lineage: None,
            turn,
        }))
    }

    fn cancel_root() -> BrokerMsg {
        BrokerMsg::CancelTurn {
            agent: 1,
            turn: Turn::root(id(1, 1)),
        }
    }

    /// A view where agents 1 (root, turn 1.1) and 2 (its child, 1.1 / 2.1)
    /// are live, then each of `lines` taken in; the reply to the last.
    fn answering(lines: Vec<BrokerMsg>) -> (Answering, View) {
        let mut view = View::new(vec!["web".into()]);
        let mut out = Out::new(0);
        let root = Turn::root(id(1, 1));
        for (agent, msg) in [
            (1, register(1, None, root.clone())),
            (2, register(2, Some(1), root.derive(id(2, 1)))),
        ] {
            view.input(&msg, &mut out);
            view.registered(agent, true);
        }
        let mut answering = Answering::none();
        for line in lines {
            answering = Answering::to(&line, &view);
            view.input(&line, &mut out);
        }
        (answering, view)
    }

    #[test]
    fn a_turn_fired_goes_where_the_fired_turn_reaches_and_everywhere_it_does() {
        let (mut fired, view) = answering(vec![cancel_root()]);
        let other = fired.turn_fired(2, id(2, 1), &view).unwrap_err();
        assert!(other.contains("no `cancel_turn` fired that turn"), "{other}");
        fired.told.clear();
        assert_eq!(fired.turn_fired(1, id(1, 1), &view), Ok(()));
        let short = fired.owed(&view).unwrap_err();
        assert!(
            short.contains("tells 1 of the 2 live agents whose current turn holds it"),
            "{short}"
        );
        assert_eq!(fired.turn_fired(2, id(1, 1), &view), Ok(()));
        assert_eq!(fired.owed(&view), Ok(()));
        let twice = fired.turn_fired(2, id(1, 1), &view).unwrap_err();
        assert!(twice.contains("a second `turn_fired` to agent 2"), "{twice}");
        // Fired in an earlier line: its reply was the place.
        let (mut later, _) = answering(vec![cancel_root(), BrokerMsg::Stop(2)]);
        let late = later.turn_fired(1, id(1, 1), &view).unwrap_err();
        assert!(
            late.contains("outside the reply to the `cancel_turn` that fired it"),
            "{late}"
        );
        // An agent at another turn now, or stopped, is not reached, nor counted.
        let new_turn = BrokerMsg::NewTurn {
            agent: 2,
            turn: Turn::root(id(2, 2)),
        };
        let (mut moved, view) = answering(vec![new_turn, cancel_root()]);
        let why = moved.turn_fired(2, id(1, 1), &view).unwrap_err();
        assert!(
            why.contains("whose current turn [\"2.2\"] does not derive from it"),
            "{why}"
        );
        assert_eq!(view.reaches(id(1, 1)), 1);
        let (mut stopped, view) = answering(vec![BrokerMsg::Stop(2), cancel_root()]);
        let gone = stopped.turn_fired(2, id(1, 1), &view).unwrap_err();
        assert!(gone.contains("which is not live"), "{gone}");
        assert_eq!(view.reaches(id(1, 1)), 1);
    }

    /// Born under a fired turn: told so in the reply to its register, unless
    /// its registration is refused.
    #[test]
    fn an_agent_born_under_a_fired_turn_is_told_so() {
        let born = || register(3, Some(1), Turn::root(id(1, 1)).derive(id(3, 1)));
        let (mut reply, view) = answering(vec![cancel_root(), born()]);
        reply.registered(3, None).unwrap();
        let owed = reply.owed(&view).unwrap_err();
        assert!(
            owed.contains("gives it no `turn_fired`: its turn holds \"1.1\""),
            "{owed}"
        );
        let not_held = reply.turn_fired(3, id(3, 1), &view).unwrap_err();
        assert!(not_held.contains("holds no such id that fired"), "{not_held}");
        let (mut reply, view) = answering(vec![cancel_root(), born()]);
        assert_eq!(reply.turn_fired(3, id(1, 1), &view), Ok(()));
        reply.registered(3, Some("duplicate_name")).unwrap();
        let refused = reply.owed(&view).unwrap_err();
        assert!(refused.contains("whose registration was refused"), "{refused}");
    }

    #[test]
    fn verdicts_answer_what_an_answerer_sent_once() {
        let (mut died, _) = answering(vec![BrokerMsg::AnswererDied { answerer: 0 }]);
        let dead = Verdict::Declined(DeclineReason::Dead);
        assert_eq!(died.verdict(dead, 1, 0, "web"), Ok(()));
        assert_eq!(died.verdict(dead, 2, 0, "web"), Ok(()));
        let timed_out = died.verdict(Verdict::Declined(DeclineReason::OfferTimeout), 1, 0, "web");
        assert!(timed_out.unwrap_err().contains("outside the reply to a `timer`"));
        let (mut declined, _) = answering(vec![BrokerMsg::Decline {
            ticket: 4,
            answerer: 0,
        }]);
        let said = Verdict::Declined(DeclineReason::Declined);
        assert!(declined.verdict(said, 5, 0, "web").is_err());
        assert_eq!(declined.verdict(said, 4, 0, "web"), Ok(()));
        let twice = declined.verdict(said, 4, 0, "web").unwrap_err();
        assert!(twice.contains("a second verdict on one line"), "{twice}");
        let (mut submitted, _) = answering(vec![BrokerMsg::Submit {
            ticket: 4,
            answerer: 0,
            batch: std::sync::Arc::new(serde_json::json!([])),
        }]);
        assert!(
            submitted
                .verdict(Verdict::Refused(Sent::Hold), 4, 0, "web")
                .is_err()
        );
        assert_eq!(
            submitted.verdict(Verdict::Refused(Sent::Submit), 4, 0, "web"),
            Ok(())
        );
    }

    #[test]
    fn a_withdrawal_is_for_what_asksim_asked_or_for_no_answerer() {
        let (stop, _) = answering(vec![BrokerMsg::Stop(2)]);
        assert_eq!(stop.withdrawn(WithdrawReason::AgentStopped, "a2/1", 2), Ok(()));
        assert_eq!(stop.withdrawn(WithdrawReason::NoAnswerer, "a1/1", 1), Ok(()));
        let other = stop
            .withdrawn(WithdrawReason::AgentStopped, "a1/1", 1)
            .unwrap_err();
        assert!(
            other.contains("outside the reply to the `stop` of its agent 1"),
            "{other}"
        );
        let cancelled = stop.withdrawn(WithdrawReason::CancelCall, "a2/1", 2).unwrap_err();
        assert!(cancelled.contains("asksim cancelled nothing"), "{cancelled}");
        let (cancel, _) = answering(vec![BrokerMsg::CancelCall {
            call_id: "a2/1".into(),
        }]);
        assert_eq!(cancel.withdrawn(WithdrawReason::CancelCall, "a2/1", 2), Ok(()));
        assert!(cancel.withdrawn(WithdrawReason::CancelCall, "a2/2", 2).is_err());
        assert!(
            cancel
                .withdrawn(WithdrawReason::NotRestorable, "a2/1", 2)
                .is_err()
        );
    }
}
