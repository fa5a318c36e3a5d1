#!/usr/bin/env python3
"""Plants realistic bugs in the broker (and the simulator's executor and the
projection), one at a time, and checks that the simulator catches each on the
repo's own scenarios, two ways: a seed sweep with `--invariants-only` (as a user
who writes no expectations runs them), and `explore --all` (every delivery order
at each instant, expectations included) of every scenario small enough. Prints,
per bug, which command caught it (the first scenario that failed each way and
what it named), or MISSED; then how many the sweep caught alone. Exits 1 if a bug
is missed both ways. Restores every file it touched.

Usage (from the project root): scripts/plant-bugs.py [SEEDS] [--only TEXT] [--no-explore]
(SEEDS default 0..100; --only plants the bugs whose description contains TEXT;
--no-explore skips the explorations). Takes a while: one release build per bug."""
import json, os, subprocess, sys

ARGS = sys.argv[1:]
ONLY = ARGS[ARGS.index("--only") + 1] if "--only" in ARGS else None
EXPLORE = "--no-explore" not in ARGS
POSITIONAL = [a for i, a in enumerate(ARGS) if not a.startswith("--") and (i == 0 or ARGS[i - 1] != "--only")]
SEEDS = POSITIONAL[0] if POSITIONAL else "0..100"
BUGS = [
    ("accept from any answerer while the call is open (the offeree check is off)",
     "src/broker/waterfall.rs", "if offered != Some(Some(answerer)) {", "if offered.is_none() {"),
    ("a late accept after its offer timed out is taken",
     "src/broker/waterfall.rs", "if offered != Some(Some(answerer)) {",
     "if offered != Some(Some(answerer)) && !self.calls.get(ticket).is_some_and(|c| c.next > answerer) {"),
    ("a hold is accepted one state too late (after the call went pending)",
     "src/broker/settle.rs", "Some(call) if call.phase == Phase::Pending => Some(Refusal::Settled),", ""),
    ("a batch from a non-owner settles the call",
     "src/broker/settle.rs", "Some(call) if call.owner != Some(answerer) => Err(Refusal::NotOwner),", ""),
    ("a hold does not stop the window (its timer runs on and expiry ignores the hold)",
     "src/broker/settle.rs", "if call.held || call.phase != Phase::Waiting", "if call.phase != Phase::Waiting"),
    ("(same bug, second half)", "src/broker/settle.rs",
     "if let Some(timer) = call.window.take() {\n                    out.cancel(timer);\n                }", ""),
    ("a request whose turn fired in flight is offered",
     "src/broker/mod.rs", "Identity::Root(_) if turn.chain().iter().any(|t| self.fired.contains(t)) => Some((",
     "Identity::Root(_) if false => Some(("),
    ("a turn signal misses the turns derived from it",
     "src/broker/turn_index.rs", "walked.push(next);\n            stack.extend(",
     "walked.push(next);\n            if next == turn {\n                continue;\n            }\n            stack.extend("),
    ("a hold outlives its holder",
     "src/broker/waterfall.rs", "if held && call.phase == Phase::Waiting {", "if false && held {"),
    ("a death notice overtakes a message the answerer queued before dying",
     "src/sim/engine/world.rs", "self.queue.send(Addr::Answerer(index), died, self.now());", "self.queue.send(Addr::Driver, died, self.now());"),
    ("a parent runs a step because a child ended of a turn signal that has not reached the parent yet",
     "src/agent/mod.rs", "fired.filter(|t| self.turn.fired_by(*t))", "fired.filter(|_| false)"),
    ("a decided user message is not redelivered after a restart",
     "src/sim/engine/world.rs", "state.redeliver(call_id, message, &mut self.out);", "let _ = (call_id, message, &state);"),
    # Liveness (issue #21): bugs that break no safety rule, only leave something waiting.
    ("an explicit cancel_call leaves a pending call open",
     "src/broker/mod.rs", "if let Some(ticket) = self.calls.ticket_of(&call_id) {",
     "if let Some(ticket) = self.calls.ticket_of(&call_id).filter(|t| self.calls.get(*t).is_some_and(|c| c.phase == Phase::Waiting)) {"),
    ("an explicit cancel_call of a blocking call does not abort it",
     "src/broker/mod.rs", "if let Some(ticket) = self.calls.ticket_of(&call_id) {",
     "if let Some(ticket) = self.calls.ticket_of(&call_id).filter(|t| self.calls.get(*t).is_some_and(|c| c.phase == Phase::Pending)) {"),
    ("calls owned by an answerer that dies wait on it instead of failing over",
     "src/broker/calls.rs", ".filter(|(_, c)| c.owner == Some(answerer) || c.offered == Some(answerer))",
     ".filter(|(_, c)| c.offered == Some(answerer))"),
    ("a pending call withdrawn for NO_ANSWERER is withdrawn without its agent being told",
     "src/broker/settle.rs", "call_id: call.call_id,\n        message,\n    };",
     "call_id: call.call_id,\n        message: message.filter(|m| !m.contains(\"pending_question_withdrawn\")),\n    };"),
    ("a user message received before a process loss is delivered again after the restart",
     "src/projection.rs", "q.delivered = true;\n            self.unreceived.remove(call_id);", "q.delivered = true;"),
    ("a stopped agent's waiting (-1) calls are left open",
     "src/broker/calls.rs", ".is_some_and(|c| c.agent == agent))", ".is_some_and(|c| c.agent == agent && c.phase == Phase::Pending))"),
    ("a pending result names the agent where the contract puts the callId",
     "src/broker/settle.rs", "let result = ToolResult::pending(&call.call_id);", "let result = ToolResult::pending(&call.agent_name);"),
    ("an offer goes to an answerer whose death the broker handled",
     "src/broker/waterfall.rs", "            if !slot.alive {\n                continue;\n            }\n", ""),
    ("a declined offer is not offered on down the waterfall",
     "src/broker/waterfall.rs", "            DeclineReason::Declined,\n            out.mbox(),\n        ));\n        self.offer_next(ticket, out);",
     "            DeclineReason::Declined,\n            out.mbox(),\n        ));"),
]

def scenarios():
    return sorted("scenarios/" + f for f in os.listdir("scenarios") if f.endswith(".json"))

def caught():
    for scenario in scenarios():
        seeds = "0..3" if "/load-" in scenario and "load-small" not in scenario else SEEDS
        out = subprocess.run(["target/release/asksim", "sweep", scenario, "--seeds", seeds,
                              "--invariants-only", "--json"], capture_output=True, text=True)
        if out.returncode == 0:
            continue
        report = json.loads(out.stdout)
        failure = report["failed"][0]
        what = [v["invariant"] for v in failure["violations"]] or [failure.get("limit") or failure.get("crashed")]
        return f"{scenario} (seed {failure['seed']}): {', '.join(sorted(set(map(str, what))))}"
    return None

def explored():
    """The first scenario with an order that fails under `explore --all`."""
    for scenario in scenarios():
        if "load" in scenario:
            continue
        out = subprocess.run(["target/release/asksim", "explore", scenario, "--all", "--max", "20000",
                              "--json"], capture_output=True, text=True)
        if out.returncode == 0:
            continue
        failure = json.loads(out.stdout)["first_failure"]
        what = ([v["invariant"] for v in failure["violations"]] or failure["failures"][:1]
                or [failure.get("limit") or failure.get("crashed")])
        return f"{scenario} (schedule {failure['schedule']}): {', '.join(sorted(set(map(str, what))))[:120]}"
    return None

def bugs():
    """Each bug with its edits: a "(same bug…)" row adds an edit to the one before."""
    grouped = []
    for description, path, old, new in BUGS:
        if description.startswith("(same bug"):
            grouped[-1][1].append((path, old, new))
        else:
            grouped.append((description, [(path, old, new)]))
    return grouped

def main():
    results = []
    for description, edits in bugs():
        if ONLY and ONLY not in description:
            continue
        saved = {}
        for path, old, new in edits:
            text = saved.setdefault(path, open(path).read()) if path not in saved else open(path).read()
            assert text.count(old) == 1, f"{path}: {old!r} found {text.count(old)} times"
            open(path, "w").write(text.replace(old, new))
        try:
            build = subprocess.run(["cargo", "build", "--release", "--bin", "asksim"], capture_output=True, text=True)
            if build.returncode == 0:
                swept = caught()
                explored_ = explored() if EXPLORE else None
            else:
                swept = explored_ = "BUILD FAILED: " + build.stderr[-300:]
        finally:
            for path, text in saved.items():
                open(path, "w").write(text)
        verdict = swept or explored_
        results.append((description, swept, verdict))
        print(f"{'CAUGHT' if verdict else 'MISSED'}  {description}\n    sweep:   {swept or 'missed'}"
              f"\n    explore: {explored_ or ('missed' if EXPLORE else 'not run')}", flush=True)
    subprocess.run(["cargo", "build", "--release", "--bin", "asksim"], capture_output=True)
    missed = [d for d, _, v in results if not v]
    by_sweep = [d for d, s, _ in results if s]
    print(f"{len(results) - len(missed)} of {len(results)} planted bugs caught by a sweep or an exploration of scenarios/;"
          f" {len(by_sweep)} by the invariants-only sweep alone")
    for d, s, v in results:
        if v and not s:
            print(f"    caught by exploration only: {d}")
    sys.exit(1 if missed else 0)

if __name__ == "__main__":
    main()
