//! Claiming a batch for a worker cycle, fairly: when several tenants have live rows, the
//! batch is shared among them in rotation (seed 000: a task per active tenant), so one
//! tenant's backlog never starves the others.

use crate::error::Result;
use crate::record::{BoxKind, StoredMessage};
use crate::runtime::Shared;
use crate::store::{ClaimRequest, Store};
use crate::worker::Claimed;

/// Tenants served by one cycle at most; with more active tenants the rotation reaches
/// the others in the next cycles.
const TENANTS_PER_CYCLE: usize = 8;

/// Claims up to `batch-size` rows of `box_kind` under `token`.
pub(crate) async fn claim<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    slot: &Claimed,
) -> Result<Vec<StoredMessage>> {
    let config = shared.config.group(box_kind.group());
    let snapshot = slot.floor.current(&shared.store, box_kind).await;
    let request = ClaimRequest {
        worker_id: token,
        limit: config.batch_size,
        lease: config.lock_at_most_for,
        ordered: config.ordered,
        from_seq: snapshot.floor,
        tenant: None,
    };
    let tenants = &snapshot.tenants;
    if tenants.len() <= 1 {
        return Ok(shared.store.claim(box_kind, &request).await?);
    }
    let serve = tenants.len().min(TENANTS_PER_CYCLE);
    let share = (config.batch_size / serve).max(1);
    let start = slot.floor.rotate();
    let mut claimed = Vec::new();
    for i in 0..serve {
        let tenant = &tenants[(start + i) % tenants.len()];
        let request = ClaimRequest {
            limit: share,
            tenant: Some(tenant),
            ..request.clone()
        };
        claimed.extend(shared.store.claim(box_kind, &request).await?);
    }
    Ok(claimed)
}
