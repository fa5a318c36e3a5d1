#!/usr/bin/env python3
"""A userQuestions broker in Python (standard library only), written from
PROTOCOL.md to show that the protocol is enough to build one, and to be judged by
asksim exactly as asksim's own broker is:

    asksim run scenarios/quickstart.json --broker-cmd "python3 examples/external/broker.py"

It speaks the broker role of PROTOCOL.md on stdin/stdout, one JSON line in, one
JSON line out, and keeps no clock: every wait is a timer asksim fires.

`--bug NAME` plants one realistic race bug (for asksim's own tests, which check
that each is caught; see tests/outside.rs):

    late-accept        takes an accept whose offer already timed out
    hold-after-expiry  takes a hold on a call that already went pending
    answer-after-expiry  answers a call that went pending with a second tool result
    cancel-keeps-call  aborts a waiting call on a turn signal but keeps it open
    fired-request      offers a request whose turn had fired before it arrived
    no-fail-over       does not offer a call again when its owner dies
    hold-outlives-holder  keeps a dead holder's hold (the window never resumes)
    restore-not-offered   restores open questions after a loss but never offers them
"""

import json
import sys

PROTOCOL = 1
PENDING_MESSAGE = (
    "No answer yet. The questions stay open and the user can still answer them. "
    "Continue only with work that does not depend on the answers, and do not assume "
    "any answer. The answers will arrive later as a user message with kind "
    "\"answer_to_pending_question\" and this callId."
)
BUGS = {
    "late-accept", "hold-after-expiry", "answer-after-expiry", "cancel-keeps-call",
    "fired-request", "no-fail-over", "hold-outlives-holder", "restore-not-offered",
}


def compact(value):
    """JSON as asksim writes it: no spaces, non-ASCII as itself."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Agent:
    def __init__(self, agent_id, name, owner, turn):
        self.id = agent_id
        self.name = name
        self.owner = owner          # the owning agent's id while both live
        self.children = set()
        self.root = agent_id
        self.live = True
        self.turn = turn            # list of turn ids, outermost first


class Call:
    def __init__(self, ticket, call_id, agent, schema, questions, questions_text, turn):
        self.ticket = ticket
        self.call_id = call_id
        self.agent = agent          # the caller's id
        self.schema = schema
        self.questions = questions
        self.questions_text = questions_text
        self.turn = turn            # None for a restored (pending) call
        self.pending = turn is None
        self.next_place = 0         # the next waterfall place to offer
        self.offeree = None         # the answerer whose reply is awaited
        self.owner = None
        self.held = False
        self.window_end = None      # t_ns when the window ends, if it has one
        self.window_timer = None
        self.offer_timer = None


class Broker:
    def __init__(self, config, bug):
        self.waterfall = config["answerers"]
        self.offer_timeout_ns = config["offer_timeout_ns"]
        self.open_calls_max = config["limits"]["open_calls_max"]
        self.tree_max = config["limits"]["agents_per_tree_max"]
        self.bug = bug
        self.agents = {}            # id -> Agent, every agent registered in this life
        self.names = set()
        self.tree_sizes = {}        # root id -> agents ever in its tree
        self.fired = set()          # turn ids that fired
        self.calls = {}             # ticket -> Call, the open calls, in ticket order
        self.by_call_id = {}
        self.closed = {}            # ticket -> "settled" | "withdrawn"
        self.dead = set()           # answerer names
        self.tickets = 0
        self.timer_ids = 0
        self.timers = {}            # timer id -> (kind, ticket)
        self.now = 0
        self.out = []

    # -- effects ------------------------------------------------------------

    def do(self, name, **fields):
        self.out.append({name: fields})

    def start_timer(self, kind, ticket, after_ns):
        self.timer_ids += 1
        self.timers[self.timer_ids] = (kind, ticket)
        self.do("start_timer", id=self.timer_ids, after_ns=after_ns)
        return self.timer_ids

    def cancel_timer(self, timer):
        if timer is not None and self.timers.pop(timer, None) is not None:
            self.do("cancel_timer", id=timer)

    def error(self, code, message):
        return {"error": {"code": code, "message": message}}

    # -- the tree -----------------------------------------------------------

    def on_register(self, m):
        agent_id, name, owner = m["agent"], m["name"], m["owner"]
        error = None
        if not name or "/" in name:
            error = "bad_name"
        elif name in self.names or agent_id in self.agents:
            error = "duplicate_name"
        elif owner is not None and not (owner in self.agents and self.agents[owner].live):
            error = "owner_not_live"
        else:
            root = self.agents[owner].root if owner is not None else agent_id
            if self.tree_sizes.get(root, 0) >= self.tree_max:
                error = "LIMIT_EXCEEDED"
        if owner is not None:
            self.do("spawned", owner=owner, child=name, error=error)
        if error is None:
            agent = Agent(agent_id, name, owner, m["turn"])
            agent.root = self.agents[owner].root if owner is not None else agent_id
            self.tree_sizes[agent.root] = self.tree_sizes.get(agent.root, 0) + 1
            if owner is not None:
                self.agents[owner].children.add(agent_id)
            self.agents[agent_id] = agent
            self.names.add(name)
            fired = [t for t in m["turn"] if t in self.fired]
            if fired:
                self.do("turn_fired", agent=agent_id, turn=fired[0])
        self.do("registered", agent=agent_id, error=error)

    def on_stop(self, m):
        agent = self.agents.get(m["agent"])
        if agent is None or not agent.live:
            return
        agent.live = False
        for child in agent.children:
            self.agents[child].owner = None
        agent.children = set()
        if agent.owner is not None:
            self.agents[agent.owner].children.discard(agent.id)
            agent.owner = None
        for call in [c for c in self.calls.values() if c.agent == agent.id]:
            self.abort(call, "the calling agent stopped", "agent_stopped")

    def on_new_turn(self, m):
        agent = self.agents.get(m["agent"])
        if agent is not None and agent.live:
            agent.turn = m["turn"]

    # -- requests and the waterfall -----------------------------------------

    def refuse_request(self, m):
        agent = self.agents.get(m["agent"])
        if agent is None:
            return ("NOT_RUNTIME_ROOT", "the caller is not a live agent of this runtime (unknown or stale handle)")
        if not agent.live:
            return ("NOT_RUNTIME_ROOT", "the caller has stopped and is no longer the live runtime root")
        if agent.owner is not None:
            return ("DELEGATED_CALLER", "this agent is a child owned by another agent and may not ask the "
                    "user; put the unresolved question or decision in your final result")
        if self.bug != "fired-request" and any(t in self.fired for t in m["turn"]):
            return ("ABORTED", "the turn was cancelled before the call settled")
        if len(self.calls) >= self.open_calls_max:
            return ("LIMIT_EXCEEDED", "too many open questions; nothing was queued")
        return None

    def on_request(self, m):
        refusal = self.refuse_request(m)
        if refusal is not None:
            self.do("settled", agent=m["agent"], callId=m["callId"], result=self.error(*refusal))
            return
        call = self.open_call(m["callId"], m["agent"], m["schema"], m["questions"], m["questions_text"], m["turn"])
        if m["window_ns"] is not None:
            call.window_end = self.now + m["window_ns"]
            call.window_timer = self.start_timer("window", call.ticket, m["window_ns"])
        self.offer_next(call)

    def open_call(self, call_id, agent, schema, questions, questions_text, turn):
        self.tickets += 1
        call = Call(self.tickets, call_id, agent, schema, questions, questions_text, turn)
        self.calls[call.ticket] = call
        self.by_call_id[call_id] = call
        return call

    def on_restore(self, m):
        agent = self.agents.get(m["agent"]) if m["agent"] is not None else None
        if m["questions"] is None or agent is None or not agent.live:
            self.do("withdrawn", agent=None, callId=m["callId"], reason="not_restorable", message=None)
            return
        call = self.open_call(m["callId"], agent.id, "timed", m["questions"], m["questions_text"], None)
        if self.bug != "restore-not-offered":
            self.offer_next(call)

    def offer_next(self, call):
        call.offeree = None
        while call.next_place < len(self.waterfall):
            answerer = self.waterfall[call.next_place]
            call.next_place += 1
            if answerer in self.dead:
                continue
            call.offeree = answerer
            call.offer_timer = self.start_timer("offer", call.ticket, self.offer_timeout_ns)
            self.do("offer", answerer=answerer, ticket=call.ticket, callId=call.call_id)
            return
        self.close(call, "no_answerer")

    def closed_reason(self, ticket):
        return self.closed.get(ticket, "unknown")

    def on_accept(self, m):
        ticket, answerer = m["ticket"], m["answerer"]
        call = self.calls.get(ticket)
        taken = call is not None and call.offeree == answerer
        if self.bug == "late-accept" and call is not None and call.owner is None:
            taken = True
        if not taken:
            reason = "offer_timeout" if call is not None else self.closed_reason(ticket)
            self.do("refused", answerer=answerer, ticket=ticket, what="accept", reason=reason)
            return
        self.cancel_timer(call.offer_timer)
        call.offer_timer = None
        call.offeree = None
        call.owner = answerer
        self.do("accepted", answerer=answerer, ticket=ticket)

    def on_decline(self, m):
        call = self.calls.get(m["ticket"])
        if call is None or call.offeree != m["answerer"]:
            return
        self.cancel_timer(call.offer_timer)
        call.offer_timer = None
        self.do("declined", answerer=m["answerer"], ticket=call.ticket, reason="declined")
        self.offer_next(call)

    def on_answerer_died(self, m):
        answerer = m["answerer"]
        if answerer in self.dead:
            return
        self.dead.add(answerer)
        for call in [c for c in self.calls.values() if answerer in (c.owner, c.offeree)]:
            held = call.held and call.owner == answerer
            call.owner = None
            call.offeree = None if call.offeree == answerer else call.offeree
            if self.bug != "hold-outlives-holder":
                call.held = False
            self.cancel_timer(call.offer_timer)
            call.offer_timer = None
            self.do("declined", answerer=answerer, ticket=call.ticket, reason="dead")
            if held and not call.pending and self.bug != "hold-outlives-holder":
                self.release_hold(call)
            if call.ticket in self.calls and self.bug != "no-fail-over":
                self.offer_next(call)

    # -- windows, holds, batches --------------------------------------------

    def go_pending(self, call):
        call.pending = True
        result = {"pending": True, "callId": call.call_id, "message": PENDING_MESSAGE}
        self.do("settled", agent=call.agent, callId=call.call_id, result=result)

    def release_hold(self, call):
        if call.window_end is None:
            return
        if call.window_end <= self.now:
            self.go_pending(call)
        else:
            call.window_timer = self.start_timer("window", call.ticket, call.window_end - self.now)

    def refusal(self, call, ticket, answerer):
        """Why a hold or a batch from `answerer` is refused, before its own rules."""
        if answerer in self.dead:
            return "owner_dead"
        if call is None:
            return self.closed_reason(ticket)
        if call.owner != answerer:
            return "not_owner"
        return None

    def on_hold(self, m):
        ticket, answerer = m["ticket"], m["answerer"]
        call = self.calls.get(ticket)
        reason = self.refusal(call, ticket, answerer)
        if reason is None and call.pending and self.bug != "hold-after-expiry":
            reason = "settled"
        if reason is not None:
            self.do("refused", answerer=answerer, ticket=ticket, what="hold", reason=reason)
            return
        call.held = True
        self.cancel_timer(call.window_timer)
        call.window_timer = None
        self.do("held", answerer=answerer, ticket=ticket)

    def on_submit(self, m):
        ticket, answerer = m["ticket"], m["answerer"]
        call = self.calls.get(ticket)
        reason = self.refusal(call, ticket, answerer)
        if reason is None:
            items, reason = check_batch(call.questions, m["batch"])
            if items is not None:
                self.close(call, "answers", items=items)
                return
        self.do("refused", answerer=answerer, ticket=ticket, what="submit", reason=reason)

    def on_timer(self, m):
        kind, ticket = self.timers.pop(m["id"])
        call = self.calls.get(ticket)
        if call is None:
            return
        if kind == "window":
            call.window_timer = None
            if not call.held and not call.pending:
                self.go_pending(call)
        elif kind == "offer" and call.offeree is not None:
            call.offer_timer = None
            offeree = call.offeree
            self.do("declined", answerer=offeree, ticket=ticket, reason="offer_timeout")
            self.do("withdraw", answerer=offeree, ticket=ticket)
            self.offer_next(call)

    # -- cancellation ---------------------------------------------------------

    def on_cancel_turn(self, m):
        if any(t in self.fired for t in m["turn"]):
            return
        fired = m["turn"][-1]
        self.fired.add(fired)
        for agent_id in sorted(self.agents):
            agent = self.agents[agent_id]
            if agent.live and fired in agent.turn:
                self.do("turn_fired", agent=agent_id, turn=fired)
        for call in [c for c in self.calls.values() if not c.pending and c.turn and fired in c.turn]:
            if self.bug == "cancel-keeps-call":
                self.do("settled", agent=call.agent, callId=call.call_id,
                        result=self.error("ABORTED", "the turn was cancelled before the call settled"))
                continue
            self.abort(call, "the turn was cancelled before the call settled", None)

    def on_cancel_call(self, m):
        call = self.by_call_id.get(m["callId"])
        if call is not None:
            self.abort(call, "the call was cancelled", "cancel_call")

    def abort(self, call, message, reason):
        self.close(call, "aborted", message=message, reason=reason)

    # -- closing a call, once ---------------------------------------------------

    def close(self, call, how, items=None, message=None, reason=None):
        if how == "answers" and call.pending and self.bug == "answer-after-expiry":
            self.do("settled", agent=call.agent, callId=call.call_id, result=self.answers(call, items))
        del self.calls[call.ticket]
        del self.by_call_id[call.call_id]
        self.cancel_timer(call.window_timer)
        self.cancel_timer(call.offer_timer)
        working = call.owner if call.owner is not None else call.offeree
        if how != "answers" and working is not None:
            self.do("withdraw", answerer=working, ticket=call.ticket)
        if not call.pending:
            self.closed[call.ticket] = "settled"
            if how == "answers":
                result = self.answers(call, items)
            elif how == "no_answerer":
                result = self.error("NO_ANSWERER", "no answerer accepted the request")
            else:
                result = self.error("ABORTED", message)
            self.do("settled", agent=call.agent, callId=call.call_id, result=result)
        elif how == "answers":
            self.closed[call.ticket] = "settled"
            text = ('{"kind":"answer_to_pending_question","tool":"ask_user_question","callId":'
                    + compact(call.call_id) + ',"questions":' + call.questions_text
                    + ',"answers":' + compact(items) + "}")
            self.do("late_answer", agent=call.agent, callId=call.call_id, answers=items, message=text)
        else:
            self.closed[call.ticket] = "withdrawn"
            text = None
            if how == "no_answerer":
                reason = "NO_ANSWERER"
                text = compact({"kind": "pending_question_withdrawn", "tool": "ask_user_question",
                                "callId": call.call_id, "reason": "NO_ANSWERER"})
            self.do("withdrawn", agent=call.agent, callId=call.call_id, reason=reason, message=text)

    def answers(self, call, items):
        if call.schema == "timed":
            return {"answers": items}
        rendered = {}
        for question, item in zip(call.questions, items):
            custom, labels = item.get("custom"), item["selected"]
            if custom is not None and not question["multiSelect"]:
                rendered[question["question"]] = custom
            else:
                rendered[question["question"]] = ", ".join(labels + ([custom] if custom is not None else []))
        return {"answers": rendered}

    def status(self):
        return {c.call_id: ("pending" if c.pending else "waiting") for c in self.calls.values()}


def check_batch(questions, batch):
    """The answer items of a valid batch, or (None, why it is not)."""
    if not isinstance(batch, list):
        return None, "the batch must be a list of answer items"
    by_id = {q["id"]: q for q in questions}
    items = {}
    for n, item in enumerate(batch):
        if not isinstance(item, dict):
            return None, f"item {n} is not an object"
        extra = set(item) - {"id", "selected", "custom"}
        if extra:
            return None, f"item {n} has unknown keys {sorted(extra)}"
        qid = item.get("id")
        if not isinstance(qid, str) or qid not in by_id:
            return None, f"item {n} names no question of the call"
        if qid in items:
            return None, f"two items for question {qid!r}"
        question = by_id[qid]
        labels = [o["label"] for o in question["options"]]
        selected = item.get("selected", [])
        if not isinstance(selected, list) or not all(isinstance(s, str) for s in selected):
            return None, f"item {n}: selected must be a list of labels"
        for label in selected:
            if label not in labels:
                return None, f"item {n}: {label!r} is not an option of {qid!r}"
        if len(set(selected)) != len(selected):
            return None, f"item {n}: a label is selected twice"
        if not question["multiSelect"] and len(selected) > 1:
            return None, f"item {n}: {qid!r} takes one label"
        custom = item.get("custom")
        if custom is not None and not isinstance(custom, str):
            return None, f"item {n}: custom must be a string"
        custom = custom or None
        answer = {"id": qid, "selected": [] if custom and not question["multiSelect"] else list(selected)}
        if custom:
            answer["custom"] = custom
        items[qid] = answer
    missing = [q["id"] for q in questions if q["id"] not in items]
    if missing:
        return None, f"no item for question {missing[0]!r}"
    return [items[q["id"]] for q in questions], None


def main():
    bug = None
    if len(sys.argv) == 3 and sys.argv[1] == "--bug" and sys.argv[2] in BUGS:
        bug = sys.argv[2]
    elif len(sys.argv) != 1:
        sys.exit(f"usage: broker.py [--bug {'|'.join(sorted(BUGS))}]")
    broker = None
    handlers = {
        "register": "on_register", "stop": "on_stop", "request": "on_request",
        "accept": "on_accept", "decline": "on_decline", "hold": "on_hold",
        "submit": "on_submit", "timer": "on_timer", "cancel_turn": "on_cancel_turn",
        "new_turn": "on_new_turn", "cancel_call": "on_cancel_call",
        "restore": "on_restore", "answerer_died": "on_answerer_died",
    }
    for line in sys.stdin:
        m = json.loads(line)
        if m["msg"] == "hello":
            broker = Broker(m["config"], bug)
            reply = {"protocol": PROTOCOL, "do": []}
        elif m["msg"] == "status":
            reply = {"open": broker.status(), "do": []}
        else:
            broker.now = m["t_ns"]
            broker.out = []
            getattr(broker, handlers[m["msg"]])(m)
            reply = {"do": broker.out}
        sys.stdout.write(compact(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
