//! Each kernel's mangled name, from the `--print-kernel-base mangled` import of the same report.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use super::*;

/// Give each kernel its mangled name from the `--print-kernel-base mangled` import of the same
/// report: rows there carry the same `ID`s. The file is as large as the raw export, so it gets
/// the same fast reader, with the general one for any other shape.
pub fn attach_mangled(report: &mut NcuReport, mangled_csv: &Path) -> Result<(), Error> {
    let wanted = first_ids(report);
    let file = crate::files::open_regular(mangled_csv)
        .map_err(|e| Error::parse(mangled_csv, None, format!("cannot open: {e}")))?;
    let found = match mangled_quoted(file, &wanted) {
        Ok(Some(found)) => found,
        Ok(None) => mangled_general(mangled_csv, &wanted)?,
        Err(e) => return Err(Error::parse(mangled_csv, None, format!("cannot read: {e}"))),
    };
    for (i, name) in found {
        report.kernels[i].mangled = Some(name);
    }
    Ok(())
}

/// Each kernel's first profiled launch ID -> its index.
pub(super) fn first_ids(report: &NcuReport) -> HashMap<String, usize> {
    report
        .kernels
        .iter()
        .enumerate()
        .filter_map(|(i, k)| Some((k.first_id.clone()?, i)))
        .collect()
}

/// Kernel index -> mangled name, by the fast reader; None where it gives up.
pub(super) fn mangled_quoted(
    file: File,
    wanted: &HashMap<String, usize>,
) -> std::io::Result<Option<Vec<(usize, String)>>> {
    let Some(mut rows) = QuotedRows::open(file)? else {
        return Ok(None);
    };
    let (Some(id_col), Some(name_col)) = (rows.column("ID"), rows.column(COL_NAME)) else {
        return Ok(None);
    };
    let mut cells = Vec::new();
    let mut found = Vec::new();
    loop {
        let line = match rows.next(&mut cells)? {
            Row::Cells(l) => l,
            Row::End => return Ok(Some(found)),
            Row::GiveUp => return Ok(None),
        };
        let id = cells[id_col].text(line);
        let Some(i) = std::str::from_utf8(&id).ok().and_then(|id| wanted.get(id)) else {
            continue;
        };
        let Ok(name) = String::from_utf8(cells[name_col].text(line).into_owned()) else {
            return Ok(None);
        };
        found.push((*i, name));
    }
}

pub(super) fn mangled_general(
    path: &Path,
    wanted: &HashMap<String, usize>,
) -> Result<Vec<(usize, String)>, Error> {
    let mut t = Table::open(path)?;
    let id_col = t.require("ID")?;
    let name_col = t.require(COL_NAME)?;
    let mut found = Vec::new();
    let mut rec = csv::StringRecord::new();
    while t.next(&mut rec)?.is_some() {
        if let Some(i) = wanted.get(rec.get(id_col).unwrap_or("")) {
            found.push((*i, rec.get(name_col).unwrap_or("").to_string()));
        }
    }
    Ok(found)
}
