//! The claim statement, and the window that bounds its walk.
//!
//! An ordered claim skips a row whose partition key has an older live row, so when the
//! heads of the busy keys are all held (by this process's other batches, or by other
//! processes of the service), every other row of the backlog fails that check. Walking
//! to the end of a 200,000-row backlog to learn that took 1.6 s a claim here, and three
//! processes ran several such walks at once (`docs/performance.md`, issue 17 item 5).
//!
//! So a claim looks only at a *window*: the first [`WINDOW_ROWS`] candidates in `seq`
//! order (or 16 × its limit, if more), a candidate being a row it could claim but for the
//! key check: due, not held, of its subscribers and tenant. The key check and the lock
//! run on the window's rows as they stream in, and the claim stops at its limit as before;
//! only the walk past rows it cannot take is bounded. The key check itself still looks at
//! every older live row of the key, so the window never lets a row past an older one.
//!
//! What a window cannot see is a key whose rows come only after a window's worth of
//! blocked candidates (one aggregate's burst of thousands ahead of everyone else's rows).
//! For those, when an ordered claim comes back short, the store claims from a window
//! further on ([`Start::Deeper`]), at most once a second per box: the first candidate
//! past one window, then past two, … up to [`DEEPEST`] windows, and round again
//! ([`Depths`]). A key behind more than [`DEEPEST`] windows of blocked candidates waits
//! until the blocked key's backlog shrinks below that (nothing is lost; its rows are
//! claimed then).

use std::time::{Duration, Instant};

use crate::queries::NOW;

/// The fewest candidates an ordered claim looks at (with a limit above 256, 16 × it).
pub(crate) const WINDOW_ROWS: i64 = 4096;

/// How often, at most, a box's claims in one store look past their window.
pub(crate) const DEEPER_EVERY: Duration = Duration::from_secs(1);

/// The most windows a look past the window skips.
pub(crate) const DEEPEST: i64 = 8;

/// The candidates a claim of `limit` rows looks at.
pub(crate) fn window_rows(limit: usize) -> i64 {
    i64::try_from(limit)
        .unwrap_or(i64::MAX)
        .saturating_mul(16)
        .max(WINDOW_ROWS)
}

/// Where a claim's window starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// At the live floor (`$5`).
    Floor,
    /// At the candidate that many candidates past the live floor (the statement's last
    /// parameter): nothing is claimed when there are not that many.
    Deeper,
}

/// The numbers of the window's parameters: the candidates it holds, and (for
/// [`Start::Deeper`]) how many it skips; after the claim's own (`$1..$5`, the tenant with
/// `by_tenant`, the three subscriber arrays in an inbox).
pub(crate) fn window_params(by_tenant: bool, inbox: bool) -> (usize, usize) {
    let window = 6 + usize::from(by_tenant) + if inbox { 3 } else { 0 };
    (window, window + 1)
}

/// When each box last looked deeper, and how deep the next look goes (one per box of a
/// store; a look that claims nothing goes one window deeper next time, round to one after
/// [`DEEPEST`]).
#[derive(Debug, Default)]
pub(crate) struct Depths {
    boxes: [Option<(Instant, i64)>; 4],
}

impl Depths {
    /// How many windows the short claim of box `index` may skip now, if it may look.
    pub(crate) fn next(&mut self, index: usize, now: Instant) -> Option<i64> {
        let slot = self.boxes.get_mut(index)?;
        match *slot {
            Some((at, _)) if now.duration_since(at) < DEEPER_EVERY => None,
            Some((_, depth)) => {
                *slot = Some((now, depth));
                Some(depth)
            }
            None => {
                *slot = Some((now, 1));
                Some(1)
            }
        }
    }

    /// What the look at `depth` found: rows (the next look stays there) or none (it goes
    /// one window deeper, round to one after [`DEEPEST`]).
    pub(crate) fn found(&mut self, index: usize, depth: i64, claimed: bool) {
        if let Some(Some((_, next))) = self.boxes.get_mut(index) {
            *next = if claimed { depth } else { depth % DEEPEST + 1 };
        }
    }
}

/// The claim statement: due rows found through the partial index in `seq` order, locked,
/// then updated by `ctid` (a TID scan: joining on `id` made the planner hash the whole
/// table, history included). The old status and holder are read from `due` to flag
/// takeovers (counted in `takeover_count`, not in `retry_count`). With
/// `by_tenant`, only PENDING rows of tenant `$6` (the pending-only tenant index). In an
/// inbox, only rows matching one of the (subscriber, type, tenant) triples of the next three
/// parameters (`$6..$8`, or `$7..$9` by tenant; a NULL type or tenant matches any; a NULL
/// array: any row). Parameters: `$1` ordered, `$2` limit, `$3` worker, `$4` lease in
/// seconds, `$5` floor seq, then those of the window ([`window_params`]).
pub(crate) fn claim(
    t: &str,
    same_subscriber: &str,
    returned: &str,
    by_tenant: bool,
    inbox: bool,
    start: Start,
) -> String {
    let due = due(t, same_subscriber, by_tenant, inbox, start);
    format!(
        "WITH due AS ({due}), \
         claimed AS ( \
           UPDATE {t} AS t SET \
             takeover_count = t.takeover_count + CASE WHEN t.status = 'PROCESSING' THEN 1 ELSE 0 END, \
             last_error = CASE WHEN t.status = 'PROCESSING' \
               THEN 'lease of ' || COALESCE(t.locked_by, '?') || ' expired at ' \
                    || COALESCE(t.locked_until::text, '?') || ' before it finished; taken over' \
               ELSE t.last_error END, \
             status = 'PROCESSING', locked_by = $3::text, \
             locked_until = {NOW} + $4::float8 * interval '1 second', last_modified_at = {NOW} \
           WHERE t.ctid = ANY(ARRAY(SELECT row_id FROM due)) \
           RETURNING {returned}) \
         SELECT t.*, CASE WHEN due.status = 'PROCESSING' THEN COALESCE(due.locked_by, '?') END \
           AS taken_over_from \
         FROM claimed t JOIN due ON due.seq = t.seq"
    )
}

/// The rows a claim takes: the window's candidates in `seq` order (streamed: the claim
/// reads only as many as it needs), each checked again once locked (another claim may
/// have taken it meanwhile), and, ordered, skipped when its key has an older live row.
fn due(t: &str, same_subscriber: &str, by_tenant: bool, inbox: bool, start: Start) -> String {
    let (window, skipped) = window_params(by_tenant, inbox);
    let floor = "COALESCE($5::int8, 0)";
    let first = match start {
        Start::Floor => floor.to_owned(),
        Start::Deeper => format!(
            "(SELECT p.seq FROM {t} p WHERE {} ORDER BY p.seq OFFSET ${skipped}::int8 LIMIT 1)",
            candidate("p", floor, by_tenant, inbox)
        ),
    };
    let candidates = candidate("w", &first, by_tenant, inbox);
    let tenant = tenant_filter("c", by_tenant);
    format!(
        "SELECT c.ctid AS row_id, c.seq, c.status, c.locked_by \
         FROM (SELECT w.ctid AS candidate, w.seq AS candidate_seq FROM {t} w \
               WHERE {candidates} \
               ORDER BY w.seq LIMIT ${window}::int8) win \
         JOIN {t} c ON c.ctid = win.candidate \
         WHERE c.status IN ('PENDING', 'PROCESSING') AND {due_now} {tenant} \
           AND (NOT $1::bool OR c.partition_key IS NULL OR NOT EXISTS ( \
                SELECT 1 FROM {t} o WHERE o.partition_key = c.partition_key \
                AND o.tenant_id = c.tenant_id {same_subscriber} \
                AND o.seq < c.seq AND o.status IN ('PENDING', 'PROCESSING'))) \
         ORDER BY win.candidate_seq LIMIT $2::int8 \
         FOR UPDATE OF c SKIP LOCKED",
        due_now = due_now("c"),
    )
}

/// The rows (as `alias`) from `first` on that a claim could take but for the key
/// check: live and due (PENDING and its time come, or PROCESSING with its lease run out),
/// of the claim's tenant and subscribers.
fn candidate(alias: &str, first: &str, by_tenant: bool, inbox: bool) -> String {
    format!(
        "{alias}.status IN ('PENDING', 'PROCESSING') AND {alias}.seq >= {first} {} {} AND {}",
        tenant_filter(alias, by_tenant),
        subscriber_filter(alias, by_tenant, inbox),
        due_now(alias),
    )
}

/// PENDING and its time come, or PROCESSING with its lease run out.
fn due_now(alias: &str) -> String {
    format!(
        "(({alias}.status = 'PENDING' AND {alias}.next_attempt_at <= {NOW}) \
          OR ({alias}.status = 'PROCESSING' AND {alias}.locked_until < {NOW}))"
    )
}

/// With `by_tenant`, only the PENDING rows of tenant `$6`.
fn tenant_filter(alias: &str, by_tenant: bool) -> String {
    if by_tenant {
        format!("AND {alias}.tenant_id = $6::text AND {alias}.status = 'PENDING'")
    } else {
        String::new()
    }
}

/// In an inbox, only the rows of the claim's (subscriber, type, tenant) triples.
fn subscriber_filter(alias: &str, by_tenant: bool, inbox: bool) -> String {
    if !inbox {
        return String::new();
    }
    let (a, b, c) = if by_tenant { (7, 8, 9) } else { (6, 7, 8) };
    format!(
        "AND (${a}::text[] IS NULL OR EXISTS ( \
           SELECT 1 FROM UNNEST(${a}::text[], ${b}::text[], ${c}::text[]) \
             AS k(subscriber, message_type, tenant) \
           WHERE k.subscriber = {alias}.subscriber \
             AND (k.message_type IS NULL OR k.message_type = {alias}.message_type) \
             AND (k.tenant IS NULL OR k.tenant = {alias}.tenant_id)))"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_sixteen_claims_and_at_least_its_floor() {
        assert_eq!(window_rows(10), WINDOW_ROWS);
        assert_eq!(window_rows(1_000), 16_000);
        assert_eq!(window_rows(usize::MAX), i64::MAX);
    }

    #[test]
    fn the_window_parameters_follow_the_claims_own() {
        assert_eq!(window_params(false, false), (6, 7));
        assert_eq!(window_params(true, false), (7, 8));
        assert_eq!(window_params(false, true), (9, 10));
        assert_eq!(window_params(true, true), (10, 11));
    }

    #[test]
    fn looks_deeper_go_once_a_second_one_window_further_until_they_find_rows() {
        let mut depths = Depths::default();
        let start = Instant::now();
        assert_eq!(depths.next(1, start), Some(1));
        assert_eq!(depths.next(1, start + Duration::from_millis(500)), None);
        assert_eq!(depths.next(0, start), Some(1), "each box on its own");
        depths.found(1, 1, false);
        let mut at = start;
        let mut seen = Vec::new();
        for _ in 0..DEEPEST {
            at += DEEPER_EVERY;
            let depth = depths.next(1, at).expect("a second later");
            seen.push(depth);
            depths.found(1, depth, false);
        }
        assert_eq!(
            seen,
            [2, 3, 4, 5, 6, 7, 8, 1],
            "round again after the deepest"
        );
        at += DEEPER_EVERY;
        let depth = depths.next(1, at).expect("a second later");
        depths.found(1, depth, true);
        assert_eq!(
            depths.next(1, at + DEEPER_EVERY),
            Some(depth),
            "stays where rows were"
        );
        assert_eq!(depths.next(9, at), None, "no such box");
    }
}
