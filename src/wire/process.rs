//! The other end of the wire: an outside process started from a command and
//! spoken to in lockstep (one line out, exactly one line back), with a
//! wall-clock limit per reply, the tail of its stderr kept for reports, and
//! SIGKILL when asksim is done with it (a process loss, a crash, the end of a
//! run). [`Transport`] is what the adapters need of it; [`Loopback`] is the same
//! seam without a process, for tests and benches of the adapters themselves.
//!
//! The wall clock is read here, and only here, to enforce the per-reply limit:
//! a reply in time changes nothing in the run; a late one ends it as failed.
//! Nothing here may block without bound: the reader and the writer are the
//! caller's thread, and a watchdog thread kills a process that does not answer,
//! which unblocks them.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Seconds a process has to answer one line unless [`REPLY_WALL_S_ENV`] says
/// otherwise (PROTOCOL.md "Failures").
pub const REPLY_WALL_S_DEFAULT: f64 = 10.0;
/// The environment variable that sets the per-reply limit, in seconds.
pub const REPLY_WALL_S_ENV: &str = "ASKSIM_REPLY_WALL_S";
/// The longest line a process may write (PROTOCOL.md "Framing").
pub const LINE_BYTES_MAX: usize = 16 << 20;
/// How much of a process's stderr a report shows.
const STDERR_TAIL_BYTES: usize = 4 << 10;
/// How long a report waits for a dead process's last stderr bytes.
const STDERR_DRAIN_WAIT: Duration = Duration::from_millis(200);
/// How long a process that closed a pipe has to close its stderr (its exit
/// closes it) before asksim kills it.
const EXIT_WAIT: Duration = Duration::from_millis(500);

/// The exchange broke: why, and the line at fault if there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broken {
    /// What happened, for the report.
    pub reason: String,
    /// The offending line (as far as it was read), if any.
    pub line: Option<String>,
}

/// One line out, one line back.
pub trait Transport: Send {
    /// Writes `line` (without its newline) and returns the one line that answers
    /// it (without its newline).
    fn exchange(&mut self, line: &str) -> Result<String, Broken>;
    /// The last lines the other end wrote to stderr, if it has one.
    fn stderr_tail(&mut self) -> String;
}

/// The per-reply wall-clock limit: [`REPLY_WALL_S_ENV`] if it holds a positive
/// number of seconds, else [`REPLY_WALL_S_DEFAULT`].
pub fn reply_limit() -> Duration {
    let asked = std::env::var(REPLY_WALL_S_ENV)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0);
    Duration::from_secs_f64(asked.unwrap_or(REPLY_WALL_S_DEFAULT))
}

/// What the watchdog and the caller share.
struct Watch {
    /// Odd while a reply is awaited; one more for every line.
    generation: AtomicU64,
    /// The watchdog killed the process for not answering.
    killed: AtomicBool,
}

/// A running outside process.
pub struct Process {
    child: Arc<Mutex<Child>>,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    out: Vec<u8>,
    watch: Arc<Watch>,
    limit: Duration,
    /// Dropped to stop the watchdog.
    _stop: Sender<()>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    stderr_done: Receiver<()>,
}

/// How a failure to start a process begins its reason: nothing the scenario
/// holds can change it (`shrink` refuses to shrink such a failure).
pub const COULD_NOT_START: &str = "could not start";

impl Process {
    /// Starts `command` (a program and its arguments, run directly, in asksim's
    /// working directory) with piped stdin, stdout and stderr.
    pub fn start(command: &[String]) -> Result<Process, Broken> {
        let (program, args) = command.split_first().ok_or_else(|| Broken {
            reason: "the command is empty".into(),
            line: None,
        })?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| Broken {
                reason: format!("{COULD_NOT_START} {program:?}: {error}"),
                line: None,
            })?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let stderr_pipe = child.stderr.take().expect("stderr is piped");
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let (done_tx, stderr_done) = mpsc::channel();
        let tail = stderr.clone();
        std::thread::spawn(move || drain_stderr(stderr_pipe, &tail, done_tx));
        let child = Arc::new(Mutex::new(child));
        let watch = Arc::new(Watch {
            generation: AtomicU64::new(0),
            killed: AtomicBool::new(false),
        });
        let limit = reply_limit();
        let (stop, stopped) = mpsc::channel();
        let (dog_child, dog_watch) = (child.clone(), watch.clone());
        std::thread::spawn(move || watchdog(&dog_child, &dog_watch, limit, &stopped));
        Ok(Process {
            child,
            stdin,
            stdout,
            out: Vec::new(),
            watch,
            limit,
            _stop: stop,
            stderr,
            stderr_done,
        })
    }

    /// Why the process stopped answering: the watchdog's kill, its own exit,
    /// or the pipe `closed` (`stdin`, `stdout`) while it still ran (then asksim
    /// kills it, and says so rather than report its own SIGKILL as the exit).
    fn gone(&mut self, closed: &str, line: Option<String>) -> Broken {
        let reason = match self.watch.killed.load(Ordering::SeqCst) {
            true => format!("no reply within {} s (wall clock)", self.limit.as_secs_f64()),
            false => self.reap(closed),
        };
        Broken { reason, line }
    }

    /// How the process ended, once its pipe `closed`. Its exit closes its
    /// stderr: asksim waits for the drain thread's word of that (at most
    /// [`EXIT_WAIT`], no polling), then takes its status. One that still runs
    /// then is killed: either it did not exit (its stderr is still open, or it
    /// closed it and ran on), or the kill found it mid-exit (a process's exit
    /// closes its pipes a moment before its status is known), and then its own
    /// status stands (a dying process ignores the SIGKILL; only a SIGKILL from
    /// elsewhere in that moment would read as asksim's).
    fn reap(&mut self, closed: &str) -> String {
        let _ = self.stderr_done.recv_timeout(EXIT_WAIT);
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        let status = match child.try_wait() {
            Ok(Some(status)) => return format!("exited ({status})"),
            Ok(None) => {
                let _ = child.kill();
                child.wait()
            }
            Err(error) => Err(error),
        };
        match status {
            Ok(status) if killed(status) => {
                format!("closed its {closed} and did not exit (asksim killed it)")
            }
            Ok(status) => format!("exited ({status})"),
            Err(error) => format!("exited (its status is unknown: {error})"),
        }
    }
}

impl Transport for Process {
    fn exchange(&mut self, line: &str) -> Result<String, Broken> {
        self.out.clear();
        self.out.extend_from_slice(line.as_bytes());
        self.out.push(b'\n');
        self.watch.generation.fetch_add(1, Ordering::SeqCst);
        let written = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(&self.out).and_then(|()| stdin.flush()),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        };
        if written.is_err() {
            // No reply is awaited from a process that closed its stdin: the
            // watchdog must not kill it while asksim waits for its exit.
            self.watch.generation.fetch_add(1, Ordering::SeqCst);
            return Err(self.gone("stdin", None));
        }
        let read = read_line(&mut self.stdout);
        self.watch.generation.fetch_add(1, Ordering::SeqCst);
        match read {
            Ok(Some(bytes)) => {
                let reply = String::from_utf8(bytes).map_err(|e| Broken {
                    reason: "a line that is not UTF-8".into(),
                    line: Some(String::from_utf8_lossy(e.as_bytes()).into_owned()),
                })?;
                match second_line(self.stdout.buffer()) {
                    None => Ok(reply),
                    Some(next) => Err(Broken {
                        reason: "two lines in reply to one: another line came right behind the reply \
                                 (exactly one line answers each line asksim writes)"
                            .into(),
                        line: Some(format!("{reply}\n{next}")),
                    }),
                }
            }
            Ok(None) => Err(self.gone("stdout", None)),
            Err(TooLong(start)) => Err(Broken {
                reason: format!("a line longer than {LINE_BYTES_MAX} bytes"),
                line: Some(String::from_utf8_lossy(&start).into_owned()),
            }),
        }
    }

    fn stderr_tail(&mut self) -> String {
        let dead = {
            let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
            child.try_wait().ok().flatten().is_some()
        };
        if dead {
            // Dead: its last words may still be in the pipe.
            let _ = self.stderr_done.recv_timeout(STDERR_DRAIN_WAIT);
        }
        let tail = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        let bytes: Vec<u8> = tail.iter().copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Drop for Process {
    /// SIGKILL: asksim is done with the process (PROTOCOL.md "Lifecycle").
    fn drop(&mut self) {
        self.stdin = None;
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// What a process wrote behind its reply, as far as it was read with it: a
/// second line (or the start of one), which lockstep would take as the reply
/// to the next line asksim writes, and so blame every later exchange for the
/// one before. Only what came in one read with the reply is seen here (a
/// reply written in one go, as one write, brings its extra line with it); a
/// line written later is read as the next reply.
fn second_line(behind: &[u8]) -> Option<String> {
    if behind.is_empty() {
        return None;
    }
    let end = behind
        .iter()
        .position(|b| *b == b'\n')
        .unwrap_or(behind.len())
        .min(1024);
    Some(String::from_utf8_lossy(&behind[..end]).into_owned())
}

/// Whether a status is a SIGKILL's (asksim's kill of a process that ran on).
#[cfg(unix)]
fn killed(status: std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(9)
}

/// Whether a status is a kill's (elsewhere, no dying process outlives its pipes).
#[cfg(not(unix))]
fn killed(_: std::process::ExitStatus) -> bool {
    true
}

/// A line longer than [`LINE_BYTES_MAX`]; what was read of it.
struct TooLong(Vec<u8>);

/// The next line without its newline, `None` at the end of the stream (a
/// partial last line counts as the end: the process died mid-write).
fn read_line(reader: &mut BufReader<ChildStdout>) -> Result<Option<Vec<u8>>, TooLong> {
    let mut line = Vec::new();
    loop {
        let Ok(buffer) = reader.fill_buf() else {
            return Ok(None);
        };
        if buffer.is_empty() {
            return Ok(None);
        }
        let (used, done) = match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => {
                line.extend_from_slice(&buffer[..at]);
                (at + 1, true)
            }
            None => {
                line.extend_from_slice(buffer);
                (buffer.len(), false)
            }
        };
        reader.consume(used);
        if line.len() > LINE_BYTES_MAX {
            line.truncate(1024);
            return Err(TooLong(line));
        }
        if done {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(line));
        }
    }
}

/// Keeps the last [`STDERR_TAIL_BYTES`] of the process's stderr, so a chatty
/// process never blocks on a full pipe; says when the pipe closed.
fn drain_stderr(mut pipe: impl Read, tail: &Mutex<VecDeque<u8>>, done: Sender<()>) {
    let mut chunk = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut chunk) {
        if n == 0 {
            break;
        }
        let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
        tail.extend(&chunk[..n]);
        let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
        tail.drain(..excess);
    }
    drop(done);
}

/// Kills the process when one reply has been awaited for longer than `limit`.
/// It looks every quarter of the limit (at most every half second), so a
/// process gets at least the limit, and at most a quarter more.
fn watchdog(child: &Mutex<Child>, watch: &Watch, limit: Duration, stop: &Receiver<()>) {
    let poll = (limit / 4).clamp(Duration::from_millis(5), Duration::from_millis(500));
    let mut seen: Option<(u64, Instant)> = None;
    loop {
        match stop.recv_timeout(poll) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        let generation = watch.generation.load(Ordering::SeqCst);
        if generation.is_multiple_of(2) {
            seen = None;
            continue;
        }
        match seen {
            Some((g, since)) if g == generation => {
                if since.elapsed() >= limit {
                    watch.killed.store(true, Ordering::SeqCst);
                    let _ = child.lock().map(|mut c| c.kill());
                    return;
                }
            }
            _ => seen = Some((generation, Instant::now())),
        }
    }
}

/// The seam without a process: a function from one line to its reply, for the
/// adapters' own tests and benches.
pub struct Loopback(pub Box<LineHandler>);

/// One line in, its reply (or why not) out.
pub type LineHandler = dyn FnMut(&str) -> Result<String, String> + Send;

impl Transport for Loopback {
    fn exchange(&mut self, line: &str) -> Result<String, Broken> {
        (self.0)(line).map_err(|reason| Broken {
            reason,
            line: Some(line.to_owned()),
        })
    }

    fn stderr_tail(&mut self) -> String {
        String::new()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::{Process, Transport};

    fn sh(script: &str) -> Process {
        let command = ["sh", "-c", script].map(String::from);
        Process::start(&command).expect("sh starts")
    }

    /// Its stderr closed with its stdout, yet it runs on: no exit to wait for,
    /// asksim kills it at once and says so.
    #[test]
    fn a_process_that_closes_its_stdout_and_stderr_and_runs_on_is_killed_and_said_so() {
        let mut process = sh("read line; exec >&- 2>&-; read line");
        let broken = process.exchange("hello").unwrap_err();
        assert_eq!(
            broken.reason,
            "closed its stdout and did not exit (asksim killed it)"
        );
    }

    /// Its exit closed its stdout, but a child of its own holds its stderr
    /// (until asksim closes its stdin): its status is still its own exit's,
    /// not a kill's.
    #[test]
    fn a_process_whose_stderr_outlives_it_is_reported_as_exited() {
        let mut process = sh("read line; exec 3<&0; (exec >&-; read x <&3) & exit 4");
        let broken = process.exchange("hello").unwrap_err();
        assert_eq!(broken.reason, "exited (exit status: 4)");
    }

    /// A reply in the same write as another line fails that exchange, naming
    /// both.
    #[test]
    fn two_lines_in_one_write_fail_the_exchange_they_came_with() {
        let mut process = sh("read line; printf 'one\\ntwo\\n'; read line");
        let broken = process.exchange("hello").unwrap_err();
        assert!(
            broken.reason.starts_with("two lines in reply to one"),
            "{broken:?}"
        );
        assert_eq!(broken.line.as_deref(), Some("one\ntwo"));
    }
}
