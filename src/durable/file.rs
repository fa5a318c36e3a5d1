//! The durable log file: takes a run's event lines as the recorder writes them
//! and makes them durable under its [`SyncPolicy`], in order, so the file is
//! always a prefix of the run's log. It keeps two counters, the last `seq`
//! appended and the last one durable, and tells the write-ahead gates
//! ([`super::gate`]) and async waiters whenever the second moves.
//!
//! Under group commit one thread of its own (`asksim-log-sync`) does the writing
//! and syncing: recording only appends to a buffer, so no actor waits for the
//! disk. It uses `std::fs` and `std::thread`, never `tokio::fs` or
//! `spawn_blocking`, which would stall paused time.
//!
//! It never reads a log back (that is [`super::read`]) and never decides what
//! is recorded.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::policy::SyncPolicy;
use crate::log::{LogHeader, LogSink};

/// Most bytes one group commit gathers before it syncs without waiting out its
/// window.
const BATCH_BYTES_MAX: usize = 8 << 20;

/// Something that holds effects back until their lines are durable.
pub trait Release: Send + Sync {
    /// Every line up to `durable` is durable now.
    fn release(&self, durable: u64);
}

/// A durable log file being appended to. Cheap to clone; the last clone to go
/// syncs what is left and stops the sync thread.
#[derive(Clone)]
pub struct LogFile {
    handle: Arc<Handle>,
}

/// Owns the sync thread: dropped with the last [`LogFile`].
struct Handle {
    core: Arc<Core>,
    syncer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

struct Core {
    path: PathBuf,
    policy: SyncPolicy,
    header_line: Vec<u8>,
    file: Mutex<File>,
    pending: Mutex<Pending>,
    /// The sync thread waits here for lines.
    wake: Condvar,
    /// Callers of [`LogFile::sync`] wait here for the sync thread.
    synced: Condvar,
    appended: AtomicU64,
    durable: AtomicU64,
    /// Async waiters, by the `seq` each waits for: woken in order, only when
    /// theirs is durable (never all at each sync).
    waiters: Mutex<BTreeMap<u64, Vec<oneshot::Sender<()>>>>,
    gates: Mutex<Vec<Weak<dyn Release>>>,
    /// The first failure's message, set once: every append reads it, without
    /// a lock (a mutex here was taken, and its `None` cloned, for each line).
    failed: OnceLock<String>,
}

/// Lines appended and not yet handed to the disk (group commit only).
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    seq: u64,
    since: Option<Instant>,
    urgent: bool,
    closing: bool,
}

impl LogFile {
    /// Creates (or truncates) the log at `path` and writes `header` as its first
    /// line, synced, with the directory entry, before returning.
    pub fn create(path: &Path, header: &LogHeader, policy: SyncPolicy) -> std::io::Result<LogFile> {
        if let Ok(metadata) = std::fs::metadata(path) {
            crate::log::not_a_device(&metadata)?;
        }
        let mut header_line = serde_json::to_vec(header)?;
        header_line.push(b'\n');
        let mut file = File::create(path)?;
        file.write_all(&header_line)?;
        file.sync_all()?;
        sync_dir(path)?;
        Ok(LogFile::start(path, file, header_line, 0, policy))
    }

    /// Goes on appending to the log at `path`, which holds `header_line` and
    /// every event up to `seq` already (read back by recovery).
    pub fn append_to(
        path: &Path,
        header_line: Vec<u8>,
        seq: u64,
        policy: SyncPolicy,
    ) -> std::io::Result<LogFile> {
        let file = OpenOptions::new().append(true).open(path)?;
        Ok(LogFile::start(path, file, header_line, seq, policy))
    }

    fn start(path: &Path, file: File, header_line: Vec<u8>, seq: u64, policy: SyncPolicy) -> LogFile {
        let core = Arc::new(Core {
            path: path.to_owned(),
            policy,
            header_line,
            file: Mutex::new(file),
            pending: Mutex::new(Pending {
                seq,
                ..Pending::default()
            }),
            wake: Condvar::new(),
            synced: Condvar::new(),
            appended: AtomicU64::new(seq),
            durable: AtomicU64::new(seq),
            waiters: Mutex::new(BTreeMap::new()),
            gates: Mutex::new(Vec::new()),
            failed: OnceLock::new(),
        });
        let syncer = match policy {
            SyncPolicy::Group { window } => {
                let syncing = core.clone();
                std::thread::Builder::new()
                    .name("asksim-log-sync".into())
                    .spawn(move || group_commit(&syncing, window))
                    .map_err(|e| core_fail(&core, &e))
                    .ok()
            }
            SyncPolicy::Every | SyncPolicy::None => None,
        };
        LogFile {
            handle: Arc::new(Handle {
                core,
                syncer: Mutex::new(syncer),
            }),
        }
    }

    /// The sink a recorder writes through.
    pub fn appender(&self) -> Box<dyn LogSink> {
        Box::new(Appender(self.clone()))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.handle.core.path
    }

    /// Its policy.
    pub fn policy(&self) -> SyncPolicy {
        self.handle.core.policy
    }

    /// Its first line, as the file holds it.
    pub fn header_line(&self) -> &[u8] {
        &self.handle.core.header_line
    }

    /// The last `seq` appended (0: the header only).
    pub fn appended(&self) -> u64 {
        self.handle.core.appended.load(Ordering::SeqCst)
    }

    /// The last `seq` durable under the policy.
    pub fn durable(&self) -> u64 {
        self.handle.core.durable.load(Ordering::SeqCst)
    }

    /// The first write or sync error, if one happened: nothing appended after it
    /// becomes durable.
    pub fn failure(&self) -> Option<String> {
        self.handle.core.failed()
    }

    /// Tells `gate` whenever lines become durable, for as long as it lives.
    pub fn add_gate(&self, gate: Weak<dyn Release>) {
        let mut gates = self.handle.core.gates.lock().expect("log poisoned");
        gates.retain(|g| g.strong_count() > 0);
        gates.push(gate);
    }

    /// Waits (async) until every line appended so far is durable, or the log
    /// failed.
    pub async fn durable_now(&self) {
        let core = &self.handle.core;
        let seq = self.appended();
        let (tx, rx) = oneshot::channel();
        {
            let mut waiters = core.waiters.lock().expect("log poisoned");
            if self.durable() >= seq || core.failed().is_some() {
                return;
            }
            waiters.entry(seq).or_default().push(tx);
        }
        self.urgent();
        let _ = rx.await;
    }

    /// Blocks until every line appended so far is durable; the log's error if it
    /// failed.
    pub fn sync(&self) -> std::io::Result<()> {
        let core = &self.handle.core;
        let seq = self.appended();
        if core.policy.deferred() {
            let mut pending = core.pending.lock().expect("log poisoned");
            pending.urgent = true;
            core.wake.notify_all();
            while core.durable.load(Ordering::SeqCst) < seq && core.failed().is_none() {
                pending = core.synced.wait(pending).expect("log poisoned");
            }
        }
        match core.failed() {
            Some(error) => Err(std::io::Error::other(error)),
            None => Ok(()),
        }
    }

    /// Asks the sync thread not to wait out its window.
    fn urgent(&self) {
        let core = &self.handle.core;
        if core.policy.deferred() {
            core.pending.lock().expect("log poisoned").urgent = true;
            core.wake.notify_all();
        }
    }

    /// Puts `file` in the place of the open file, once everything appended is
    /// durable (compaction swaps in the compacted file); the caller holds the
    /// recorder, so nothing is appended meanwhile.
    pub fn replace_file(&self, file: File) -> std::io::Result<()> {
        self.sync()?;
        *self.handle.core.file.lock().expect("log poisoned") = file;
        Ok(())
    }

    fn append(&self, seq: u64, line: &[u8]) -> std::io::Result<()> {
        let core = &self.handle.core;
        if let Some(error) = core.failed() {
            return Err(std::io::Error::other(error));
        }
        core.appended.store(seq, Ordering::SeqCst);
        match core.policy {
            SyncPolicy::Group { .. } => {
                let mut pending = core.pending.lock().expect("log poisoned");
                pending.bytes.extend_from_slice(line);
                pending.seq = seq;
                if pending.since.is_none() {
                    pending.since = Some(Instant::now());
                    core.wake.notify_all();
                }
                Ok(())
            }
            SyncPolicy::Every | SyncPolicy::None => {
                let written = core.write(line, core.policy == SyncPolicy::Every);
                match &written {
                    Ok(()) => core.advance(seq),
                    Err(error) => core.fail(error),
                }
                written
            }
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        {
            let mut pending = self.core.pending.lock().expect("log poisoned");
            pending.closing = true;
            self.core.wake.notify_all();
        }
        let syncer = self.syncer.lock().expect("log poisoned").take();
        if let Some(syncer) = syncer {
            let _ = syncer.join();
        }
    }
}

impl Core {
    fn failed(&self) -> Option<String> {
        self.failed.get().cloned()
    }

    fn write(&self, bytes: &[u8], sync: bool) -> std::io::Result<()> {
        let mut file = self.file.lock().expect("log poisoned");
        file.write_all(bytes)?;
        if sync { file.sync_data() } else { Ok(()) }
    }

    /// Lines up to `seq` are durable: waiters and gates hear of it.
    fn advance(&self, seq: u64) {
        self.durable.fetch_max(seq, Ordering::SeqCst);
        let ready = {
            let mut waiters = self.waiters.lock().expect("log poisoned");
            let later = waiters.split_off(&(seq + 1));
            std::mem::replace(&mut *waiters, later)
        };
        for waiter in ready.into_values().flatten() {
            let _ = waiter.send(());
        }
        let gates: Vec<Arc<dyn Release>> = self
            .gates
            .lock()
            .expect("log poisoned")
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for gate in gates {
            gate.release(seq);
        }
        if self.policy.deferred() {
            let _guard = self.pending.lock().expect("log poisoned");
            self.synced.notify_all();
        }
    }

    /// The log failed: nothing more becomes durable, so nobody waits for it.
    fn fail(&self, error: &std::io::Error) {
        core_fail(self, error);
        self.waiters.lock().expect("log poisoned").clear();
        let _guard = self.pending.lock().expect("log poisoned");
        self.synced.notify_all();
    }
}

fn core_fail(core: &Core, error: &std::io::Error) {
    core.failed
        .get_or_init(|| format!("{}: {error}", core.path.display()));
    tracing::error!(path = %core.path.display(), %error, "the durable log failed");
}

/// The sync thread of group commit: gathers lines for at most `window` after
/// the first (less when a caller is waiting, or the batch is large), writes
/// them and syncs them with one `fdatasync`, and tells everyone waiting.
fn group_commit(core: &Core, window: Duration) {
    let mut spare = Vec::new();
    loop {
        let Some((mut bytes, seq)) = gather(core, window, std::mem::take(&mut spare)) else {
            return;
        };
        let written = if core.failed().is_some() {
            Ok(())
        } else {
            core.write(&bytes, true)
        };
        match written {
            Ok(()) if core.failed().is_none() => core.advance(seq),
            Ok(()) => {}
            Err(error) => core.fail(&error),
        }
        bytes.clear();
        spare = bytes;
    }
}

/// Waits for a batch to sync: its bytes and last `seq`; `None` once closing
/// with nothing left.
fn gather(core: &Core, window: Duration, spare: Vec<u8>) -> Option<(Vec<u8>, u64)> {
    let mut pending: MutexGuard<Pending> = core.pending.lock().expect("log poisoned");
    loop {
        let Some(since) = pending.since else {
            if pending.closing {
                return None;
            }
            pending = core.wake.wait(pending).expect("log poisoned");
            continue;
        };
        let deadline = since + window;
        let now = Instant::now();
        let full = pending.bytes.len() >= BATCH_BYTES_MAX;
        if pending.urgent || pending.closing || full || now >= deadline {
            break;
        }
        pending = core
            .wake
            .wait_timeout(pending, deadline - now)
            .expect("log poisoned")
            .0;
    }
    pending.since = None;
    pending.urgent = false;
    let seq = pending.seq;
    Some((std::mem::replace(&mut pending.bytes, spare), seq))
}

/// Syncs the directory holding `path`, so a created or renamed file's entry is
/// durable too.
pub(crate) fn sync_dir(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

/// What a recorder writes through.
struct Appender(LogFile);

impl LogSink for Appender {
    fn append(&mut self, seq: u64, line: &[u8]) -> std::io::Result<()> {
        self.0.append(seq, line)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.sync()
    }
    fn deferred(&self) -> bool {
        self.0.policy().deferred()
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::log::LogHeader;

    /// A log whose disk fills (`/dev/full`) under each policy: the error names
    /// the file, nothing after it counts as durable, and neither a sync nor an
    /// async wait for durability hangs on it, one that began before the
    /// failure included.
    #[test]
    fn a_log_whose_writes_fail_says_so_and_keeps_nobody_waiting() {
        let dir = tempfile::tempdir().unwrap();
        // Group last: with the failure not kept, its sync would wait for ever,
        // where the other two fail the assertions at once. A window of 100 ms:
        // the async wait below is registered before the sync thread writes.
        for policy in ["every", "none", "group:100"] {
            let policy: SyncPolicy = policy.parse().unwrap();
            let path = dir.path().join(format!("{policy}.jsonl"));
            let log = LogFile::create(&path, &LogHeader::new("full", 0), policy).unwrap();
            assert_eq!(log.failure(), None, "{policy}: a fresh log has not failed");
            let full = File::options().write(true).open("/dev/full").unwrap();
            log.replace_file(full).unwrap();
            let mut sink = log.appender();
            let appended = sink.append(1, b"{\"seq\":1}\n");
            // The failure comes from the sync thread, outside the runtime, so
            // time cannot be paused (it would jump to the timeout at once): the
            // minute is a guard that turns a wait that never ends into a
            // failure, not a measure of anything.
            let waited = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap()
                .block_on(async { tokio::time::timeout(Duration::from_secs(60), log.durable_now()).await });
            assert!(waited.is_ok(), "{policy}: an async wait for the line returns");
            let synced = sink.flush();
            assert!(
                appended.is_err() || synced.is_err(),
                "{policy}: the failure reaches the writer"
            );
            let failure = log
                .failure()
                .unwrap_or_else(|| panic!("{policy}: no failure kept"));
            assert!(
                failure.contains(&path.display().to_string()),
                "{policy}: {failure}"
            );
            assert_eq!(log.durable(), 0, "{policy}: nothing past the failure is durable");
            assert!(
                sink.append(2, b"{\"seq\":2}\n").is_err(),
                "{policy}: later lines are refused"
            );
            assert!(log.sync().is_err(), "{policy}: a sync says so");
        }
    }
}
