#!/usr/bin/env python3
"""An answerer in Python (standard library only) to adapt for a real surface: a
chat bot, a web card backend. It speaks the answerer role of PROTOCOL.md on
stdin/stdout, so asksim can put it in a scenario's waterfall and judge the broker
against it, or judge it against the broker:

    {"name": "tg", "process": ["python3", "examples/external/answerer.py"]}

The part to adapt is `Surface`: how a question is shown to a person and what the
person does. Here the "person" is simulated (deterministically, from the seed
asksim gives): it reads the card for a while, starts typing (a hold: the
caller's window stops counting), and taps the recommended option, or types its
own text when no option fits. A real bot would post the card in `show`, and turn
the person's tap into the same `submit` when it comes; under asksim every wait is
a timer, so runs replay from a seed.

Options (all optional): --accepts keyed|all (which calls it takes, default all),
--agents PREFIX (only calls from agents whose name starts so), --read S (seconds before it starts typing, default 1), --think S (seconds to
answer, default 4), --custom TEXT (answer with this text instead of a label).
"""

import argparse
import json
import random
import sys

PROTOCOL = 1
NS = 1_000_000_000


class Surface:
    """Where a real answerer talks to a person. Replace these three methods."""

    def __init__(self, args, seed):
        self.args = args
        self.random = random.Random(seed)

    def wants(self, offer):
        """Whether this surface takes the request (keyed: only timed calls)."""
        if not offer["agent"].startswith(self.args.agents):
            return False
        return self.args.accepts == "all" or offer["callId"] is not None

    def show(self, offer):
        """The card a person would see; a bot would send it here."""
        lines = [f"[{offer['callId'] or 'legacy call'} from {offer['agent']}]"]
        for q in offer["questions"]:
            lines.append(f"{q['header']}: {q['question']}")
            lines += [f"  ({n + 1}) {o['label']}" for n, o in enumerate(q["options"])]
        return "\n".join(lines)

    def person(self, offer):
        """What the person does: seconds until they start typing, seconds until
        they send, and the batch they send."""
        read_s = self.args.read * (0.5 + self.random.random())
        think_s = self.args.think * (0.5 + self.random.random())
        batch = []
        for q in offer["questions"]:
            if self.args.custom:
                batch.append({"id": q["id"], "custom": self.args.custom})
            else:
                batch.append({"id": q["id"], "selected": [q["options"][0]["label"]]})
        return read_s, read_s + think_s, batch


class Answerer:
    """The protocol side: offers in, accept/decline/hold/submit out, timers for
    every wait. Nothing here needs changing for another surface."""

    def __init__(self, args, config):
        self.name = config["name"]
        self.surface = Surface(args, config["seed"])
        self.work = {}          # ticket -> {"batch", "timers": [ids]}
        self.timers = {}        # timer id -> (ticket, what)
        self.next_timer = 0
        self.out = []

    def timer(self, ticket, what, after_s):
        self.next_timer += 1
        self.timers[self.next_timer] = (ticket, what)
        self.work[ticket]["timers"].append(self.next_timer)
        self.out.append({"start_timer": {"id": self.next_timer, "after_ns": round(after_s * NS)}})

    def forget(self, ticket):
        for timer in self.work.pop(ticket, {"timers": []})["timers"]:
            if self.timers.pop(timer, None) is not None:
                self.out.append({"cancel_timer": {"id": timer}})

    def on_offer(self, m):
        ticket = m["ticket"]
        if not self.surface.wants(m):
            self.out.append({"decline": {"ticket": ticket}})
            return
        print(self.surface.show(m), file=sys.stderr)
        self.out.append({"accept": {"ticket": ticket}})
        typing_s, send_s, batch = self.surface.person(m)
        self.work[ticket] = {"batch": batch, "timers": []}
        self.timer(ticket, "hold", typing_s)
        self.timer(ticket, "submit", send_s)

    def on_timer(self, m):
        ticket, what = self.timers.pop(m["id"])
        if ticket not in self.work:
            return
        if what == "hold":
            self.out.append({"hold": {"ticket": ticket}})
        else:
            batch = self.work[ticket]["batch"]
            self.forget(ticket)
            self.out.append({"submit": {"ticket": ticket, "batch": batch}})

    def on_withdraw(self, m):
        self.forget(m["ticket"])

    def on_refused(self, m):
        # A hold that came too late is refused; the answer still goes out.
        print(f"{self.name}: {m['what']} of ticket {m['ticket']} refused: {m['reason']}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accepts", choices=["keyed", "all"], default="all")
    parser.add_argument("--agents", default="")
    parser.add_argument("--read", type=float, default=1.0)
    parser.add_argument("--think", type=float, default=4.0)
    parser.add_argument("--custom", default=None)
    args = parser.parse_args()
    answerer = None
    for line in sys.stdin:
        m = json.loads(line)
        if m["msg"] == "hello":
            answerer = Answerer(args, m["config"])
            reply = {"protocol": PROTOCOL, "do": []}
        else:
            answerer.out = []
            getattr(answerer, "on_" + m["msg"])(m)
            reply = {"do": answerer.out}
        sys.stdout.write(json.dumps(reply, separators=(",", ":")) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
