//! A saga's definition: its steps in order, each a command built from the saga's data,
//! with an optional compensation, a time limit, and one step that may be the pivot.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::machine::StepShape;
use crate::envelope::{Command, MessageId, Payload};
use crate::error::{BuildError, Result};
use crate::record::MessageRecord;
use crate::saga::{headers, SagaError, SagaPhase, SagaState};
use crate::tenant;

/// How long a step's reply may take unless [`SagaBuilder::timeout`] says otherwise.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest time limit a step may be given: a year.
pub const MAX_STEP_TIMEOUT: Duration = Duration::from_secs(365 * 86_400);

/// How many times a step after the pivot (or a compensation) is sent again after a
/// failure, unless [`SagaBuilder::max_retries`] says otherwise.
pub const DEFAULT_MAX_RETRIES: u32 = 5;

/// An orchestrated saga: a sequence of steps, each a command sent through the outbox and
/// answered by a [`SagaReply`](crate::saga::SagaReply) received through the inbox, each
/// with an optional compensation. Its state is a row in the store (`D` serialized as
/// JSON), changed in the transaction of the handler that received a reply, so a crash
/// anywhere resumes it and never runs a step or a compensation twice.
///
/// ```
/// use bandeja_core::sagas::Saga;
/// use bandeja_core::{Command, Payload};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Order { id: i64, cents: i64 }
///
/// #[derive(Serialize, Deserialize)]
/// struct Charge { order: i64, cents: i64 }
/// impl Payload for Charge { const TYPE: &'static str = "billing.Charge"; }
/// #[derive(Serialize, Deserialize)]
/// struct Refund { order: i64 }
/// impl Payload for Refund { const TYPE: &'static str = "billing.Refund"; }
/// #[derive(Serialize, Deserialize)]
/// struct Ship { order: i64 }
/// impl Payload for Ship { const TYPE: &'static str = "shipping.Ship"; }
///
/// let saga = Saga::<Order>::define("order")
///     .step("charge", |o: &Order| Command::to_self("billing", Charge { order: o.id, cents: o.cents }))
///     .compensate_with(|o: &Order| Command::to_self("billing", Refund { order: o.id }))
///     .step("ship", |o: &Order| Command::to_self("shipping", Ship { order: o.id }))
///     .pivot()
///     .build()
///     .expect("a valid definition");
/// assert_eq!(saga.name(), "order");
/// ```
pub struct Saga<D> {
    pub(crate) definition: Arc<Definition>,
    data: PhantomData<fn() -> D>,
}

impl<D> Clone for Saga<D> {
    fn clone(&self) -> Self {
        Saga {
            definition: self.definition.clone(),
            data: PhantomData,
        }
    }
}

impl<D> std::fmt::Debug for Saga<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Saga")
            .field("name", &self.definition.name)
            .field("steps", &self.definition.shapes)
            .finish()
    }
}

impl<D: Serialize + DeserializeOwned + Send + Sync + 'static> Saga<D> {
    /// Starts defining the saga named `name` (stored with each saga: keep it stable).
    pub fn define(name: impl Into<String>) -> SagaBuilder<D> {
        SagaBuilder {
            name: name.into(),
            steps: Vec::new(),
            max_retries: DEFAULT_MAX_RETRIES,
            problem: None,
            data: PhantomData,
        }
    }

    /// The saga's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// `data` as the saga stores it.
    pub(crate) fn encode(&self, data: &D) -> Result<Value> {
        serde_json::to_value(data).map_err(|source| {
            SagaError::Data {
                saga_type: self.definition.name.clone(),
                source,
            }
            .into()
        })
    }
}

/// Builds a step's command (or compensation) from the saga's data.
type BuildCommand = Box<dyn Fn(&Value) -> Result<MessageRecord> + Send + Sync>;

/// Merges a successful reply's data into the saga's data.
type OnSuccess = Box<dyn Fn(&mut Value, &Value) -> Result<()> + Send + Sync>;

struct StepDef {
    forward: BuildCommand,
    compensation: Option<BuildCommand>,
    on_success: Option<OnSuccess>,
}

/// A definition without its data type: what the orchestrator runs.
pub(crate) struct Definition {
    pub(crate) name: String,
    pub(crate) shapes: Vec<StepShape>,
    pub(crate) max_retries: u32,
    steps: Vec<StepDef>,
}

impl Definition {
    /// The command of `step`'s `phase` for `state`, with the saga's headers and its id as
    /// correlation id, built in the saga's tenant.
    pub(crate) fn command(
        &self,
        state: &SagaState,
        step: u32,
        phase: SagaPhase,
        causation: Option<MessageId>,
    ) -> Result<MessageRecord> {
        let def = usize::try_from(step)
            .ok()
            .and_then(|i| self.steps.get(i).zip(self.shapes.get(i)));
        let build = def.and_then(|(d, shape)| match phase {
            SagaPhase::Forward => Some((&d.forward, shape)),
            SagaPhase::Compensation => d.compensation.as_ref().map(|c| (c, shape)),
        });
        let Some((build, shape)) = build else {
            return Err(SagaError::NotRegistered(format!("{} (step {step})", self.name)).into());
        };
        let mut record = tenant::sync_scope(state.tenant_id.clone(), || build(&state.data))?;
        record.id = MessageId::new();
        let extra = &mut record.headers.extra;
        extra.insert(headers::SAGA_ID.to_owned(), state.id.to_string());
        extra.insert(headers::REPLY_TO.to_owned(), state.reply_to.clone());
        extra.insert(headers::STEP.to_owned(), shape.name.clone());
        let phase_name = match phase {
            SagaPhase::Forward => "forward",
            SagaPhase::Compensation => "compensation",
        };
        extra.insert(headers::PHASE.to_owned(), phase_name.to_owned());
        extra.insert(
            headers::IDEMPOTENCY_KEY.to_owned(),
            format!("{}:{}:{phase_name}", state.id, shape.name),
        );
        // One saga's commands in the order they were sent, per subscriber.
        if record.partition_key.is_none() {
            record.partition_key = Some(state.id.to_string());
        }
        record.headers.correlation_id = Some(state.correlation_id());
        if causation.is_some() {
            record.headers.causation_id = causation;
        }
        Ok(record)
    }

    /// Applies step `step`'s success hook to the saga's data, if it has one.
    pub(crate) fn on_success(&self, state: &mut SagaState, step: u32, reply: &Value) -> Result<()> {
        let hook = usize::try_from(step)
            .ok()
            .and_then(|i| self.steps.get(i))
            .and_then(|s| s.on_success.as_ref());
        match hook {
            Some(hook) => hook(&mut state.data, reply),
            None => Ok(()),
        }
    }
}

/// A saga definition being built: [`Saga::define`], then [`step`](Self::step) per step (with
/// [`compensate_with`](Self::compensate_with), [`pivot`](Self::pivot),
/// [`timeout`](Self::timeout) and [`on_success`](Self::on_success) applying to the step
/// just added), then [`build`](Self::build).
pub struct SagaBuilder<D> {
    name: String,
    steps: Vec<(StepShape, StepDef)>,
    max_retries: u32,
    problem: Option<String>,
    data: PhantomData<fn() -> D>,
}

fn decode<D: DeserializeOwned>(saga: &str, data: &Value) -> Result<D> {
    serde_json::from_value(data.clone()).map_err(|source| {
        SagaError::Data {
            saga_type: saga.to_owned(),
            source,
        }
        .into()
    })
}

fn builder<D, T, F>(saga: &str, build: F) -> BuildCommand
where
    D: DeserializeOwned + 'static,
    T: Payload,
    F: Fn(&D) -> Result<Command<T>> + Send + Sync + 'static,
{
    let saga = saga.to_owned();
    Box::new(move |data: &Value| {
        let data: D = decode(&saga, data)?;
        MessageRecord::from_command(&build(&data)?)
    })
}

impl<D: Serialize + DeserializeOwned + Send + Sync + 'static> SagaBuilder<D> {
    /// Adds a step named `name`: its command, built from the saga's data when the step
    /// starts. The step's service handles the command and answers with
    /// [`HandlerContext::reply_to_saga`](crate::HandlerContext::reply_to_saga).
    #[must_use]
    pub fn step<T, F>(mut self, name: &str, command: F) -> Self
    where
        T: Payload,
        F: Fn(&D) -> Result<Command<T>> + Send + Sync + 'static,
    {
        let shape = StepShape {
            name: name.to_owned(),
            compensable: false,
            pivot: false,
            timeout: Some(DEFAULT_STEP_TIMEOUT),
            compensation_timeout: Some(DEFAULT_STEP_TIMEOUT),
        };
        let def = StepDef {
            forward: builder(&self.name, command),
            compensation: None,
            on_success: None,
        };
        self.steps.push((shape, def));
        self
    }

    fn last(&mut self, what: &str) -> Option<&mut (StepShape, StepDef)> {
        if self.steps.is_empty() && self.problem.is_none() {
            self.problem = Some(format!("`{what}` before any `step`"));
        }
        self.steps.last_mut()
    }

    /// The compensation of the step just added: the command that undoes it (a refund for
    /// a charge), sent if a later step fails before the pivot. It is recorded, not an
    /// erasure: the step happened and so did its compensation.
    #[must_use]
    pub fn compensate_with<T, F>(mut self, compensation: F) -> Self
    where
        T: Payload,
        F: Fn(&D) -> Result<Command<T>> + Send + Sync + 'static,
    {
        let build = builder(&self.name, compensation);
        if let Some((shape, def)) = self.last("compensate_with") {
            shape.compensable = true;
            def.compensation = Some(build);
        }
        self
    }

    /// Makes the step just added the pivot: it cannot be compensated (the parcel has
    /// left), so once it succeeded the steps after it are sent again until they succeed
    /// (or the saga is FAILED for an operator), never compensated. A pivot that times out
    /// is sent again too (it may have been done). Put it as late as the flow allows.
    #[must_use]
    pub fn pivot(mut self) -> Self {
        if let Some((shape, _)) = self.last("pivot") {
            shape.pivot = true;
        }
        self
    }

    /// How long the step just added may take to reply (default [`DEFAULT_STEP_TIMEOUT`], at
    /// most [`MAX_STEP_TIMEOUT`]);
    /// past it, the step counts as failed (before the pivot: compensated, itself included).
    #[must_use]
    pub fn timeout(mut self, limit: Duration) -> Self {
        if let Some((shape, _)) = self.last("timeout") {
            shape.timeout = Some(limit);
        }
        self
    }

    /// How long the compensation of the step just added may take to reply (default
    /// [`DEFAULT_STEP_TIMEOUT`]); past it, the compensation is sent again.
    #[must_use]
    pub fn compensation_timeout(mut self, limit: Duration) -> Self {
        if let Some((shape, _)) = self.last("compensation_timeout") {
            shape.compensation_timeout = Some(limit);
        }
        self
    }

    /// What to keep of the step's successful reply: `merge` gets the saga's data and the
    /// reply's [`data`](crate::saga::SagaReply::data), e.g. to store a charge id the
    /// refund will need.
    #[must_use]
    pub fn on_success<F>(mut self, merge: F) -> Self
    where
        F: Fn(&mut D, &Value) + Send + Sync + 'static,
    {
        let saga = self.name.clone();
        let hook: OnSuccess = Box::new(move |data: &mut Value, reply: &Value| {
            let mut typed: D = decode(&saga, data)?;
            merge(&mut typed, reply);
            *data = serde_json::to_value(&typed).map_err(|source| SagaError::Data {
                saga_type: saga.clone(),
                source,
            })?;
            Ok(())
        });
        if let Some((_, def)) = self.last("on_success") {
            def.on_success = Some(hook);
        }
        self
    }

    /// How many more times a failing step after the pivot, or a failing compensation, is
    /// sent before the saga is FAILED (default [`DEFAULT_MAX_RETRIES`]).
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// The definition, checked: a usable name, at least one step, unique step names, at
    /// most one pivot, no compensation on the pivot or after it.
    pub fn build(self) -> std::result::Result<Saga<D>, BuildError> {
        let refuse = |why: String| Err(BuildError::saga(&self.name, why));
        if let Some(problem) = &self.problem {
            return refuse(problem.clone());
        }
        if !crate::names::is_usable_name(&self.name) {
            return refuse("the saga's name is not usable".to_owned());
        }
        if self.steps.is_empty() {
            return refuse("a saga needs at least one step".to_owned());
        }
        let mut pivot = None;
        for (i, (shape, _)) in self.steps.iter().enumerate() {
            if !crate::names::is_usable_name(&shape.name) {
                return refuse(format!("step {i}'s name is not usable"));
            }
            let limits = [shape.timeout, shape.compensation_timeout];
            if limits
                .iter()
                .flatten()
                .any(|t| t.is_zero() || *t > MAX_STEP_TIMEOUT)
            {
                return refuse(format!(
                    "step `{}`: a timeout must be above zero and at most {} days",
                    shape.name,
                    MAX_STEP_TIMEOUT.as_secs() / 86_400
                ));
            }
            if self.steps[..i].iter().any(|(s, _)| s.name == shape.name) {
                return refuse(format!("two steps are named `{}`", shape.name));
            }
            if shape.pivot {
                if pivot.is_some() {
                    return refuse("a saga has at most one pivot".to_owned());
                }
                if shape.compensable {
                    return refuse(format!(
                        "the pivot `{}` cannot have a compensation",
                        shape.name
                    ));
                }
                pivot = Some(i);
            } else if shape.compensable && pivot.is_some() {
                return refuse(format!(
                    "step `{}` comes after the pivot, so it is never compensated: drop its compensation",
                    shape.name
                ));
            }
        }
        let (shapes, steps) = self.steps.into_iter().unzip();
        Ok(Saga {
            definition: Arc::new(Definition {
                name: self.name,
                shapes,
                max_retries: self.max_retries,
                steps,
            }),
            data: PhantomData,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, serde::Deserialize)]
    struct Data {
        n: u64,
    }

    #[derive(Serialize, serde::Deserialize)]
    struct Step;
    impl Payload for Step {
        const TYPE: &'static str = "test.Step";
    }

    fn step(_: &Data) -> Result<Command<Step>> {
        Command::to_self("steps", Step)
    }

    fn refused(saga: SagaBuilder<Data>) -> String {
        saga.build().map(|_| ()).expect_err("refused").to_string()
    }

    #[test]
    fn definitions_that_cannot_run_are_refused_saying_why() {
        let base = || Saga::<Data>::define("order");
        assert!(refused(base()).contains("at least one step"));
        assert!(refused(base().step("a", step).step("a", step)).contains("two steps are named `a`"));
        assert!(
            refused(base().step("a", step).pivot().step("b", step).pivot())
                .contains("at most one pivot")
        );
        assert!(
            refused(base().step("a", step).pivot().compensate_with(step))
                .contains("cannot have a compensation")
        );
        assert!(refused(
            base()
                .step("a", step)
                .pivot()
                .step("b", step)
                .compensate_with(step)
        )
        .contains("after the pivot"));
        assert!(refused(base().pivot().step("a", step)).contains("`pivot` before any `step`"));
        assert!(refused(base().step("a", step).timeout(Duration::ZERO)).contains("above zero"));
        assert!(refused(base().step("a", step).timeout(MAX_STEP_TIMEOUT * 2)).contains("365 days"));
        assert!(
            refused(Saga::<Data>::define("or der").step("a", step)).contains("name is not usable")
        );
        let fine = base()
            .step("a", step)
            .compensate_with(step)
            .step("b", step)
            .pivot()
            .step("c", step)
            .build()
            .expect("valid");
        assert_eq!(fine.name(), "order");
    }
}
