//! The process side of the wire for asksim's own state machines (`asksim actor
//! broker|answerer`): read a line from stdin, write its one reply line to stdout,
//! until stdin ends.

use std::io::{BufRead, Write};

/// Serves `handle` on stdin and stdout. Ends with `Ok` when stdin ends, `Err`
/// (why, and the line) for a line that is not one asksim writes, or when stdout
/// is closed.
pub fn serve(mut handle: impl FnMut(&str) -> Result<String, String>) -> Result<(), String> {
    let stdin = std::io::stdin();
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let mut line = String::new();
    let mut input = stdin.lock();
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(error) => return Err(format!("cannot read stdin: {error}")),
        }
        let text = line.trim_end_matches(['\n', '\r']);
        let reply = handle(text).map_err(|why| format!("{why}\n  line: {text}"))?;
        stdout
            .write_all(reply.as_bytes())
            .and_then(|()| stdout.write_all(b"\n"))
            .and_then(|()| stdout.flush())
            .map_err(|error| format!("cannot write stdout: {error}"))?;
    }
}
