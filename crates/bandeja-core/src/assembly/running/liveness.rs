//! [`Liveness`]: whether the tasks a [`Running`](super::Running) started (its workers, the
//! heartbeat, the maintenance tasks) still run — what a liveness probe asks — and the
//! [`Tracker`] that wraps each task so that its end is recorded, however it ends.

use std::future::Future;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinSet;

/// How a task of the runtime ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum TaskEnd {
    /// It returned after a shutdown was asked for: the normal end.
    Stopped,
    /// It returned while no shutdown was asked for: the work it did has stopped.
    Returned,
    /// It was dropped before returning while no shutdown was asked for: it panicked (or
    /// the Tokio runtime it ran on went away).
    Panicked,
    /// It was dropped before returning after a shutdown was asked for: cut off by
    /// [`Running::shutdown_within`](super::Running::shutdown_within)'s limit.
    Aborted,
}

impl TaskEnd {
    /// The lowercase name (`stopped`, `returned`, `panicked`, `aborted`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskEnd::Stopped => "stopped",
            TaskEnd::Returned => "returned",
            TaskEnd::Panicked => "panicked",
            TaskEnd::Aborted => "aborted",
        }
    }

    fn code(self) -> u8 {
        match self {
            TaskEnd::Stopped => 1,
            TaskEnd::Returned => 2,
            TaskEnd::Panicked => 3,
            TaskEnd::Aborted => 4,
        }
    }

    fn from_code(code: u8) -> Option<TaskEnd> {
        match code {
            1 => Some(TaskEnd::Stopped),
            2 => Some(TaskEnd::Returned),
            3 => Some(TaskEnd::Panicked),
            4 => Some(TaskEnd::Aborted),
            _ => None,
        }
    }
}

impl std::fmt::Display for TaskEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task of the runtime that no longer runs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoppedTask {
    /// Its name (`inbox_events worker`, `heartbeat`, `maintenance`).
    pub task: String,
    /// How it ended.
    pub ended: TaskEnd,
}

/// One tracked task: its name, and how it ended (0 while it runs).
#[derive(Debug)]
struct Task {
    name: String,
    end: AtomicU8,
}

/// Whether every task of a [`Running`](super::Running) still runs, from
/// [`Running::liveness`](super::Running::liveness): cheap to clone and to ask, and it keeps
/// answering after the `Running` is gone (then every task has ended). The tasks are the
/// worker of each enabled box (`outbox_events worker`, …), the heartbeat that keeps this
/// process's subscriptions registered, and the maintenance tasks (retention, staleness
/// monitor) when configured.
///
/// A backlog, a slow or unreachable database or a failing handler do not make a runtime
/// dead: its workers keep running and retrying. Only a task that ended does — a shutdown,
/// a panic, or a worker that returned.
///
/// ```no_run
/// # async fn demo(running: bandeja_core::Running) {
/// let liveness = running.liveness();
/// assert!(liveness.is_alive());
/// running.shutdown().await;
/// assert!(!liveness.is_alive());
/// assert_eq!(liveness.stopped().len(), liveness.tasks().len());
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Liveness {
    tasks: Arc<[Arc<Task>]>,
    stop: watch::Receiver<bool>,
}

impl Liveness {
    /// Whether every task still runs and no shutdown was asked for.
    pub fn is_alive(&self) -> bool {
        !self.stopping()
            && self
                .tasks
                .iter()
                .all(|t| t.end.load(Ordering::Acquire) == 0)
    }

    /// Whether a shutdown was asked for ([`Running::shutdown`](super::Running::shutdown),
    /// `run_until` returning, or a drop).
    pub fn stopping(&self) -> bool {
        *self.stop.borrow()
    }

    /// The names of every task, in start order.
    pub fn tasks(&self) -> Vec<&str> {
        self.tasks.iter().map(|t| t.name.as_str()).collect()
    }

    /// The tasks that no longer run, with how each ended.
    pub fn stopped(&self) -> Vec<StoppedTask> {
        self.tasks
            .iter()
            .filter_map(|t| {
                TaskEnd::from_code(t.end.load(Ordering::Acquire)).map(|ended| StoppedTask {
                    task: t.name.clone(),
                    ended,
                })
            })
            .collect()
    }
}

/// Records the end of one task when dropped: returned or not, asked to stop or not.
struct EndGuard {
    task: Arc<Task>,
    stop: watch::Receiver<bool>,
    returned: bool,
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        let end = match (self.returned, *self.stop.borrow()) {
            (true, true) => TaskEnd::Stopped,
            (true, false) => TaskEnd::Returned,
            (false, false) => TaskEnd::Panicked,
            (false, true) => TaskEnd::Aborted,
        };
        if end != TaskEnd::Stopped {
            tracing::error!(task = %self.task.name, ended = %end, "a task of the bandeja runtime ended without a shutdown: this process no longer does all its work (liveness is DOWN)");
        }
        self.task.end.store(end.code(), Ordering::Release);
    }
}

/// Spawns the runtime's tasks so that [`Liveness`] knows when each ends.
pub(crate) struct Tracker {
    tasks: Vec<Arc<Task>>,
    stop: watch::Receiver<bool>,
}

impl Tracker {
    /// A tracker whose tasks stop when `stop` turns true.
    pub(crate) fn new(stop: &watch::Receiver<bool>) -> Self {
        Tracker {
            tasks: Vec::new(),
            stop: stop.clone(),
        }
    }

    /// Registers a task named `name` and wraps `work` so that its end is recorded.
    fn track<F>(&mut self, name: String, work: F) -> impl Future<Output = ()> + Send + 'static
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let task = Arc::new(Task {
            name,
            end: AtomicU8::new(0),
        });
        self.tasks.push(task.clone());
        let stop = self.stop.clone();
        async move {
            let mut guard = EndGuard {
                task,
                stop,
                returned: false,
            };
            work.await;
            guard.returned = true;
        }
    }

    /// Spawns `work` on `tasks` as the task `name`.
    pub(crate) fn spawn<F>(&mut self, tasks: &mut JoinSet<()>, name: impl Into<String>, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let tracked = self.track(name.into(), work);
        tasks.spawn(tracked);
    }

    /// Spawns, as the one task `name`, a task that waits for every task of `group`: it
    /// counts as ended (returned, or panicked when one of them panicked) as soon as the
    /// first of them ends, and keeps waiting for the others so that a graceful shutdown
    /// still waits for all of them. An empty group is not tracked.
    pub(crate) fn spawn_group(
        &mut self,
        tasks: &mut JoinSet<()>,
        name: impl Into<String>,
        mut group: JoinSet<()>,
    ) {
        if group.is_empty() {
            return;
        }
        let task = Arc::new(Task {
            name: name.into(),
            end: AtomicU8::new(0),
        });
        self.tasks.push(task.clone());
        let stop = self.stop.clone();
        tasks.spawn(async move {
            let mut guard = Some(EndGuard {
                task,
                stop,
                returned: false,
            });
            while let Some(result) = group.join_next().await {
                if let Some(mut first) = guard.take() {
                    first.returned = result.is_ok();
                }
            }
        });
    }

    /// The probe over the tasks spawned so far.
    pub(crate) fn liveness(&self) -> Liveness {
        Liveness {
            tasks: self.tasks.iter().cloned().collect(),
            stop: self.stop.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn ended(liveness: &Liveness, count: usize) -> Vec<StoppedTask> {
        tokio::time::timeout(std::time::Duration::from_secs(5), async {
            loop {
                let stopped = liveness.stopped();
                if stopped.len() >= count {
                    return stopped;
                }
                tokio::task::yield_now().await;
            }
        })
        .await
        .unwrap_or_default()
    }

    #[tokio::test]
    async fn a_panicking_or_returning_task_is_named_and_a_shutdown_ends_the_rest() {
        let (stop, stop_rx) = watch::channel(false);
        let mut tracker = Tracker::new(&stop_rx);
        let mut tasks = JoinSet::new();
        let mut waits = stop_rx.clone();
        tracker.spawn(&mut tasks, "steady", async move {
            let _ = waits.wait_for(|stop| *stop).await;
        });
        tracker.spawn(&mut tasks, "crashing", async {
            tokio::task::yield_now().await;
            panic!("boom");
        });
        let mut group = JoinSet::new();
        group.spawn(async {});
        tracker.spawn_group(&mut tasks, "group", group);
        tracker.spawn_group(&mut tasks, "empty", JoinSet::new());
        let liveness = tracker.liveness();
        assert_eq!(liveness.tasks(), ["steady", "crashing", "group"]);

        let mut stopped = ended(&liveness, 2).await;
        stopped.sort_by(|a, b| a.task.cmp(&b.task));
        assert_eq!(
            stopped,
            [
                StoppedTask {
                    task: "crashing".to_owned(),
                    ended: TaskEnd::Panicked
                },
                StoppedTask {
                    task: "group".to_owned(),
                    ended: TaskEnd::Returned
                },
            ]
        );
        assert!(!liveness.is_alive());

        let _ = stop.send(true);
        while tasks.join_next().await.is_some() {}
        let steady = liveness.stopped().into_iter().find(|t| t.task == "steady");
        assert_eq!(steady.map(|t| t.ended), Some(TaskEnd::Stopped));
        assert!(liveness.stopping());
    }

    #[tokio::test]
    async fn tasks_that_run_are_alive() {
        let (_stop, stop_rx) = watch::channel(false);
        let mut tracker = Tracker::new(&stop_rx);
        let mut tasks = JoinSet::new();
        tracker.spawn(&mut tasks, "forever", std::future::pending());
        let liveness = tracker.liveness();
        tokio::task::yield_now().await;
        assert!(liveness.is_alive());
        assert!(liveness.stopped().is_empty());
        tasks.abort_all();
    }
}
