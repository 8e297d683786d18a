//! The nsys SQLite export, read-only. Tables and columns differ between nsys versions, so each
//! query first checks that what it needs exists.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::error::Error;

pub struct NsysDb {
    conn: Connection,
    path: std::path::PathBuf,
}

impl NsysDb {
    pub fn open(path: &Path) -> Result<Self, Error> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| Error::parse(path, None, format!("cannot open as SQLite: {e}")))?;
        let db = NsysDb {
            conn,
            path: path.to_path_buf(),
        };
        // Opening is lazy: touch the schema so a file that is not a database fails here.
        db.columns("sqlite_master")?;
        Ok(db)
    }

    fn err(&self, e: impl std::fmt::Display) -> Error {
        Error::parse(&self.path, None, e.to_string())
    }

    /// The columns of `table`; empty when the table does not exist.
    pub fn columns(&self, table: &str) -> Result<Vec<String>, Error> {
        let mut stmt = self
            .conn
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .map_err(|e| self.err(format!("not an nsys SQLite export: {e}")))?;
        let cols = stmt
            .query_map([table], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        Ok(cols)
    }

    fn require(&self, table: &str, cols: &[&str]) -> Result<(), Error> {
        let have = self.columns(table)?;
        if have.is_empty() {
            return Err(self.err(format!(
                "table {table} is missing (is this an nsys export of a run with CUDA kernels?)"
            )));
        }
        for c in cols {
            if !have.iter().any(|h| h == c) {
                return Err(self.err(format!("table {table} has no column {c} (nsys version?)")));
            }
        }
        Ok(())
    }

    /// Demangled kernel name (as `nsys stats` prints it) -> mangled names.
    pub fn mangled_names(&self) -> Result<HashMap<String, Vec<String>>, Error> {
        self.require(
            "CUPTI_ACTIVITY_KIND_KERNEL",
            &["demangledName", "mangledName"],
        )?;
        self.require("StringIds", &["id", "value"])?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT DISTINCT d.value, m.value FROM CUPTI_ACTIVITY_KIND_KERNEL k \
                 JOIN StringIds d ON k.demangledName = d.id \
                 JOIN StringIds m ON k.mangledName = m.id",
            )
            .map_err(|e| self.err(e))?;
        let mut out: HashMap<String, Vec<String>> = HashMap::new();
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| self.err(e))?;
        for row in rows {
            let (d, m) = row.map_err(|e| self.err(e))?;
            out.entry(d).or_default().push(m);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_every_summary_kernel_to_its_mangled_name() {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/nsys");
        let db = NsysDb::open(&dir.join("run.sqlite")).unwrap();
        let map = db.mangled_names().unwrap();
        let kernels =
            crate::parse::nsys::read_kernels(&dir.join("summary_cuda_gpu_kern_sum.csv")).unwrap();
        for k in &kernels {
            assert!(map.contains_key(&k.name), "{}", k.name);
        }
        assert_eq!(
            map["nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN"],
            ["nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN"]
        );
    }

    #[test]
    fn a_file_that_is_not_a_database_is_a_parse_error() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x.sqlite");
        std::fs::write(&p, vec![0x42u8; 4096]).unwrap();
        let err = NsysDb::open(&p)
            .and_then(|d| d.mangled_names())
            .err()
            .unwrap();
        assert_eq!(err.exit_code(), crate::exit_codes::PARSE);
        assert!(err.to_string().contains("x.sqlite"));
        let empty = tmp.path().join("empty.sqlite");
        Connection::open(&empty)
            .unwrap()
            .execute_batch("CREATE TABLE t(a);")
            .unwrap();
        let err = NsysDb::open(&empty).unwrap().mangled_names().unwrap_err();
        assert!(
            err.to_string().contains("CUPTI_ACTIVITY_KIND_KERNEL"),
            "{err}"
        );
    }
}
