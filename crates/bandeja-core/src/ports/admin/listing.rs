//! One listing across boxes: [`list_page`] merges the pages of every box a filter covers
//! into one ordering (newest first by `created_at`), returns exactly `limit` rows while
//! more match, and hands back one [`Cursor`] per direction that reaches every row, page
//! after page, whichever boxes they sit in.
//!
//! A cursor holds one bound per box (the `seq` where that box's rows stop), so the boxes
//! are walked side by side: a page takes the newest heads of the four walks, and the next
//! page starts each walk where this one stopped. No row is skipped or listed twice, however
//! the rows of different boxes interleave in time. The text form ([`Cursor`]'s `Display`
//! and `FromStr`) is what the HTTP API and the CLI hand out and read back.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use crate::error::StoreError;
use crate::record::BoxKind;

use super::{Admin, MessageFilter, MessageView, Page, MAX_PAGE};

/// Which way a [`Cursor`] walks from where it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Towards older rows (the next page of a newest-first listing).
    Older,
    /// Towards newer rows (back to the previous page).
    Newer,
}

/// Where a page of a cross-box listing starts: a direction and, for each box (in
/// [`BoxKind::ALL`] order), the `seq` its rows are taken below ([`Direction::Older`]) or
/// above ([`Direction::Newer`]); no bound for a box means "from its newest row" (older) or
/// "from its oldest row" (newer).
///
/// Its text form is `o.` or `n.` followed by four bounds separated by dots, each a number
/// or `*` for none, for example `o.120.*.45.*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    direction: Direction,
    bounds: [Option<i64>; 4],
}

impl Cursor {
    /// The rows of `box_kind` below `seq`, walking older, and every row of the other boxes
    /// from their newest (what a per-box `before` of a single-box listing means).
    pub fn older_than(box_kind: BoxKind, seq: i64) -> Cursor {
        let mut bounds = [None; 4];
        bounds[box_kind.index()] = Some(seq);
        Cursor {
            direction: Direction::Older,
            bounds,
        }
    }

    /// The direction this cursor walks.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// The bound of `box_kind`'s rows.
    pub fn bound(&self, box_kind: BoxKind) -> Option<i64> {
        self.bounds[box_kind.index()]
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.direction {
            Direction::Older => "o",
            Direction::Newer => "n",
        })?;
        for bound in self.bounds {
            match bound {
                Some(seq) => write!(f, ".{seq}")?,
                None => f.write_str(".*")?,
            }
        }
        Ok(())
    }
}

/// A cursor's text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad page cursor `{text}`: expected `o.` or `n.` and four bounds (numbers or `*`) \
     separated by dots, such as `o.120.*.45.*`; pass back a cursor a previous page printed"
)]
pub struct CursorError {
    text: String,
}

impl FromStr for Cursor {
    type Err = CursorError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || CursorError {
            text: text.chars().take(80).collect(),
        };
        let mut parts = text.split('.');
        let direction = match parts.next() {
            Some("o") => Direction::Older,
            Some("n") => Direction::Newer,
            _ => return Err(bad()),
        };
        let mut bounds = [None; 4];
        for bound in &mut bounds {
            *bound = match parts.next().ok_or_else(bad)? {
                "*" => None,
                number => Some(number.parse::<i64>().map_err(|_| bad())?),
            };
        }
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(Cursor { direction, bounds })
    }
}

/// One page of a cross-box listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// At most `limit` rows, newest first; exactly `limit` while more rows match in the
    /// direction walked.
    pub rows: Vec<MessageView>,
    /// The next page towards older rows, when there are (or, walking back, were) some.
    pub older: Option<Cursor>,
    /// The page towards newer rows, when this page is not the first.
    pub newer: Option<Cursor>,
}

/// The listing order of two rows (with their box's index): newest `created_at` first,
/// then boxes in [`BoxKind::ALL`] order, then highest `seq` first.
fn newest_first(a: (usize, &MessageView), b: (usize, &MessageView)) -> Ordering {
    b.1.row
        .created_at
        .cmp(&a.1.row.created_at)
        .then(a.0.cmp(&b.0))
        .then(b.1.row.message.seq.cmp(&a.1.row.message.seq))
}

/// One page of the rows matching `filter` across the boxes it covers, `limit` rows at
/// most (capped one below [`MAX_PAGE`]), starting at `from` (the first page when `None`).
/// A `limit` of 0 lists nothing and links nowhere.
/// Reads one page of each box (one query each).
pub async fn list_page<A: Admin>(
    admin: &A,
    filter: &MessageFilter,
    limit: usize,
    from: Option<Cursor>,
) -> Result<Listed, StoreError> {
    // One row more than the page is read from each box to know whether more remain, and a
    // box answers at most MAX_PAGE rows.
    let limit = limit.min(MAX_PAGE - 1);
    let from = from.unwrap_or(Cursor {
        direction: Direction::Older,
        bounds: [None; 4],
    });
    if limit == 0 {
        // Nothing listed, nowhere to go from here.
        return Ok(Listed {
            rows: Vec::new(),
            older: None,
            newer: None,
        });
    }
    let mut walks: Vec<Walk> = Vec::new();
    for box_kind in filter.boxes() {
        let bound = from.bound(box_kind);
        let page = match from.direction {
            Direction::Older => Page {
                limit: limit + 1,
                before_seq: bound,
                after_seq: None,
            },
            Direction::Newer => Page {
                limit: limit + 1,
                before_seq: None,
                after_seq: bound,
            },
        };
        let one_box = MessageFilter {
            box_kind: Some(box_kind),
            ..filter.clone()
        };
        let mut rows = admin.list(&one_box, page).await?;
        // Walk each box from the listing's start: newest first when walking older.
        if from.direction == Direction::Newer {
            rows.reverse();
        }
        walks.push(Walk {
            index: box_kind.index(),
            rows,
        });
    }
    Ok(merge(from, walks, limit))
}

/// The rows read from one box, in the order its walk takes them.
struct Walk {
    index: usize,
    rows: Vec<MessageView>,
}

/// Takes `limit` rows from the walks' heads in listing order and works out both cursors.
fn merge(from: Cursor, walks: Vec<Walk>, limit: usize) -> Listed {
    // Which row of each walk is its head.
    let mut next = vec![0usize; walks.len()];
    let mut picks: Vec<(usize, usize)> = Vec::with_capacity(limit);
    while picks.len() < limit {
        let mut best: Option<usize> = None;
        for (slot, walk) in walks.iter().enumerate() {
            let Some(candidate) = walk.rows.get(next[slot]) else {
                continue;
            };
            let first = match best {
                None => true,
                Some(current) => {
                    let held = &walks[current];
                    let order = newest_first(
                        (walk.index, candidate),
                        (held.index, &held.rows[next[current]]),
                    );
                    match from.direction {
                        Direction::Older => order == Ordering::Less,
                        Direction::Newer => order == Ordering::Greater,
                    }
                }
            };
            if first {
                best = Some(slot);
            }
        }
        let Some(slot) = best else { break };
        picks.push((slot, next[slot]));
        next[slot] += 1;
    }
    let more = walks
        .iter()
        .enumerate()
        .any(|(slot, walk)| next[slot] < walk.rows.len());
    let started = from.bounds.iter().any(Option::is_some);
    let mut older = from.bounds;
    let mut newer = from.bounds;
    for (slot, walk) in walks.iter().enumerate() {
        let taken = &walk.rows[..next[slot]];
        let seqs = || taken.iter().map(|v| v.row.message.seq);
        let all = || walk.rows.iter().map(|v| v.row.message.seq);
        let bound = from.bounds[walk.index];
        older[walk.index] = match (seqs().min(), from.direction) {
            (Some(seq), _) => Some(seq),
            (None, Direction::Older) => bound,
            // Walking newer, nothing taken here: this box's rows up to the bound are older.
            (None, Direction::Newer) => match bound {
                Some(seq) => Some(seq.saturating_add(1)),
                None => all().min(),
            },
        };
        newer[walk.index] = match (seqs().max(), from.direction) {
            (Some(seq), _) => Some(seq),
            (None, Direction::Newer) => bound,
            // Walking older, nothing taken here: this box's rows from the bound are newer.
            (None, Direction::Older) => match bound {
                Some(seq) => Some(seq.saturating_sub(1)),
                None => all().max(),
            },
        };
    }
    let mut rows: Vec<MessageView> = picks
        .into_iter()
        .map(|(slot, at)| walks[slot].rows[at].clone())
        .collect();
    if from.direction == Direction::Newer {
        rows.reverse();
    }
    let (has_older, has_newer) = match from.direction {
        Direction::Older => (more, started),
        Direction::Newer => (started, more),
    };
    Listed {
        rows,
        older: has_older.then_some(Cursor {
            direction: Direction::Older,
            bounds: older,
        }),
        newer: has_newer.then_some(Cursor {
            direction: Direction::Newer,
            bounds: newer,
        }),
    }
}
