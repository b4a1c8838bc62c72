//! A claimed row that cannot be decoded blocks nothing: the store's test breaks the row its
//! own way and checks with its own SQL what became of it.

use bandeja_core::envelope::MessageId;
use bandeja_core::record::BoxKind;
use bandeja_core::store::Inspect;

use crate::store::{emit, ping, request};

/// A claimed row that cannot be decoded (here: `corrupt` broke its stored headers, as a
/// hand-written row or an incompatible version would) is not returned and does not fail
/// the claim; the rows beside it are claimed as usual, and it is not claimed again.
/// Returns its id: each store's tests call this with their own way of breaking a row,
/// then check with their own SQL that it is FAILED with the decode error (inspection
/// cannot read it either).
pub async fn an_undecodable_claimed_row_blocks_nothing<S, F, Fut>(store: S, corrupt: F) -> MessageId
where
    S: Inspect,
    F: FnOnce(S, MessageId) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (bad, good) = (ping(1, "a"), ping(2, "b"));
    emit(&store, &[bad.clone(), good.clone()]).await;
    corrupt(store.clone(), bad.id).await;
    let claimed = store
        .claim(BoxKind::OutboxEvents, &request("w", 10))
        .await
        .expect("a bad row does not fail the claim");
    assert_eq!(
        claimed.iter().map(|m| m.record.id).collect::<Vec<_>>(),
        vec![good.id]
    );
    let again = store
        .claim(BoxKind::OutboxEvents, &request("w2", 10))
        .await
        .expect("claim");
    assert!(again.is_empty(), "the bad row is not claimed again");
    bad.id
}
