//! What an export shows of how nsys traced CUDA: whether it holds kernels, the kernel launch
//! calls it recorded, and whether its diagnostics say CUDA was traced in hardware (newer nsys
//! does so by default on newer GPUs, and falls back in silence where it cannot).

use super::*;

/// nsys's diagnostic where it traced CUDA in hardware.
const HARDWARE: &str = "Hardware tracing used for CUDA tracing";
/// nsys's diagnostic where its CUDA trace (either way) started.
const CUDA_INJECTED: &str = "CUDA injection initialized";

/// See [`NsysDb::cuda_trace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaTraceSeen {
    /// The export holds at least one kernel.
    pub kernels: bool,
    /// Kernel launch calls recorded (counted only where it holds no kernel; 0 otherwise).
    pub launch_calls: u64,
    /// Traced in hardware (true) or not (false), as its diagnostics say; None where they do not
    /// say (no diagnostics, or no CUDA trace started).
    pub hardware: Option<bool>,
}

impl NsysDb {
    /// How nsys traced CUDA in this export (see [`CudaTraceSeen`]).
    pub fn cuda_trace(&self) -> Result<CudaTraceSeen, Error> {
        let kernels = self.has_columns("CUPTI_ACTIVITY_KIND_KERNEL", &["start"])?
            && self.any("SELECT EXISTS(SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL)")?;
        let launch_calls = match kernels
            || !self.has_columns("CUPTI_ACTIVITY_KIND_RUNTIME", &["nameId"])?
            || !self.has_columns("StringIds", &["id", "value"])?
        {
            true => 0,
            false => self
                .conn
                .query_row(
                    "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE nameId IN \
                     (SELECT id FROM StringIds WHERE value LIKE 'cudaLaunchKernel%' \
                     OR value LIKE 'cuLaunchKernel%' OR value LIKE 'cudaLaunchCooperativeKernel%' \
                     OR value LIKE 'cuLaunchCooperativeKernel%')",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(|e| self.err(e))?
                .max(0) as u64,
        };
        let hardware = match self.has_columns("DIAGNOSTIC_EVENT", &["text"])? {
            false => None,
            true if self.said(HARDWARE)? => Some(true),
            true if self.said(CUDA_INJECTED)? => Some(false),
            true => None,
        };
        Ok(CudaTraceSeen {
            kernels,
            launch_calls,
            hardware,
        })
    }

    /// Whether a diagnostic of the export starts with `text`.
    fn said(&self, text: &str) -> Result<bool, Error> {
        self.conn
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM DIAGNOSTIC_EVENT WHERE text LIKE ?1 || '%')",
                [text],
                |r| r.get::<_, bool>(0),
            )
            .map_err(|e| self.err(e))
    }

    fn any(&self, sql: &str) -> Result<bool, Error> {
        self.conn
            .query_row(sql, [], |r| r.get::<_, bool>(0))
            .map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real() -> std::path::PathBuf {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/nsys/run.sqlite")
    }

    /// The real H100 capture (nsys 2025.3.1) traced CUDA in software and holds its kernels; the
    /// same export with its kernel rows dropped and nsys's hardware diagnostic added
    /// (hand-made) holds the launch calls alone.
    #[test]
    fn an_export_says_how_cuda_was_traced() {
        let db = NsysDb::open(&real()).unwrap();
        let seen = db.cuda_trace().unwrap();
        assert_eq!(
            seen,
            CudaTraceSeen {
                kernels: true,
                launch_calls: 0,
                hardware: Some(false)
            }
        );
        let tmp = tempfile::tempdir().unwrap();
        let hand_made = tmp.path().join("hardware_trace_hand_made.sqlite");
        std::fs::copy(real(), &hand_made).unwrap();
        Connection::open(&hand_made)
            .unwrap()
            .execute_batch(&format!(
                "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; \
                 INSERT INTO DIAGNOSTIC_EVENT (timestamp, timestampType, source, severity, text) \
                 VALUES (0, 1, 1, 1, '{HARDWARE}');"
            ))
            .unwrap();
        let seen = NsysDb::open(&hand_made).unwrap().cuda_trace().unwrap();
        assert!(!seen.kernels && seen.hardware == Some(true), "{seen:?}");
        assert_eq!(seen.launch_calls, 1464);
    }
}
