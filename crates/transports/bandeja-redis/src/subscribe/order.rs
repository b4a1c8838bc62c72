//! Which leading part of the entries a consumer holds it may store now without storing an
//! entry of the partition before an older one that another consumer holds.
//!
//! The processes of a service share the group, so `XREADGROUP` hands the entries of one
//! stream to whichever consumer asks first: one process may hold entries 1–10 while
//! another holds 11–20. Every entry delivered and not acknowledged is in the group's
//! pending list (ordered by id), added in the same step that delivered it, and an entry
//! leaves it only once acknowledged, that is stored. So an entry held here may be stored
//! when no entry older than it sits in the pending list without being held here: nothing
//! older is in another consumer's hands, and nothing older is still to be delivered (the
//! group delivers new entries in stream order). The pending list's head, one entry longer
//! than what is held, is enough to tell: either its entries are all held here, or it
//! shows the first one that is not.
//!
//! An older entry held by a consumer that died waits until it has been idle for
//! `claim_idle`; the waiting consumer then takes it over (`XAUTOCLAIM`) and stores it
//! first.

use std::collections::HashSet;

use crate::entry::EntryId;
use crate::reply::Pending;

/// How many of `held` (ascending ids) may be stored now, given the head of the group's
/// pending list (ascending, at least one entry longer than `held`, or all of it).
pub(crate) fn storable(held: &[EntryId], head: &[Pending]) -> usize {
    let mine: HashSet<EntryId> = held.iter().copied().collect();
    match head.iter().find(|pending| !mine.contains(&pending.id)) {
        None => held.len(),
        Some(blocker) => held.iter().take_while(|id| **id < blocker.id).count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(range: std::ops::RangeInclusive<u64>) -> Vec<EntryId> {
        range
            .map(|n| EntryId::parse(&format!("{n}-0")).expect("id"))
            .collect()
    }

    fn head(entries: &[(u64, &str)]) -> Vec<Pending> {
        entries
            .iter()
            .map(|(n, consumer)| Pending {
                id: EntryId::parse(&format!("{n}-0")).expect("id"),
                consumer: (*consumer).to_owned(),
            })
            .collect()
    }

    #[test]
    fn entries_with_nothing_older_elsewhere_are_stored_whole() {
        assert_eq!(
            storable(&ids(5..=7), &head(&[(5, "me"), (6, "me"), (7, "me")])),
            3
        );
        // Acknowledged meanwhile (by a process that took them over): nothing blocks.
        assert_eq!(storable(&ids(5..=7), &head(&[])), 3);
        assert_eq!(
            storable(&ids(5..=6), &head(&[(5, "me"), (6, "me"), (9, "other")])),
            2
        );
    }

    #[test]
    fn an_older_entry_held_elsewhere_holds_back_what_comes_after_it() {
        let older = head(&[(1, "other"), (5, "me"), (6, "me"), (7, "me")]);
        assert_eq!(storable(&ids(5..=7), &older), 0);
        // An entry of another consumer between held ones: the ones before it go.
        let between = head(&[(5, "me"), (6, "other"), (7, "me")]);
        assert_eq!(storable(&[ids(5..=5)[0], ids(7..=7)[0]], &between), 1);
        // One of this consumer's entries it does not hold (a read whose answer was lost)
        // holds back the later ones too.
        assert_eq!(storable(&ids(6..=7), &head(&[(4, "me"), (6, "me")])), 0);
        assert_eq!(storable(&[], &head(&[(1, "other")])), 0);
    }
}
