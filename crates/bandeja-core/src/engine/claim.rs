//! Claiming a batch for a worker cycle, fairly: when several tenants have live rows, the
//! batch is shared among them in rotation (seed 000: a task per active tenant), so one
//! tenant's backlog never starves the others.
//!
//! A cycle's claims are one unit: if a later claim of the rotation fails, the rows the
//! earlier ones took are released (back to PENDING, no retry spent) before the error is
//! returned, instead of staying PROCESSING until their lease runs out.

use crate::context::Shared;
use crate::error::Result;
use crate::record::{BoxKind, StoredMessage};
use crate::store::{ClaimRequest, Outcome, Store};
use crate::tenant::TenantId;
use crate::worker::Claimed;

/// Tenants served by one cycle at most; with more active tenants the rotation reaches
/// the others in the next cycles.
const TENANTS_PER_CYCLE: usize = 8;

/// What one cycle asks for: the shared settings and, per request, a limit and a tenant.
pub(crate) struct Plan {
    floor: Option<i64>,
    /// `(limit, tenant)` of each claim of the cycle.
    pub(crate) parts: Vec<(usize, Option<TenantId>)>,
}

impl Plan {
    /// The claim request of one part.
    pub(crate) fn request<'a, S: Store>(
        &self,
        shared: &'a Shared<S>,
        box_kind: BoxKind,
        token: &'a str,
        part: &'a (usize, Option<TenantId>),
    ) -> ClaimRequest<'a> {
        let config = shared.config.group(box_kind);
        ClaimRequest {
            worker_id: token,
            limit: part.0,
            lease: config.lock_at_most_for,
            ordered: config.ordered,
            from_seq: self.floor,
            tenant: part.1.as_ref(),
            subscribers: box_kind
                .is_inbox()
                .then(|| shared.claimable(box_kind.kind())),
        }
    }
}

/// How many rows a cycle claims at most: `batch-size`; for an inbox none of whose
/// subscribers is measured fast (slow handlers, or none measured yet), no more than its
/// free handler permits and one wave of the handler concurrency, so that a process never
/// holds many rows it cannot start while another could (see
/// [`pace`](crate::pace)).
fn limit<S: Store>(shared: &Shared<S>, box_kind: BoxKind) -> usize {
    let batch = shared.config.group(box_kind).batch_size;
    if !box_kind.is_inbox() || shared.pace.any_batched(box_kind) {
        return batch;
    }
    // What it can start now, and one wave more to start as those end (so the handlers
    // need not wait for the next claim).
    let permits = &shared.permits;
    let free = permits.of(box_kind).available_permits();
    batch.min(free + permits.capacity())
}

/// The claims of this cycle: one for the whole batch, or a share per active tenant.
pub(crate) async fn plan<S: Store>(shared: &Shared<S>, box_kind: BoxKind, slot: &Claimed) -> Plan {
    let batch = limit(shared, box_kind);
    let snapshot = slot.floor.current(&shared.store, box_kind).await;
    let tenants = snapshot.tenants;
    if tenants.len() <= 1 {
        return Plan {
            floor: snapshot.floor,
            parts: vec![(batch, None)],
        };
    }
    let serve = tenants.len().min(TENANTS_PER_CYCLE);
    let share = (batch / serve).max(1);
    let start = slot.floor.rotate();
    let mut parts: Vec<_> = (0..serve)
        .map(|i| (share, Some(tenants[(start + i) % tenants.len()].clone())))
        .collect();
    // Per-tenant claims take PENDING rows; one untenanted share also takes over expired
    // leases (and serves tenants beyond this cycle's rotation).
    parts.push((share, None));
    Plan {
        floor: snapshot.floor,
        parts,
    }
}

/// Claims up to `batch-size` rows of `box_kind` under `token`. On an error, nothing stays
/// claimed: what the earlier claims of the cycle took is released first.
pub(crate) async fn claim<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    slot: &Claimed,
) -> Result<Vec<StoredMessage>> {
    let plan = plan(shared, box_kind, slot).await;
    let mut claimed = Vec::new();
    for part in &plan.parts {
        let request = plan.request(shared, box_kind, token, part);
        match shared.store.claim(box_kind, &request).await {
            Ok(rows) => claimed.extend(rows),
            Err(error) => {
                release(shared, box_kind, token, &claimed).await;
                return Err(error.into());
            }
        }
    }
    if !claimed.is_empty() {
        super::transitions::taken_over(&claimed);
        crate::fault::point("after-claim");
    }
    Ok(claimed)
}

/// Puts back the rows of a claim that failed part way (best effort: if this fails too,
/// they return after their lease).
pub(crate) async fn release<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    claimed: &[StoredMessage],
) {
    if claimed.is_empty() {
        return;
    }
    let outcomes: Vec<Outcome> = claimed.iter().map(crate::attempt::release).collect();
    match shared.store.resolve(box_kind, token, &outcomes).await {
        Ok(()) => {
            tracing::info!(box = %box_kind, released = outcomes.len(), "a claim failed part way: released what it had taken");
        }
        Err(error) => {
            tracing::warn!(box = %box_kind, %error, rows = outcomes.len(), "a claim failed part way and releasing what it had taken failed too: those rows return after their lease");
        }
    }
}
