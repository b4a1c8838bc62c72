//! Asking the operator before a destructive change: `--yes` skips the question; without it
//! a terminal must be there to answer.

use std::io::{self, BufRead, IsTerminal, Write};

use crate::error::CliError;

/// Returns `Ok` when the change may go ahead: `yes` was given, or the operator answered
/// `y`/`yes` to `question` on the terminal. Any other answer, end of input, or stdin not
/// being a terminal is [`CliError::Aborted`] (exit code 4).
pub(crate) fn confirm(question: &str, yes: bool) -> Result<(), CliError> {
    if yes {
        return Ok(());
    }
    let stdin = io::stdin();
    if !stdin.is_terminal() {
        return Err(CliError::Aborted(
            "not confirmed: stdin is not a terminal, so nobody can answer; run again with \
             --yes to go ahead (or --dry-run to only count). Nothing changed."
                .to_owned(),
        ));
    }
    let mut stderr = io::stderr().lock();
    write!(stderr, "{question} [y/N] ")?;
    stderr.flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    if is_yes(&answer) {
        Ok(())
    } else {
        Err(CliError::Aborted("aborted: nothing changed".to_owned()))
    }
}

fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_y_or_yes_confirms() {
        for yes in ["y", "Y\n", " yes ", "YES"] {
            assert!(is_yes(yes), "{yes:?}");
        }
        for no in ["", "\n", "n", "no", "yep", "sure"] {
            assert!(!is_yes(no), "{no:?}");
        }
    }

    #[test]
    fn yes_skips_the_question() {
        assert!(confirm("Purge?", true).is_ok());
    }
}
