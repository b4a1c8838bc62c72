//! A plain text table: a header line and aligned columns separated by two spaces.

use std::io::{self, Write};

/// A table being built.
#[derive(Debug, Default)]
pub(crate) struct Table {
    header: Vec<String>,
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles, all left-aligned.
    pub(crate) fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            right: vec![false; header.len()],
            rows: Vec::new(),
        }
    }

    /// Right-aligns the columns at these indexes (numbers).
    pub(crate) fn right_align(mut self, columns: &[usize]) -> Table {
        for &c in columns {
            if let Some(flag) = self.right.get_mut(c) {
                *flag = true;
            }
        }
        self
    }

    /// Adds a row; missing cells are blank, extra cells are dropped.
    pub(crate) fn push(&mut self, mut row: Vec<String>) {
        row.resize(self.header.len(), String::new());
        self.rows.push(row);
    }

    /// Writes the table.
    pub(crate) fn write(&self, out: &mut impl Write) -> io::Result<()> {
        let width = |c: usize| {
            self.rows
                .iter()
                .map(|r| r[c].chars().count())
                .chain([self.header[c].chars().count()])
                .max()
                .unwrap_or_default()
        };
        let widths: Vec<usize> = (0..self.header.len()).map(width).collect();
        for row in [&self.header].into_iter().chain(&self.rows) {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                if c > 0 {
                    line.push_str("  ");
                }
                let pad = " ".repeat(widths[c] - cell.chars().count());
                if self.right[c] {
                    line.push_str(&pad);
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    line.push_str(&pad);
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_aligned_and_numbers_right_aligned() {
        let mut table = Table::new(&["BOX", "PENDING", "NOTE"]).right_align(&[1]);
        table.push(vec!["outbox_events".into(), "3".into(), "ok".into()]);
        table.push(vec!["inbox".into(), "1200".into()]);
        let mut out = Vec::new();
        table.write(&mut out).expect("write");
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            "BOX            PENDING  NOTE\n\
             outbox_events        3  ok\n\
             inbox             1200\n"
        );
    }
}
