//! The `asksim` binary: all the work is in the library.

fn main() -> std::process::ExitCode {
    asksim::cli::main()
}
