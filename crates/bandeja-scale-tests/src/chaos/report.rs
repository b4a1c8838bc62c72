//! The report of a chaos run: what was done, what was measured, what the database says,
//! and every broken rule. Printed as text and written as JSON.

use std::fmt::Write as _;
use std::time::Duration;

use super::{
    Emission, Exit, KafkaBrokers, Outage, Plan, Samples, Takeover, TransportKind, Verification,
};

/// Everything a chaos run did and found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// `in-process`, `nats`, `redis`, `kafka` (librdkafka's mock cluster) or
    /// `kafka-tansu`.
    pub transport: String,
    /// Worker processes.
    pub workers: u16,
    /// `lock-at-most-for` of the workers, in milliseconds.
    pub lease_ms: u64,
    /// The seed of the random choices (run again with `--seed` to repeat them).
    pub seed: u64,
    /// The run's schema (kept when the run failed).
    pub schema: String,
    /// What emission did.
    pub emission: Emission,
    /// Every SIGKILL and its takeover.
    pub kills: Vec<Takeover>,
    /// The bound takeovers were held to, in milliseconds.
    pub takeover_bound_ms: u64,
    /// Workers that aborted at their armed crash point.
    pub crash_point_exits: Vec<Exit>,
    /// Workers that ended although nothing killed them and no crash point was armed.
    pub unexpected_exits: Vec<Exit>,
    /// Workers that did not stop cleanly on SIGTERM at the end.
    pub unclean_stops: Vec<Exit>,
    /// The PostgreSQL restart, if the plan had one.
    pub database_restart: Option<Outage>,
    /// The broker outage, if the plan had one.
    pub broker_outage: Option<Outage>,
    /// The partition between workers and broker, if the plan had one.
    pub broker_partition: Option<Outage>,
    /// From the end of emission until everything was handled, in milliseconds.
    pub drained_after_emission_ms: u64,
    /// From the start of emission until everything was handled, in milliseconds.
    pub took_ms: u64,
    /// Throughput and memory over time.
    pub samples: Samples,
    /// What the database says.
    pub verification: Verification,
    /// Every broken rule; the run passed when this is empty.
    pub failures: Vec<String>,
}

impl Report {
    /// An empty report of `plan`.
    pub(crate) fn new(plan: &Plan, seed: u64, schema: &str) -> Report {
        Report {
            transport: match plan.transport {
                TransportKind::InProcess => "in-process",
                TransportKind::Nats => "nats",
                TransportKind::Redis => "redis",
                TransportKind::Kafka => match plan.kafka_brokers {
                    KafkaBrokers::Mock => "kafka",
                    KafkaBrokers::Tansu => "kafka-tansu",
                },
            }
            .to_owned(),
            workers: plan.workers,
            lease_ms: super::ms(plan.lease()),
            seed,
            schema: schema.to_owned(),
            emission: Emission::default(),
            kills: Vec::new(),
            takeover_bound_ms: 0,
            crash_point_exits: Vec::new(),
            unexpected_exits: Vec::new(),
            unclean_stops: Vec::new(),
            database_restart: None,
            broker_outage: None,
            broker_partition: None,
            drained_after_emission_ms: 0,
            took_ms: 0,
            samples: Samples::default(),
            verification: Verification::default(),
            failures: Vec::new(),
        }
    }

    /// Whether every rule held.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// Handled messages (effects) per second over the whole run.
    #[must_use]
    pub fn throughput(&self) -> f64 {
        if self.took_ms == 0 {
            return 0.0;
        }
        self.verification.effects as f64 * 1000.0 / self.took_ms as f64
    }

    /// The takeovers that were measured (the dead worker held rows, and neither the
    /// database nor the broker was down), in milliseconds, sorted.
    #[must_use]
    pub fn takeovers_ms(&self) -> Vec<u64> {
        let mut times: Vec<u64> = self
            .kills
            .iter()
            .filter(|k| k.rows_held > 0 && !self.during_outage(k))
            .filter_map(|k| k.takeover_ms)
            .collect();
        times.sort_unstable();
        times
    }

    /// The largest peak resident memory of any process, in MiB.
    #[must_use]
    pub fn peak_rss_mib(&self) -> f64 {
        self.samples
            .peak_rss_mib
            .values()
            .copied()
            .fold(0.0, f64::max)
    }

    /// Whether `kill` came while the database or the broker was down (or within a lease
    /// of it): no worker can take anything over then, so its takeover is reported but not
    /// held to the bound.
    fn during_outage(&self, kill: &Takeover) -> bool {
        [
            &self.database_restart,
            &self.broker_outage,
            &self.broker_partition,
        ]
        .into_iter()
        .flatten()
        .any(|o| kill.at_ms + self.lease_ms >= o.at_ms && kill.at_ms <= o.at_ms + o.down_ms)
    }

    /// Adds the run's own rules to the verification's: takeovers within `takeover_bound`
    /// (except for kills during an outage, which only must be taken over), no unexpected
    /// exit, clean stops, no hanging emission, memory under `max_rss_mib`.
    pub(crate) fn judge(&mut self, takeover_bound: Duration, max_rss_mib: u64) {
        self.takeover_bound_ms = super::ms(takeover_bound);
        let mut failures = self.verification.failures.clone();
        for kill in &self.kills {
            match kill.takeover_ms {
                Some(_) if self.during_outage(kill) => {}
                _ if kill.rows_held < 0 => failures.push(format!(
                    "the rows {} held could not be counted after its kill",
                    kill.worker
                )),
                None => failures.push(format!("rows {} held were never taken over", kill.worker)),
                Some(t) if t > self.takeover_bound_ms => failures.push(format!(
                    "takeover after killing {} took {t} ms, more than {} ms",
                    kill.worker, self.takeover_bound_ms
                )),
                Some(_) => {}
            }
        }
        for exit in &self.unexpected_exits {
            failures.push(format!("{} ended by itself: {}", exit.worker, exit.status));
        }
        for exit in &self.unclean_stops {
            failures.push(format!(
                "{} did not stop cleanly: {}",
                exit.worker, exit.status
            ));
        }
        if self.emission.hangs > 0 {
            failures.push(format!(
                "{} emission attempts hung instead of failing",
                self.emission.hangs
            ));
        }
        for (process, peak) in &self.samples.peak_rss_mib {
            if *peak > max_rss_mib as f64 {
                failures.push(format!(
                    "{process} reached {peak:.0} MiB of resident memory (limit {max_rss_mib})"
                ));
            }
        }
        failures.append(&mut self.failures);
        self.failures = failures;
    }

    /// The report as text, for people.
    #[must_use]
    pub fn text(&self) -> String {
        let mut out = String::new();
        let v = &self.verification;
        let e = &self.emission;
        let _ = writeln!(
            out,
            "chaos run over {} with {} workers (lease {} ms, seed {}, schema {})",
            self.transport, self.workers, self.lease_ms, self.seed, self.schema
        );
        let _ = writeln!(
            out,
            "emitted {} messages ({} poison) in {} ms; {} failed attempts (slowest error after {} ms), {} batches found committed on retry, {} hangs",
            e.committed, e.poison, e.took_ms, e.failed_attempts, e.slowest_failure_ms, e.committed_before_error, e.hangs
        );
        let takeovers = self.takeovers_ms();
        let _ = writeln!(
            out,
            "{} kills ({} holding rows outside outages), takeover ms: median {} max {} (bound {}); {} crash-point aborts",
            self.kills.len(),
            takeovers.len(),
            takeovers.get(takeovers.len() / 2).copied().unwrap_or(0),
            takeovers.last().copied().unwrap_or(0),
            self.takeover_bound_ms,
            self.crash_point_exits.len()
        );
        for (name, outage) in [
            ("database restart", &self.database_restart),
            ("broker outage", &self.broker_outage),
            ("broker partition", &self.broker_partition),
        ] {
            if let Some(o) = outage {
                let _ = writeln!(
                    out,
                    "{name} at {} ms, down {} ms ({})",
                    o.at_ms, o.down_ms, o.detail
                );
            }
        }
        let _ = writeln!(
            out,
            "handled {} effects in {} ms ({:.0}/s), drained {} ms after emission; {} duplicates absorbed, {} retries",
            v.effects,
            self.took_ms,
            self.throughput(),
            self.drained_after_emission_ms,
            v.duplicates_absorbed,
            v.retries
        );
        let _ = writeln!(
            out,
            "peak resident memory: {}",
            self.samples
                .peak_rss_mib
                .iter()
                .map(|(p, m)| format!("{p} {m:.0} MiB"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(out, "outbox: {:?}", v.outbox);
        let _ = writeln!(out, "inbox: {:?}", v.inbox);
        if self.passed() {
            let _ = writeln!(out, "PASSED: nothing lost, nothing applied twice");
        } else {
            for failure in &self.failures {
                let _ = writeln!(out, "FAILED: {failure}");
            }
        }
        out
    }
}
