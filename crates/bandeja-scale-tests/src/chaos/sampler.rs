//! Samples a chaos run while it goes: every second the resident memory of every process
//! (the workers and the run itself, from `/proc/<pid>/status`), keeping each one's peak;
//! every `--sample-every` the number of effects written so far (the `effects` sequence:
//! one value per handled message, plus a few spent by rolled-back attempts), for the
//! throughput over time.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::PgPool;
use tokio::sync::watch;

/// One point of the throughput timeline.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Sample {
    /// Seconds since emission started.
    pub t_s: f64,
    /// Effects written so far.
    pub handled: i64,
    /// Effects per second since the previous sample.
    pub rate: f64,
    /// The largest resident memory of any process at this moment, in MiB.
    pub max_rss_mib: f64,
}

/// What the sampler saw.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Samples {
    /// The throughput timeline.
    pub timeline: Vec<Sample>,
    /// Peak resident memory per process (worker id, or `chaos` for the run), in MiB.
    pub peak_rss_mib: BTreeMap<String, f64>,
}

/// The processes to sample: `(name, pid)`, kept current by the run as workers restart.
pub(crate) type Watched = Arc<Mutex<Vec<(String, u32)>>>;

/// Resident memory of `pid` in MiB, if it is alive.
fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Samples until `stop` turns true; returns what it saw.
pub(crate) async fn run(
    pool: PgPool,
    schema: String,
    watched: Watched,
    every: Duration,
    mut stop: watch::Receiver<bool>,
) -> Samples {
    let started = Instant::now();
    let sequence = format!("SELECT last_value FROM \"{schema}\".effects_seq_seq");
    let mut samples = Samples::default();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut last_sample: Option<(Instant, i64)> = None;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => {}
        }
        if *stop.borrow() {
            break;
        }
        let mut now_max: f64 = 0.0;
        let mut processes = watched.lock().map(|w| w.clone()).unwrap_or_default();
        processes.push(("chaos".to_owned(), std::process::id()));
        for (name, pid) in processes {
            if let Some(mib) = rss_mib(pid) {
                now_max = now_max.max(mib);
                let peak = samples.peak_rss_mib.entry(name).or_insert(0.0);
                *peak = peak.max(mib);
            }
        }
        // A tenth of slack: the ticks come every second, a sample takes a moment.
        let due = last_sample.is_none_or(|(at, _)| at.elapsed() >= every.mul_f64(0.9));
        if !due {
            continue;
        }
        let Ok(handled) = sqlx::query_scalar::<_, i64>(&sequence)
            .fetch_one(&pool)
            .await
        else {
            continue; // the database is restarting: the next tick samples
        };
        let rate = match last_sample {
            Some((at, before)) => (handled - before) as f64 / at.elapsed().as_secs_f64(),
            None => 0.0,
        };
        last_sample = Some((Instant::now(), handled));
        samples.timeline.push(Sample {
            t_s: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
            handled,
            rate: rate.round(),
            max_rss_mib: (now_max * 10.0).round() / 10.0,
        });
    }
    samples
}
