//! SPEC §4.1 through the library: a runtime given a log file writes every event
//! to it as it happens, and `Runtime::recover` goes on from that file after a
//! crash with the guarantees of a process loss (SPEC §3.9): every open timed
//! question pending and re-offered from the top of the waterfall, every open
//! legacy question lost, callId counters continued, every user message decided
//! but not received delivered once, first.
//!
//! Paused time: under `none` and `every` a line is durable when recording
//! returns, so nothing waits on the disk and virtual time stays exact. (Group
//! commit, whose syncs take wall time, is tested on the real clock below.) The
//! crash here is the runtime stopped between two events; a real SIGKILL is
//! `tests/durable_crash.rs`.

use crate::broker_support;
use crate::durable_support;

use asksim::event::EventKind;
use asksim::policy::Policy;
use asksim::tool::ToolConfig;
use asksim::{AnswererSlot, LogConfig, Runtime, SyncPolicy};
use broker_support::{
    LEGACY_ARGS, YES_RESULT, late_yes_message, outcome, pending_result, quiesce, spawn_ask, timed_args,
    within,
};
use durable_support::*;

/// SPEC §4.1: "writes each event to it as it happens": the file is the log, byte
/// for byte, under every policy (group commit on the real clock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_holds_the_log_as_recorded_under_every_policy() {
    let scratch = Scratch::new("as-recorded");
    for (i, sync) in ["group", "group:0", "every", "none"].iter().enumerate() {
        let path = scratch.path(&format!("{i}.jsonl"));
        let runtime = start_logged(
            timed_config(vec![answerer("web", 0.0)]),
            &path,
            sync.parse().unwrap(),
        )
        .await;
        let root = runtime.spawn_root("root", None).await.unwrap();
        for _ in 0..3 {
            assert_eq!(root.ask(&timed_args(Some("30"))).await.result.text, YES_RESULT);
        }
        // A call its own agent refuses (INVALID_ARGUMENTS) is recorded by the
        // agent, not the broker: its result is on disk before `ask` returns too.
        let refused = root.ask(r#"{"questions":[]}"#).await;
        assert!(refused.result.text.contains("INVALID_ARGUMENTS"), "{sync}");
        assert_eq!(
            count(&events_in(&path), "result", "root/4"),
            1,
            "{sync}: the refusal is durable"
        );
        // Every line of the answers the model got is on disk already.
        let on_disk = events_in(&path);
        assert!(
            count(&on_disk, "result", "root/3") == 1,
            "{sync}: the last result is durable"
        );
        runtime.shutdown().await;
        let header = asksim::log::LogHeader::real("library", 0);
        let mut expected = Vec::new();
        asksim::log::write_lines(&mut expected, &header, &runtime.events().snapshot()).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), expected, "{sync}");
    }
}

/// SPEC §4.1: a start on a file that holds a log is refused: that file may be the
/// only record of a crashed runtime's open questions.
#[tokio::test(start_paused = true)]
async fn a_start_on_a_file_holding_a_log_is_refused() {
    let scratch = Scratch::new("refused");
    let path = scratch.path("log.jsonl");
    let runtime = start_logged(timed_config(vec![answerer("web", 1.0)]), &path, SyncPolicy::None).await;
    runtime.shutdown().await;
    let before = file_hash(&path);
    let again = Runtime::start(logged(timed_config(vec![]), &path, SyncPolicy::None)).await;
    let error = again.err().expect("refused").to_string();
    assert!(error.contains("holds a log already"), "{error}");
    assert_eq!(file_hash(&path), before);
}

/// SPEC §3.9 through §4.1: a timed question pending at the crash is pending after
/// recovery, re-offered from the top, and its late answer reaches the resumed
/// agent as a user message; callIds continue.
#[tokio::test(start_paused = true)]
async fn a_pending_question_survives_the_crash_and_its_late_answer_arrives() {
    let scratch = Scratch::new("pending");
    let path = scratch.path("log.jsonl");
    let config = || timed_config(vec![answerer("web", 10.0)]);
    let runtime = start_logged(config(), &path, SyncPolicy::None).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let first = root.ask(&timed_args(Some("1"))).await;
    assert_eq!(first.result.text, pending_result("root/1"));
    runtime.shutdown().await;

    let recovered = recover(config(), &path, SyncPolicy::None).await;
    assert!(recovered.crashed, "the log did not end in a process loss");
    assert_eq!(recovered.reopened, vec!["root/1".to_owned()]);
    assert!(recovered.lost.is_empty());
    let [back] = &recovered.agents[..] else {
        panic!("one agent back");
    };
    assert_eq!((back.handle.name(), back.calls_made), ("root", 1));
    assert_eq!(back.pending, vec!["root/1".to_owned()]);
    within(60.0, back.handle.closed("root/1")).await;
    assert_eq!(
        back.handle.user_messages().await,
        vec![late_yes_message("root/1")]
    );
    let second = back.handle.ask(&timed_args(Some("1"))).await;
    assert_eq!(second.call_id, "root/2", "the callId counter continues");
    recovered.runtime.shutdown().await;

    let events = events_in(&path);
    let loss = events
        .iter()
        .position(|e| matches!(e.kind, EventKind::ProcessLoss { .. }))
        .expect("the crash is a process loss");
    assert!(
        matches!(events[loss + 1].kind, EventKind::Restart { .. }),
        "then the restart"
    );
    assert_eq!(events[loss].t, events[loss - 1].t, "at the last recorded instant");
    assert_eq!(
        count(&events, "offer", "root/1"),
        2,
        "offered again after the crash"
    );
    assert_eq!(count(&events, "late_answer", "root/1"), 1);
    assert_eq!(count(&events, "user_message", "root/1"), 1);
}

/// `RuntimeConfig::events_max` bounds the events kept in memory, never the
/// record: past it every event is still written to the log file and folded into
/// the projection, so a question asked long after the limit survives a crash.
#[tokio::test(start_paused = true)]
async fn the_limit_on_kept_events_never_stops_the_durable_log() {
    let scratch = Scratch::new("past-the-limit");
    let path = scratch.path("log.jsonl");
    let config = || asksim::RuntimeConfig {
        events_max: 3,
        ..timed_config(vec![answerer("web", 10.0)])
    };
    let runtime = start_logged(config(), &path, SyncPolicy::None).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    for _ in 0..2 {
        let pending = root.ask(&timed_args(Some("1"))).await;
        assert!(
            pending.result.text.contains("\"pending\":true"),
            "{}",
            pending.result.text
        );
    }
    let (count, kept) = (runtime.events().len(), runtime.events().snapshot().len());
    assert!(count > 6 && kept == 3, "recorded {count}, kept {kept}");
    assert!(runtime.events().overflowed());
    assert_eq!(events_in(&path).len() as u64, count, "every event is on disk");
    assert_eq!(runtime.events().take().len(), 3);
    runtime.shutdown().await;

    let recovered = recover(config(), &path, SyncPolicy::None).await;
    assert_eq!(recovered.reopened, vec!["root/1".to_owned(), "root/2".to_owned()]);
    let [back] = &recovered.agents[..] else {
        panic!("one agent back");
    };
    within(60.0, back.handle.closed("root/2")).await;
    assert_eq!(
        back.handle.user_messages().await,
        vec![late_yes_message("root/1"), late_yes_message("root/2")]
    );
    recovered.runtime.shutdown().await;
}

/// SPEC §3.9: every open timed question (in its window, held, `-1`) is pending
/// from the restart on and re-offered from the top of the waterfall.
#[tokio::test(start_paused = true)]
async fn questions_in_their_window_held_and_blocking_are_all_reoffered() {
    let scratch = Scratch::new("open-kinds");
    let path = scratch.path("log.jsonl");
    let holder = Policy {
        hold_after_s: Some(0.5),
        ..Policy::recommended_after(20.0)
    };
    let config = || {
        timed_config(vec![
            AnswererSlot::Policy {
                name: "web".into(),
                policy: holder.clone(),
            },
            answerer("terminal", 1.0),
        ])
    };
    let runtime = start_logged(config(), &path, SyncPolicy::Every).await;
    let (a, b, c) = (
        runtime.spawn_root("windowed", None).await.unwrap(),
        runtime.spawn_root("held", None).await.unwrap(),
        runtime.spawn_root("blocking", None).await.unwrap(),
    );
    let calls = [
        spawn_ask(&a, &timed_args(Some("30"))),
        spawn_ask(&b, &timed_args(Some("0.2"))),
        spawn_ask(&c, &timed_args(Some("-1"))),
    ];
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    runtime.shutdown().await;
    for call in calls {
        outcome(call).await;
    }
    let recovered = recover(config(), &path, SyncPolicy::Every).await;
    let mut reopened = recovered.reopened.clone();
    reopened.sort();
    assert_eq!(reopened, ["blocking/1", "held/1", "windowed/1"]);
    for agent in &recovered.agents {
        let call_id = format!("{}/1", agent.handle.name());
        within(60.0, agent.handle.closed(&call_id)).await;
        assert_eq!(
            agent.handle.user_messages().await,
            vec![late_yes_message(&call_id)]
        );
    }
    recovered.runtime.shutdown().await;
    let events = events_in(&path);
    let restart = first_restart(&events);
    for call_id in ["windowed/1", "held/1", "blocking/1"] {
        let first_offer = events[restart..]
            .iter()
            .find(|e| e.kind.call_id() == Some(call_id) && matches!(e.kind, EventKind::Offer { .. }))
            .expect("offered again");
        let EventKind::Offer { answerer, .. } = &first_offer.kind else {
            unreachable!()
        };
        assert_eq!(&**answerer, "web", "{call_id}: from the top of the waterfall");
    }
}

/// SPEC §3.9: a legacy question open at the crash is gone: never offered again,
/// never continued.
#[tokio::test(start_paused = true)]
async fn a_legacy_question_open_at_the_crash_is_lost() {
    let scratch = Scratch::new("legacy");
    let path = scratch.path("log.jsonl");
    let config = || asksim::RuntimeConfig {
        tool: ToolConfig::default(),
        answerers: vec![answerer("terminal", 10.0)],
        ..asksim::RuntimeConfig::default()
    };
    let runtime = start_logged(config(), &path, SyncPolicy::None).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    let call = spawn_ask(&root, LEGACY_ARGS);
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    runtime.shutdown().await;
    outcome(call).await;
    let recovered = recover(config(), &path, SyncPolicy::None).await;
    assert_eq!(recovered.lost, vec!["root/1".to_owned()]);
    assert!(recovered.reopened.is_empty());
    let back = &recovered.agents[0].handle;
    tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    assert!(back.user_messages().await.is_empty());
    assert_eq!(back.ask(LEGACY_ARGS).await.call_id, "root/2");
    recovered.runtime.shutdown().await;
    let events = events_in(&path);
    let restart = first_restart(&events);
    assert!(
        events[restart..]
            .iter()
            .all(|e| e.kind.call_id() != Some("root/1")),
        "nothing about root/1 after the restart"
    );
}

/// SPEC §3.9: a user message decided (its `late_answer` durable) but not
/// received (no `user_message`) when the process died is delivered to the
/// resumed agent first, once; a second crash after it was received delivers it
/// no more.
#[tokio::test(start_paused = true)]
async fn a_user_message_decided_but_not_received_is_delivered_once() {
    let scratch = Scratch::new("redeliver");
    let path = scratch.path("log.jsonl");
    let config = || timed_config(vec![answerer("web", 2.0)]);
    let runtime = start_logged(config(), &path, SyncPolicy::None).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    assert_eq!(
        root.ask(&timed_args(Some("1"))).await.result.text,
        pending_result("root/1")
    );
    within(10.0, root.closed("root/1")).await;
    runtime.shutdown().await;
    // The crash came after the late answer was durable and before the agent's
    // receipt was: cut the log just before its `user_message` line.
    let mut all = lines(&path);
    let receipt = all
        .iter()
        .position(|l| l.contains("\"event\":\"user_message\""))
        .unwrap();
    all.truncate(receipt);
    write_lines(&path, &all);

    for round in 0..2 {
        let recovered = recover(config(), &path, SyncPolicy::None).await;
        let back = &recovered.agents[0];
        let expected = if round == 0 {
            vec![late_yes_message("root/1")]
        } else {
            vec![]
        };
        assert_eq!(back.redelivered, expected, "round {round}");
        assert_eq!(back.handle.user_messages().await, expected, "round {round}");
        quiesce().await;
        recovered.runtime.shutdown().await;
        assert_eq!(
            count(&events_in(&path), "user_message", "root/1"),
            1,
            "round {round}"
        );
    }
}

/// SPEC §4.1: the crash cut the broker's step between an answer within the
/// window (its `answer` line durable) and its result. `Runtime::recover`
/// judges the batch as the broker would have: the question is pending from
/// the restart on, so the answer is its late answer, delivered to the resumed
/// root first and once, and the answerer is not asked again.
#[tokio::test(start_paused = true)]
async fn an_answer_cut_from_its_result_is_the_resumed_roots_late_answer() {
    let scratch = Scratch::new("cut-answer");
    let path = scratch.path("log.jsonl");
    let config = || timed_config(vec![answerer("web", 2.0)]);
    let runtime = start_logged(config(), &path, SyncPolicy::None).await;
    let root = runtime.spawn_root("root", None).await.unwrap();
    assert_eq!(root.ask(&timed_args(Some("30"))).await.result.text, YES_RESULT);
    runtime.shutdown().await;
    let mut all = lines(&path);
    let answer = all
        .iter()
        .position(|l| l.contains("\"event\":\"answer\""))
        .unwrap();
    all.truncate(answer + 1);
    write_lines(&path, &all);

    let recovered = recover(config(), &path, SyncPolicy::None).await;
    let back = &recovered.agents[0];
    assert_eq!(back.redelivered, vec![late_yes_message("root/1")]);
    assert_eq!(
        back.handle.user_messages().await,
        vec![late_yes_message("root/1")]
    );
    assert!(recovered.reopened.is_empty(), "{:?}", recovered.reopened);
    quiesce().await;
    recovered.runtime.shutdown().await;
    let events = events_in(&path);
    assert_eq!(count(&events, "late_answer", "root/1"), 1);
    assert_eq!(count(&events, "user_message", "root/1"), 1);
    assert_eq!(count(&events, "offer", "root/1"), 1, "web is asked again");
}

/// SPEC §4.1: a child of a turn that fired asks after its owner's next turn
/// fired too (its owner stopped, so it may ask): the broker aborts the request
/// at once, its turn chain having fired. The crash cut that step after the
/// request. The recovery aborts it as the broker did, before the crash's loss,
/// and never offers it: the turn it derives from is not its owner's last fired
/// one, which is all a recovery looked at before.
#[tokio::test(start_paused = true)]
async fn a_request_under_an_older_fired_turn_cut_from_its_abort_is_aborted_at_recovery() {
    let scratch = Scratch::new("cut-older-turn");
    let path = scratch.path("log.jsonl");
    let config = || timed_config(vec![answerer("web", 30.0)]);
    let runtime = start_logged(config(), &path, SyncPolicy::None).await;
    let lead = runtime.spawn_root("lead", None).await.unwrap();
    let helper = lead.spawn_child("helper").await.unwrap();
    lead.cancel_turn().await;
    lead.new_turn().await;
    lead.cancel_turn().await;
    lead.stop();
    quiesce().await;
    let asked = helper.ask(&timed_args(Some("5"))).await;
    assert!(asked.result.text.contains("ABORTED"), "{}", asked.result.text);
    runtime.shutdown().await;
    let mut all = lines(&path);
    let request = all
        .iter()
        .position(|l| l.contains("\"event\":\"request\",\"callId\":\"helper/1\""))
        .expect("helper's request");
    all.truncate(request + 1);
    write_lines(&path, &all);

    let recovered = recover(config(), &path, SyncPolicy::None).await;
    assert!(recovered.reopened.is_empty(), "{:?}", recovered.reopened);
    quiesce().await;
    recovered.runtime.shutdown().await;
    let events = events_in(&path);
    let loss = events
        .iter()
        .position(|e| matches!(e.kind, EventKind::ProcessLoss { .. }))
        .expect("the crash's loss");
    let aborted = events[..loss].iter().any(|e| {
        matches!(&e.kind, EventKind::Result { call_id, result, .. }
            if **call_id == *"helper/1" && result.contains("ABORTED"))
    });
    assert!(aborted, "helper/1 aborted before the loss: {events:#?}");
    assert_eq!(count(&events, "offer", "helper/1"), 0, "never offered");
}

/// SPEC §3.9: a former child comes back as a runtime root carrying its lineage,
/// and may ask.
#[tokio::test(start_paused = true)]
async fn a_child_comes_back_as_a_root_with_its_lineage() {
    let scratch = Scratch::new("lineage");
    let path = scratch.path("log.jsonl");
    let config = || timed_config(vec![answerer("web", 1.0)]);
    let runtime = start_logged(config(), &path, SyncPolicy::None).await;
    let lead = runtime.spawn_root("lead", None).await.unwrap();
    let helper = lead.spawn_child("helper").await.unwrap();
    assert!(
        helper
            .ask(&timed_args(Some("5")))
            .await
            .result
            .text
            .contains("DELEGATED_CALLER")
    );
    runtime.shutdown().await;
    let recovered = recover(config(), &path, SyncPolicy::None).await;
    let helper = recovered
        .agents
        .iter()
        .find(|a| a.handle.name() == "helper")
        .expect("the child is back");
    assert_eq!(helper.lineage.as_deref(), Some("lead"));
    assert_eq!(helper.calls_made, 1);
    let asked = helper.handle.ask(&timed_args(Some("5"))).await;
    assert_eq!(
        (asked.call_id.as_str(), asked.result.text.as_str()),
        ("helper/2", YES_RESULT)
    );
    recovered.runtime.shutdown().await;
}

/// SPEC §4.1: a log of another host name or seed is refused, naming line 1.
#[tokio::test(start_paused = true)]
async fn a_log_of_another_name_or_seed_is_refused() {
    let scratch = Scratch::new("another");
    let path = scratch.path("log.jsonl");
    let runtime = start_logged(timed_config(vec![]), &path, SyncPolicy::None).await;
    runtime.shutdown().await;
    let before = file_hash(&path);
    let mut other_seed = timed_config(vec![]);
    other_seed.seed = 9;
    let refused = [
        Runtime::recover(other_seed, &path).await.err(),
        Runtime::recover(
            asksim::RuntimeConfig {
                log: Some(LogConfig {
                    name: "billing".into(),
                    ..LogConfig::new(&path)
                }),
                ..timed_config(vec![])
            },
            &path,
        )
        .await
        .err(),
    ];
    for error in refused {
        let error = error.expect("refused").to_string();
        assert!(error.contains("log.jsonl:1: a log of"), "{error}");
    }
    assert_eq!(file_hash(&path), before);
}
