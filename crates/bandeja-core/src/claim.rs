//! Claiming a batch for a worker cycle, fairly: when several tenants have live rows, the
//! batch is shared among them in rotation (seed 000: a task per active tenant), so one
//! tenant's backlog never starves the others.

use crate::error::Result;
use crate::record::{BoxKind, StoredMessage};
use crate::runtime::Shared;
use crate::store::{ClaimRequest, Store};
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
        shared: &Shared<S>,
        box_kind: BoxKind,
        token: &'a str,
        part: &'a (usize, Option<TenantId>),
    ) -> ClaimRequest<'a> {
        let config = shared.config.group(box_kind.group());
        ClaimRequest {
            worker_id: token,
            limit: part.0,
            lease: config.lock_at_most_for,
            ordered: config.ordered,
            from_seq: self.floor,
            tenant: part.1.as_ref(),
        }
    }
}

/// How many rows a cycle claims at most: `batch-size`; for an inbox none of whose
/// subscribers is measured fast (slow handlers, or none measured yet), no more than its
/// free handler permits (at least one), so that a process never holds rows it cannot start
/// while another could (see [`pace`](crate::processing::pace)).
fn limit<S: Store>(shared: &Shared<S>, box_kind: BoxKind) -> usize {
    let batch = shared.config.group(box_kind.group()).batch_size;
    if !box_kind.is_inbox() || shared.pace.any_batched(box_kind) {
        return batch;
    }
    let free = shared.permits.of(box_kind).available_permits();
    batch.min(free.max(1))
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

/// Claims up to `batch-size` rows of `box_kind` under `token`.
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
        claimed.extend(shared.store.claim(box_kind, &request).await?);
    }
    if !claimed.is_empty() {
        crate::fault::point("after-claim");
    }
    Ok(claimed)
}
