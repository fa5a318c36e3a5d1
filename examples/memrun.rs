//! The `asksim` command line on the system allocator, for heap profilers that
//! hook `malloc` (heaptrack, massif, dhat): the binary itself runs on mimalloc,
//! which they do not see. `cargo build --release --example memrun`, then e.g.
//! `heaptrack target/release/examples/memrun run scenarios/load-tree-loss.json`
//! (BENCHMARKS.md, issue #19).

fn main() -> std::process::ExitCode {
    asksim::cli::main()
}
