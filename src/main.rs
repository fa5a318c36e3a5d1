//! The `asksim` binary: all the work is in the library.

/// mimalloc instead of the system allocator: a run allocates and frees small
/// objects at a high rate (messages, events, strings), where glibc's malloc took
/// about a third of a `load-10k` run's time and held freed memory (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    asksim::cli::process::tune();
    asksim::cli::main()
}
