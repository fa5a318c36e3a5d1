//! A tap on a run's event stream: an observer the caller keeps a handle to, so
//! what it gathered is taken back after the run, whichever clock ran it. The
//! Chrome trace and the timeline stream through taps instead of a run keeping
//! every event for them (SPEC §8: they stream).

use std::sync::{Arc, Mutex};

use crate::event::Event;
use crate::record::Observer;

/// The caller's handle to a tapped observer.
pub struct Tap<T> {
    inner: Arc<Mutex<Option<T>>>,
}

/// What the recorder holds: the same observer, fed under the handle's lock.
struct Fed<T>(Arc<Mutex<Option<T>>>);

impl<T: Observer + 'static> Tap<T> {
    /// A tap on `observer`, and the observer to hand the run
    /// ([`crate::sim::RunOptions::taps`]).
    pub fn new(observer: T) -> (Tap<T>, Box<dyn Observer>) {
        let inner = Arc::new(Mutex::new(Some(observer)));
        (Tap { inner: inner.clone() }, Box::new(Fed(inner)))
    }

    /// The observer back, once the run is over.
    pub fn take(self) -> T {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
            .expect("a tap is taken once")
    }
}

impl<T: Observer + 'static> Observer for Fed<T> {
    fn event(&mut self, event: &Event) {
        let mut slot = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(observer) = slot.as_mut() {
            observer.event(event);
        }
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}
