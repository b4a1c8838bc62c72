//! For the crate's unit tests: what a piece of code logs, captured by a test subscriber.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// A writer that keeps what is written to it (and its clones), for a test subscriber.
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// What was written so far, as text.
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.0.lock().map(|b| b.clone()).unwrap_or_default()).unwrap_or_default()
    }
}

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut out) = self.0.lock() {
            out.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What `work` logs at INFO and above, as text lines.
pub(crate) fn logged(work: impl FnOnce()) -> String {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    tracing::subscriber::with_default(subscriber, work);
    captured.text()
}
