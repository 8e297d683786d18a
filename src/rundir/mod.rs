//! The MAIN run directory: created atomically, never reused. Every file name of the layout is
//! named here and nowhere else; the passes write through these names and the analysis reads
//! through them.
//!
//! ```text
//! config.yaml env.json inputs.yaml status.json         provenance and outcome
//! nsys/cmd.txt nsys/nsys.log                           the nsys pass's command lines and log
//! nsys/run[.rank<N>].{nsys-rep,sqlite}                 report and its SQLite export, per rank
//! nsys/summary[.rank<N>]_<report>.csv                  `nsys stats` reports, per rank
//! ncu/cmd.txt ncu/ncu.log ncu/sections.txt             the ncu pass's command lines and logs
//! ncu/<base>[.rank<N>].ncu-rep ncu/<base>_raw[_mangled].csv   report and its raw imports
//! kernels.md stakeholder_summary.md kernels.csv summary.json roofline.svg   the reports
//! repeats/<i>/{status.json,nsys/...}                   timed nsys passes 2..N (`run.repeat`)
//! packages/{cmd.txt,query.log,versions.json}           a Python workload's interpreter and packages
//! ```

pub(crate) mod record;
pub(crate) mod status;
mod write;

use std::hash::{BuildHasher, Hasher};
use std::io;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// Files relative to the run directory, as the reports cite them.
pub(crate) const KERN_SUM: &str = "nsys/summary_cuda_gpu_kern_sum.csv";
pub(crate) const NVTX_SUM: &str = "nsys/summary_nvtx_sum.csv";
/// A Python workload's interpreter and package versions (the packages pass).
pub(crate) const PACKAGES: &str = "packages/versions.json";

#[cfg(test)]
pub(crate) const SQLITE: &str = "nsys/run.sqlite";

/// A run directory and the names of everything in it (the names are a contract).
#[derive(Debug, Clone)]
pub(crate) struct RunDir {
    pub(crate) path: PathBuf,
}

impl RunDir {
    /// An existing run directory, for `stage2 report`.
    pub(crate) fn open(path: &Path) -> Result<Self, Error> {
        if path.exists() && !path.is_dir() {
            return Err(Error::usage(format!(
                "{} is not a directory: `stage2 report` takes a run directory",
                path.display()
            )));
        }
        if !path.is_dir() {
            return Err(Error::usage(format!(
                "run directory {} does not exist",
                path.display()
            )));
        }
        Ok(RunDir {
            path: path.to_path_buf(),
        })
    }

    /// Create `root/id` (id generated when `None`). An explicit id that already exists is a
    /// usage error; a generated one that clashes is drawn again.
    pub(crate) fn create(root: &Path, id: Option<&str>) -> Result<Self, Error> {
        if let Some(id) = id {
            validate_id(id)?;
        }
        // As given (nothing made yet), then as the links resolve once it exists.
        check_root(&std::path::absolute(root).unwrap_or(root.to_path_buf()), id)?;
        std::fs::create_dir_all(root)
            .map_err(|e| Error::io("create run root", root, dangling(root, e)))?;
        // Absolute, so cmd.txt lines paste from anywhere and the workload's cwd does not matter.
        let root = &root
            .canonicalize()
            .map_err(|e| Error::io("resolve run root", root, e))?;
        check_root(root, id)?;
        for attempt in 0..16 {
            let name = id
                .map(str::to_string)
                .unwrap_or_else(|| generate_id(attempt));
            let path = root.join(&name);
            // create_dir (not create_dir_all) fails when the directory exists: two runs can
            // never share one, even when they start in the same second.
            match create_private(&path) {
                Ok(()) => {
                    let dir = RunDir { path };
                    for sub in ["nsys", "ncu"] {
                        std::fs::create_dir(dir.path.join(sub)).map_err(|e| {
                            Error::io("create", dir.path.join(sub), e)
                        })?;
                    }
                    return Ok(dir);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && id.is_none() => continue,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return Err(Error::usage(format!(
                        "run directory {} already exists; stage2 never reuses one: pick another --run-id or leave it out",
                        path.display()
                    )))
                }
                Err(e) => return Err(Error::io("create run directory", &path, e)),
            }
        }
        Err(Error::usage(format!(
            "could not find a free run id under {}",
            root.display()
        )))
    }

    /// Open the finished run to other users (`run.private=false`): directories 0755, files
    /// 0644, links left alone. Errors are warnings: the run itself is complete.
    pub(crate) fn open_up(&self) {
        self.set_modes(0o755, 0o644, "open to other users");
    }

    /// Run directories 0700 and their files 0600 (`run.private`), whatever wrote them: the
    /// profilers and the workload create theirs with their own modes.
    pub(crate) fn close_up(&self) {
        self.set_modes(0o700, 0o600, "make private");
    }

    /// Every folder and regular file under the run directory to `dirs` / `files`; links are
    /// left alone (never followed).
    fn set_modes(&self, dirs: u32, files: u32, what: &str) {
        use std::os::unix::fs::PermissionsExt;
        let mut stack = vec![self.path.clone()];
        while let Some(dir) = stack.pop() {
            let set = |p: &Path, mode: u32| {
                if let Err(e) = std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)) {
                    tracing::warn!("cannot {what} {}: {e}", p.display());
                }
            };
            set(&dir, dirs);
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                match e.file_type() {
                    Ok(t) if t.is_dir() => stack.push(e.path()),
                    Ok(t) if t.is_file() => set(&e.path(), files),
                    _ => {}
                }
            }
        }
    }

    /// `repeats/<i>/`: the i-th timed nsys pass (i >= 2) of `run.repeat`, laid out like a run
    /// directory of its own (status.json, nsys/). Created when `create` is true.
    pub(crate) fn repeat(&self, i: u32, create: bool) -> Result<RunDir, Error> {
        let dir = RunDir {
            path: self.path.join("repeats").join(i.to_string()),
        };
        if create {
            let nsys = dir.path.join("nsys");
            std::fs::create_dir_all(&nsys).map_err(|e| Error::io("create", &nsys, e))?;
        }
        Ok(dir)
    }

    /// The repeated passes this run holds, in order (empty for a single timed pass).
    pub(crate) fn repeats(&self) -> Vec<RunDir> {
        let mut found: Vec<u32> = std::fs::read_dir(self.path.join("repeats"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        found.sort_unstable();
        found
            .into_iter()
            .filter_map(|i| self.repeat(i, false).ok())
            .collect()
    }

    pub(crate) fn id(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
    pub(crate) fn nsys(&self, name: &str) -> PathBuf {
        self.path.join("nsys").join(name)
    }
    pub(crate) fn ncu(&self, name: &str) -> PathBuf {
        self.path.join("ncu").join(name)
    }
    /// The file base of rank `rank`'s outputs: `summary` / `summary.rank1`.
    pub(crate) fn ranked(base: &str, rank: Option<u32>) -> String {
        match rank {
            Some(r) => format!("{base}.rank{r}"),
            None => base.to_string(),
        }
    }
    /// `nsys/summary[.rank<N>]_<report>.csv`, one `nsys stats` report.
    pub(crate) fn nsys_stats(&self, report: &str, rank: Option<u32>) -> PathBuf {
        self.nsys(&format!("{}_{report}.csv", Self::ranked("summary", rank)))
    }
    /// The `-o` base of `nsys stats`.
    pub(crate) fn nsys_stats_base(&self, rank: Option<u32>) -> PathBuf {
        self.nsys(&Self::ranked("summary", rank))
    }
    pub(crate) fn kern_sum(&self, rank: Option<u32>) -> PathBuf {
        self.nsys_stats("cuda_gpu_kern_sum", rank)
    }
    pub(crate) fn nvtx_sum(&self) -> PathBuf {
        self.nsys_stats("nvtx_sum", None)
    }
    /// `nsys/run[.rank<N>].sqlite`.
    pub(crate) fn nsys_sqlite(&self, rank: Option<u32>) -> PathBuf {
        self.nsys(&format!("{}.sqlite", Self::ranked("run", rank)))
    }
    /// The `-o` base of `nsys profile`: `nsys/run`, or `nsys/run.rank<MACRO>` under a launcher.
    pub(crate) fn nsys_report_base(&self, rank_macro: Option<&str>) -> PathBuf {
        match rank_macro {
            Some(m) => self.nsys(&format!("run.rank{m}")),
            None => self.nsys("run"),
        }
    }
    pub(crate) fn nsys_report(&self, rank: Option<u32>) -> PathBuf {
        self.nsys(&format!("{}.nsys-rep", Self::ranked("run", rank)))
    }
    /// The ranks with an nsys stats kernel summary (`summary.rank<N>_cuda_gpu_kern_sum.csv`), in
    /// order; empty for a single-process run.
    pub(crate) fn ranks(&self) -> Vec<u32> {
        let mut ranks: Vec<u32> = std::fs::read_dir(self.path.join("nsys"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_prefix("summary.rank")?
                    .strip_suffix("_cuda_gpu_kern_sum.csv")?
                    .parse()
                    .ok()
            })
            .collect();
        ranks.sort_unstable();
        ranks
    }
    /// `ncu/<base>.ncu-rep`.
    pub(crate) fn ncu_report(&self, base: &str) -> PathBuf {
        self.ncu(&format!("{base}.ncu-rep"))
    }
    /// `ncu/<base>_raw.csv`: `ncu --import --csv --page raw`.
    pub(crate) fn ncu_raw(&self, base: &str) -> PathBuf {
        self.ncu(&format!("{base}_raw.csv"))
    }
    /// `ncu/<base>_raw_mangled.csv`: the same import with mangled kernel names.
    pub(crate) fn ncu_raw_mangled(&self, base: &str) -> PathBuf {
        self.ncu(&format!("{base}_raw_mangled.csv"))
    }
    /// The raw import a run holds when its base is not recorded: the first `*_raw.csv`.
    pub(crate) fn find_ncu_raw(&self) -> Option<PathBuf> {
        self.files_ending("ncu", "_raw.csv").into_iter().next()
    }
    /// The entries of the run's `folder` whose names end in `suffix`, by name. Not filtered to
    /// regular files: a device or FIFO in a file's place is found, and its reader says what it is.
    pub(crate) fn files_ending(&self, folder: &str, suffix: &str) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(self.path.join(folder))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with(suffix))
            .collect();
        found.sort();
        found
    }
    /// The SQLite export of a single process, or rank 0's in a multi-rank run, whichever
    /// exists (the single-process name when neither does).
    pub(crate) fn single_or_rank0_sqlite(&self) -> PathBuf {
        [self.nsys_sqlite(None), self.nsys_sqlite(Some(0))]
            .into_iter()
            .find(|p| p.is_file())
            .unwrap_or_else(|| self.nsys_sqlite(None))
    }
    /// A path inside the run as the reports cite it: relative to the run directory.
    pub(crate) fn relative(&self, p: &Path) -> String {
        p.strip_prefix(&self.path)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| p.display().to_string())
    }
    /// stage2's Python hook (`sitecustomize.py`), first on the workload's PYTHONPATH.
    pub(crate) fn hook_dir(&self) -> PathBuf {
        self.path.join("hook")
    }
    /// Hydra workloads' own outputs go here.
    pub(crate) fn stage1(&self) -> PathBuf {
        self.path.join("stage1")
    }
}

/// A run root (absolute) whose runs the profilers and the reports can use: no `%` (nsys and
/// ncu expand `%h`, `%p`, `%q{VAR}` in an output name, so a report would land elsewhere), no
/// control character (the run directory is printed as one line on stdout), and short enough
/// for SQLite to open the longest export the layout names.
pub(crate) fn check_root(root: &Path, id: Option<&str>) -> Result<(), Error> {
    let text = root.to_string_lossy();
    let said = || crate::files::shown(&text);
    if text.contains('%') {
        return Err(Error::usage(format!(
            "run.root {}: nsys and ncu would expand its `%` in their output names (%h, %p, %q{{VAR}}), putting reports outside the run directory; use a folder without `%`",
            said()
        )));
    }
    if text.chars().any(char::is_control) {
        return Err(Error::usage(format!(
            "run.root {}: a control character (a newline, a tab) in the path; the run directory is printed as one line: use a folder without one",
            said()
        )));
    }
    // The longest export name the layout gives: a repeat's, of a rank, both numbers at most.
    let id = id.map_or_else(|| generate_id(0), str::to_string);
    let run = RunDir {
        path: root.join(id),
    };
    let longest = run.repeat(u32::MAX, false)?.nsys_sqlite(Some(u32::MAX));
    let (len, max) = (longest.as_os_str().len(), crate::parse::sqlite::PATH_MAX);
    if len > max {
        return Err(Error::usage(format!(
            "run.root {} ({} bytes): a run's SQLite exports under it would have paths of up to {len} bytes (`{}`), past the {max} SQLite opens; use a shorter --run-root or --run-id",
            said(),
            text.len(),
            run.relative(&longest)
        )));
    }
    Ok(())
}

/// "File exists" from making a run root that is (or sits under) a link to nothing or a loop
/// of links, said as what it is.
fn dangling(root: &Path, e: io::Error) -> io::Error {
    if e.kind() != io::ErrorKind::AlreadyExists {
        return e;
    }
    let link = root.ancestors().find(|a| {
        std::fs::symlink_metadata(a).is_ok_and(|m| m.is_symlink()) && std::fs::metadata(a).is_err()
    });
    match link {
        Some(l) => io::Error::new(
            e.kind(),
            format!(
                "{} is a link to nothing (or a loop of links): point it at a folder or use another --run-root",
                l.display()
            ),
        ),
        None => e,
    }
}

/// `create_dir` with mode 0700: a run directory holds workload output and paths.
fn create_private(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(path)
}

/// A run id is one path component of printable characters.
pub(crate) fn validate_id(id: &str) -> Result<(), Error> {
    // A name a shell and a terminal show as typed: letters, digits, `._-+@=,`; not starting
    // with `-` (read as an option) or `.`; `~` and bidi controls are refused with the rest.
    let bad = id.is_empty()
        || id.len() > 200
        || id.starts_with(['-', '.'])
        || !id
            .chars()
            .all(|c| c.is_alphanumeric() && !c.is_control() || "._-+@=,".contains(c));
    if bad {
        return Err(Error::usage(format!(
            "--run-id {id:?}: a run id is one directory name of letters, digits and `._-+@=,`, not starting with `-` or `.`, at most 200 bytes"
        )));
    }
    Ok(())
}

/// `YYYYmmdd-HHMMSS-xxxx`: sortable by time, unique by the random suffix.
fn generate_id(attempt: u32) -> String {
    let now = chrono::Utc::now();
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u32(attempt);
    h.write_i64(now.timestamp_nanos_opt().unwrap_or_default());
    format!(
        "{}-{:04x}",
        now.format("%Y%m%d-%H%M%S"),
        h.finish() & 0xffff
    )
}

/// The report nsys left at `base`: `.nsys-rep`, or `.qdrep` from older versions (non-empty).
pub(crate) fn find_nsys_report(base: &Path) -> Option<PathBuf> {
    ["nsys-rep", "qdrep"]
        .iter()
        .map(|ext| base.with_extension(ext))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_id_is_never_reused() {
        let tmp = tempfile::tempdir().unwrap();
        let d = RunDir::create(tmp.path(), Some("a")).unwrap();
        assert!(d.path.join("nsys").is_dir() && d.path.join("ncu").is_dir());
        let err = RunDir::create(tmp.path(), Some("a")).unwrap_err();
        assert_eq!(err.exit_code(), crate::exit_codes::USAGE);
        assert!(err.to_string().contains("already exists"));
    }

    #[test]
    fn generated_ids_differ() {
        let tmp = tempfile::tempdir().unwrap();
        let a = RunDir::create(tmp.path(), None).unwrap();
        let b = RunDir::create(tmp.path(), None).unwrap();
        assert_ne!(a.path, b.path);
        assert!(a.id().len() >= 20, "{}", a.id());
    }

    #[test]
    fn ids_with_paths_or_control_characters_are_rejected() {
        for id in [
            "",
            "..",
            "a/b",
            "../x",
            "a\nb",
            "a\u{7}",
            "~",
            "-x",
            ".hidden",
            "a\u{202e}b",
            "a b",
        ] {
            assert!(validate_id(id).is_err(), "{id:?}");
        }
        validate_id("run-1_ok.x").unwrap();
    }
}
