//! Every integration test but three, in one test binary (`cargo test --release
//! --test suite`; one file's tests: `cargo test --release --test suite
//! broker_windows::`). Each file under `tests/` is a module here, as it was a
//! crate of its own before. Sixty test crates, each linking the library and
//! instantiating the same generic code again, took 730 s of the 12.5-minute
//! `cargo test --release` build on CI's two cores (`--timings`); one links once.
//!
//! Three keep a binary of their own: `runtime_counts` (a counting global
//! allocator), `durable_library_crash` (its own `main`, which runs itself as
//! the host it kills) and `memory_row` (the peak resident set the kernel gives
//! a child counts what the parent held when it started the child: 1.1 GB in
//! this binary, a few MB in its own).

mod broker_support;
mod common;
mod durable_support;

mod accepted_runs_proptest;
mod actor_runtime;
mod answer_batch;
mod arguments_proptest;
mod broker_cancellation;
mod broker_exactly_once;
mod broker_identity;
mod broker_limits;
mod broker_races;
mod broker_waterfall;
mod broker_windows;
mod checker_branches;
mod cli_bad_input;
mod determinism;
mod docs;
mod durable_cli;
mod durable_compaction;
mod durable_crash;
mod durable_cut_steps;
mod durable_damage;
mod durable_recovery;
mod explore;
mod journal;
mod legacy_timed_walks;
mod log_proptest;
mod outside;
mod outside_alt;
mod outside_answers;
mod outside_failures;
mod outside_protocol;
mod own_answerer;
mod policy_constructors;
mod projection_cache;
mod projection_fixtures;
mod projection_runs;
mod protocol_fixtures;
mod races;
mod replay_cli;
mod runtime_hashes;
mod runtime_in_place;
mod runtime_residents;
mod scenario_format;
mod scenario_references;
mod scenario_schema;
mod scenarios;
mod schema_cli;
mod shard_merge;
mod shrink;
mod spec_lines;
mod state_version;
mod streaming;
mod sweep_and_trace;
mod timeline;
mod tool_arguments;
mod tool_config;
mod tool_results;
mod trace_hashes;
mod trust;
mod violation_fixtures;
