//! [`StepKey`]: which saga step a command is, from its `bandeja-saga-*` headers.

use bandeja::saga::headers;
use bandeja::{Command, HandlerError};

/// A command without the headers of a saga's step (sent by hand, not by the saga).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the command has no valid `{header}` header: only the order saga sends it")]
pub struct NotAStep {
    /// The header that is missing or malformed.
    pub header: &'static str,
}

/// The key of one step (or compensation) of one saga: the same for every send of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepKey {
    /// `<saga id>:<step>:<phase>`, as sent in `bandeja-saga-key`.
    pub key: String,
    /// The saga's id.
    pub saga_id: String,
    /// The step's name (`charge`, `reserve`, `ship`).
    pub step: String,
    /// Whether this is the step's compensation.
    pub compensation: bool,
}

impl StepKey {
    /// The key of `command` for its handler: a command without one fails permanently
    /// (retrying does not add the header).
    pub fn of_step<T>(command: &Command<T>) -> Result<StepKey, HandlerError> {
        StepKey::of(command).map_err(HandlerError::permanent)
    }

    /// The key of `command`, from its headers.
    pub fn of<T>(command: &Command<T>) -> Result<StepKey, NotAStep> {
        let header = headers::IDEMPOTENCY_KEY;
        let key = command
            .headers
            .extra
            .get(header)
            .ok_or(NotAStep { header })?;
        let mut parts = key.rsplitn(3, ':');
        let (Some(phase), Some(step), Some(saga_id)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(NotAStep { header });
        };
        let compensation = match phase {
            "forward" => false,
            "compensation" => true,
            _ => return Err(NotAStep { header }),
        };
        if saga_id.is_empty() || step.is_empty() {
            return Err(NotAStep { header });
        }
        Ok(StepKey {
            key: key.clone(),
            saga_id: saga_id.to_owned(),
            step: step.to_owned(),
            compensation,
        })
    }

    /// The key of this step's compensation: its ledger row is the tombstone a late step
    /// finds.
    pub fn compensation_key(&self) -> String {
        format!("{}:{}:compensation", self.saga_id, self.step)
    }

    /// The key of this step's forward send: a compensation looks up whether it was done.
    pub fn forward_key(&self) -> String {
        format!("{}:{}:forward", self.saga_id, self.step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Ping;
    impl bandeja::Payload for Ping {
        const TYPE: &'static str = "test.Ping";
    }

    fn command(key: Option<&str>) -> Command<Ping> {
        let mut command = bandeja::tenant::sync_scope(bandeja::TenantId::default_tenant(), || {
            Command::to_self("shop", Ping)
        })
        .expect("a command");
        if let Some(key) = key {
            command
                .headers
                .extra
                .insert(headers::IDEMPOTENCY_KEY.to_owned(), key.to_owned());
        }
        command
    }

    #[test]
    fn the_key_names_the_saga_the_step_and_the_phase() {
        let id = "0190f5a1-0000-7000-8000-000000000001";
        let key = StepKey::of(&command(Some(&format!("{id}:charge:forward")))).expect("a key");
        assert_eq!(key.saga_id, id);
        assert_eq!(key.step, "charge");
        assert!(!key.compensation);
        assert_eq!(key.compensation_key(), format!("{id}:charge:compensation"));
        let undo =
            StepKey::of(&command(Some(&format!("{id}:charge:compensation")))).expect("a key");
        assert!(undo.compensation);
    }

    #[test]
    fn a_command_without_a_step_key_is_not_a_step() {
        for bad in [
            None,
            Some("nonsense"),
            Some("a:b:sideways"),
            Some(":charge:forward"),
        ] {
            assert!(StepKey::of(&command(bad)).is_err(), "{bad:?}");
        }
    }
}
