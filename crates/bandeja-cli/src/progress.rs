//! Progress on stderr for long operations, drawn only when stderr is a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a spinner moves.
const TICK: Duration = Duration::from_millis(120);

fn target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}

/// A spinner saying what is being done (counting rows...), for work of unknown length.
pub(crate) fn spinner(message: &str) -> ProgressBar {
    let spinner = ProgressBar::with_draw_target(None, target());
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        spinner.set_style(style);
    }
    spinner.set_message(message.to_owned());
    spinner.enable_steady_tick(TICK);
    spinner
}

/// A bar over `total` rows.
pub(crate) fn bar(total: u64, message: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), target());
    if let Ok(style) =
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} rows ({elapsed}, eta {eta})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(message.to_owned());
    bar
}
