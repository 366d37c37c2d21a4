//! What `seekless dupes` writes: the user's decisions, and forgetting the rows of files
//! proven gone.

use std::fs::File;
use std::path::PathBuf;

use rusqlite::{Connection, params};
use seekless_jobs::destructive::Forget;

use super::lock::begin;
use super::{CatalogError, now};

/// A decision as the catalog stores it (see `V5_DECISIONS`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StoredDecision {
    pub id: i64,
    pub decision: String,
    /// Sorted BLAKE3s, hex, one space between.
    pub contents: String,
    pub keeper: Option<String>,
    pub keeper_path: Option<Vec<u8>>,
    pub made: String,
}

/// The catalog opened for what `seekless dupes` writes, locked for writing by this process
/// ([`WriterLock::open_for_dupes`]).
pub(crate) struct DupesWriter {
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
    pub(super) _lock: File,
}

impl DupesWriter {
    fn err(&self, e: rusqlite::Error) -> CatalogError {
        CatalogError::io(&self.path, e)
    }

    /// Records `decisions` (its `id` and `made` are ignored) in one transaction, each
    /// replacing the one of its kind on the same contents if there is one (the user's newer decision).
    /// Returns their ids.
    pub fn record(
        &mut self,
        decisions: &[StoredDecision],
        waiting: &dyn Fn(&str),
    ) -> Result<Vec<i64>, CatalogError> {
        let tx = begin(&self.conn, &self.path, waiting)?;
        let made = now();
        let mut ids = Vec::with_capacity(decisions.len());
        {
            let mut put = tx
                .prepare_cached(
                    "INSERT INTO decisions (decision, contents, keeper, keeper_path, made)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (decision, contents) DO UPDATE SET
                         keeper = excluded.keeper, keeper_path = excluded.keeper_path,
                         made = excluded.made
                     RETURNING id",
                )
                .map_err(|e| self.err(e))?;
            for d in decisions {
                let id: i64 = put
                    .query_row(
                        params![d.decision, d.contents, d.keeper, d.keeper_path, made],
                        |r| r.get(0),
                    )
                    .map_err(|e| self.err(e))?;
                ids.push(id);
            }
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(ids)
    }

    /// Removes the decisions `ids` (the user's `--undecide`), in one transaction; returns
    /// the ids that were there.
    pub fn undecide(
        &mut self,
        ids: &[i64],
        waiting: &dyn Fn(&str),
    ) -> Result<Vec<i64>, CatalogError> {
        let tx = begin(&self.conn, &self.path, waiting)?;
        let mut gone = Vec::new();
        {
            let mut delete = tx
                .prepare_cached("DELETE FROM decisions WHERE id = ?1")
                .map_err(|e| self.err(e))?;
            for &id in ids {
                if delete.execute([id]).map_err(|e| self.err(e))? > 0 {
                    gone.push(id);
                }
            }
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(gone)
    }

    /// Forgets the rows of files `dupes` moved away or put in the trash (proven gone: a
    /// [`Forget`]), with their thumbnails, in one transaction.
    pub fn forget(&mut self, gone: &Forget, waiting: &dyn Fn(&str)) -> Result<(), CatalogError> {
        if gone.len() == 0 {
            return Ok(());
        }
        let tx = begin(&self.conn, &self.path, waiting)?;
        super::forget_rows(&tx, gone).map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }
}
