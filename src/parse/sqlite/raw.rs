//! A query's integer columns read through SQLite's C API, for the loops that read every
//! launch and every runtime call. rusqlite's row accessors check the column index and build
//! a typed value for each read: measured with perf on a 1.5M-launch export that was 28% of the
//! report's CPU time, more than SQLite's own decoding (25%). Here a read is the type and the
//! value, nothing else; the index is checked once, against the statement's column count.

use std::ffi::{c_int, CStr, CString};
use std::marker::PhantomData;
use std::ptr::NonNull;

use rusqlite::{ffi, Connection};

/// A prepared statement stepped row by row; finalized when dropped. It borrows the connection
/// it was prepared on, so it cannot outlive it, and (holding a raw pointer) stays on its
/// thread.
pub(crate) struct RawRows<'c> {
    stmt: NonNull<ffi::sqlite3_stmt>,
    db: *mut ffi::sqlite3,
    columns: usize,
    _conn: PhantomData<&'c Connection>,
}

impl<'c> RawRows<'c> {
    /// Prepare `sql` on `conn`; the error is SQLite's message.
    pub(crate) fn prepare(conn: &'c Connection, sql: &str) -> Result<Self, String> {
        let text = CString::new(sql).map_err(|e| e.to_string())?;
        // SAFETY: the handle is the open connection `conn`, borrowed for 'c; the statement
        // pointer is written by SQLite and checked before use.
        unsafe {
            let db = conn.handle();
            let mut stmt = std::ptr::null_mut();
            let rc =
                ffi::sqlite3_prepare_v2(db, text.as_ptr(), -1, &mut stmt, std::ptr::null_mut());
            let Some(stmt) = NonNull::new(stmt).filter(|_| rc == ffi::SQLITE_OK) else {
                ffi::sqlite3_finalize(stmt);
                return Err(message(db));
            };
            let columns = ffi::sqlite3_column_count(stmt.as_ptr()).max(0) as usize;
            Ok(RawRows {
                stmt,
                db,
                columns,
                _conn: PhantomData,
            })
        }
    }

    /// Step to the next row: true on a row, false at the end, SQLite's message on an error.
    pub(crate) fn step(&mut self) -> Result<bool, String> {
        // SAFETY: `stmt` is a live prepared statement of this connection (finalized only in
        // Drop).
        match unsafe { ffi::sqlite3_step(self.stmt.as_ptr()) } {
            ffi::SQLITE_ROW => Ok(true),
            ffi::SQLITE_DONE => Ok(false),
            _ => Err(unsafe { message(self.db) }),
        }
    }

    /// Column `i` of the current row as an integer (None: NULL). Any other type is an error
    /// naming the column, as rusqlite's would be; so is a column the query does not have.
    /// Only between a `step` that gave true and the next `step`.
    pub(crate) fn int(&self, i: usize) -> Result<Option<i64>, String> {
        if i >= self.columns {
            return Err(format!("no column {i} in a query of {}", self.columns));
        }
        // SAFETY: a live statement on a row (the caller's contract; SQLite answers NULL
        // otherwise), the column within its column count. The value is read once: its type
        // and its integer from the one pointer (a column read per call costs SQLite's
        // statement checks each time), before the next step. SQLite calls such a value
        // unprotected: read without the connection's mutex, safe only where no other thread
        // uses the connection, as here (each reader opens its own, and the raw pointers keep
        // this type on its thread).
        unsafe {
            let v = ffi::sqlite3_column_value(self.stmt.as_ptr(), i as c_int);
            match ffi::sqlite3_value_type(v) {
                ffi::SQLITE_INTEGER => Ok(Some(ffi::sqlite3_value_int64(v))),
                ffi::SQLITE_NULL => Ok(None),
                t => Err(format!(
                    "column {}: {} where an integer belongs",
                    self.name(i),
                    match t {
                        ffi::SQLITE_FLOAT => "a real number",
                        ffi::SQLITE_TEXT => "text",
                        _ => "a blob",
                    }
                )),
            }
        }
    }

    /// Column `i` of the current row as a number: an integer or a real (None: NULL). Text or
    /// a blob is an error naming the column. As [`RawRows::int`], only on a row.
    pub(crate) fn number(&self, i: usize) -> Result<Option<f64>, String> {
        if i >= self.columns {
            return Err(format!("no column {i} in a query of {}", self.columns));
        }
        // SAFETY: as in `int`.
        unsafe {
            let v = ffi::sqlite3_column_value(self.stmt.as_ptr(), i as c_int);
            match ffi::sqlite3_value_type(v) {
                ffi::SQLITE_INTEGER => Ok(Some(ffi::sqlite3_value_int64(v) as f64)),
                ffi::SQLITE_FLOAT => Ok(Some(ffi::sqlite3_value_double(v))),
                ffi::SQLITE_NULL => Ok(None),
                t => Err(format!(
                    "column {}: {} where a number belongs",
                    self.name(i),
                    match t {
                        ffi::SQLITE_TEXT => "text",
                        _ => "a blob",
                    }
                )),
            }
        }
    }

    /// Column `i` as an integer that must be there: NULL is an error naming the column.
    pub(crate) fn need(&self, i: usize) -> Result<i64, String> {
        self.int(i)?
            .ok_or_else(|| format!("column {}: NULL where an integer belongs", self.name(i)))
    }

    /// Column `i`'s name in the query (its alias where it has one), for a message.
    fn name(&self, i: usize) -> String {
        // SAFETY: a live statement, `i` within its column count; SQLite owns the string
        // until the statement is finalized, and it is copied here.
        unsafe {
            let n = ffi::sqlite3_column_name(self.stmt.as_ptr(), i as c_int);
            match n.is_null() {
                true => i.to_string(),
                false => CStr::from_ptr(n).to_string_lossy().into_owned(),
            }
        }
    }

    /// Columns `at..at + 7` as a launch configuration, each clamped to an i32 (NULL: 0).
    pub(crate) fn config(&self, at: usize) -> Result<[i32; 7], String> {
        let mut c = [0i32; 7];
        for (i, v) in c.iter_mut().enumerate() {
            *v = self
                .int(at + i)?
                .unwrap_or(0)
                .clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
        }
        Ok(c)
    }
}

impl Drop for RawRows<'_> {
    fn drop(&mut self) {
        // SAFETY: prepared by `prepare`, finalized once, here.
        unsafe {
            ffi::sqlite3_finalize(self.stmt.as_ptr());
        }
    }
}

/// The connection's last error message.
///
/// # Safety
/// `db` is an open connection.
unsafe fn message(db: *mut ffi::sqlite3) -> String {
    let m = ffi::sqlite3_errmsg(db);
    match m.is_null() {
        true => "SQLite error".to_string(),
        false => CStr::from_ptr(m).to_string_lossy().into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Integers, NULLs, a wrong type and a column the query lacks, on an in-memory table
    /// (hand-made: the error paths).
    #[test]
    fn reads_integers_and_names_what_is_not_one() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (a, b); INSERT INTO t VALUES (1, NULL), (5000000000, 'x'), (2, 2.5);",
        )
        .unwrap();
        let mut rows = RawRows::prepare(&conn, "SELECT a, b FROM t ORDER BY rowid").unwrap();
        assert!(rows.step().unwrap());
        assert_eq!(rows.int(0).unwrap(), Some(1));
        assert_eq!(rows.int(1).unwrap(), None);
        assert!(rows.need(1).unwrap_err().contains("column b: NULL"));
        assert!(rows.int(2).unwrap_err().contains("no column 2"));
        assert!(rows.step().unwrap());
        assert_eq!(rows.int(0).unwrap(), Some(5_000_000_000));
        assert!(rows.int(1).unwrap_err().contains("column b: text"));
        assert_eq!(rows.need(0).unwrap(), 5_000_000_000);
        assert!(rows
            .number(1)
            .unwrap_err()
            .contains("column b: text where a number belongs"));
        assert!(rows.step().unwrap());
        assert!(rows.int(1).unwrap_err().contains("a real number"));
        assert_eq!(rows.number(1).unwrap(), Some(2.5));
        assert_eq!(rows.number(0).unwrap(), Some(2.0));
        assert!(!rows.step().unwrap());
        let bad = RawRows::prepare(&conn, "SELECT nothere FROM t")
            .err()
            .unwrap();
        assert!(bad.contains("nothere"), "{bad}");
    }

    #[test]
    fn a_clamped_configuration() {
        let conn = Connection::open_in_memory().unwrap();
        let mut rows =
            RawRows::prepare(&conn, "SELECT 1, 2, 3, 99999999999, -99999999999, NULL, 7").unwrap();
        assert!(rows.step().unwrap());
        assert_eq!(rows.config(0).unwrap(), [1, 2, 3, i32::MAX, i32::MIN, 0, 7]);
    }
}
