//! PAX extended header records as Go's `archive/tar` reads them (`parsePAX`,
//! `parsePAXRecord`, `validPAXRecord`, `mergePAX`, `parsePAXTime`,
//! `readGNUSparsePAXHeaders` in golang/go `src/archive/tar/reader.go` and `strconv.go`).

use std::collections::HashMap;

const SPARSE_MAP: &[u8] = b"GNU.sparse.map";

/// The records of one PAX header, by key (a later record of a key replaces an earlier one).
#[derive(Default)]
pub(super) struct Records(HashMap<Vec<u8>, Vec<u8>>);

/// What is wrong with a PAX header.
pub(super) type PaxError = String;

fn bad(what: &str) -> PaxError {
    format!("bad PAX record: {what}")
}

/// One record's key and value, and the bytes after it.
type Record<'a> = (&'a [u8], &'a [u8], &'a [u8]);

/// `"%d %s=%s\n"`: the length counts the whole record; returns key, value and the rest.
fn record(s: &[u8]) -> Result<Record<'_>, PaxError> {
    let sp = s
        .iter()
        .position(|b| *b == b' ')
        .ok_or_else(|| bad("no length"))?;
    let n: i64 = std::str::from_utf8(&s[..sp])
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| bad("a length that is not a number"))?;
    if n < 5 || n > s.len() as i64 {
        return Err(bad(&format!(
            "a length of {n} in a {}-byte header",
            s.len()
        )));
    }
    let n = n as usize;
    if n <= sp + 1 {
        return Err(bad("a length shorter than itself"));
    }
    let (body, rest) = (&s[sp + 1..n - 1], &s[n..]);
    if s[n - 1] != b'\n' {
        return Err(bad("a record that does not end its length with a newline"));
    }
    let eq = body
        .iter()
        .position(|b| *b == b'=')
        .ok_or_else(|| bad("no ="))?;
    let (key, value) = (&body[..eq], &body[eq + 1..]);
    let nul_in = |b: &[u8]| b.contains(&0);
    let valid = !key.is_empty()
        && match key {
            b"path" | b"linkpath" | b"uname" | b"gname" => !nul_in(value),
            _ => !nul_in(key),
        };
    if !valid {
        return Err(bad("an empty key or a NUL byte"));
    }
    Ok((key, value, rest))
}

/// Parses a PAX header's data (`parsePAX`): GNU sparse 0.0 offset/size pairs become one
/// `GNU.sparse.map` record.
pub(super) fn parse(mut s: &[u8]) -> Result<Records, PaxError> {
    let mut map = HashMap::new();
    let mut sparse: Vec<&[u8]> = Vec::new();
    while !s.is_empty() {
        let (key, value, rest) = record(s)?;
        s = rest;
        match key {
            b"GNU.sparse.offset" | b"GNU.sparse.numbytes" => {
                let want: &[u8] = if sparse.len().is_multiple_of(2) {
                    b"GNU.sparse.offset"
                } else {
                    b"GNU.sparse.numbytes"
                };
                if key != want || value.contains(&b',') {
                    return Err(bad("GNU sparse offsets and sizes out of order"));
                }
                sparse.push(value);
            }
            _ => {
                map.insert(key.to_vec(), value.to_vec());
            }
        }
    }
    if !sparse.is_empty() {
        map.insert(SPARSE_MAP.to_vec(), sparse.join(&b","[..]));
    }
    Ok(Records(map))
}

/// Go's `strconv.ParseInt(s, 10, 64)` (an optional sign, decimal digits).
fn int(v: &[u8]) -> Option<i64> {
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// Go's `parsePAXTime`: seconds, then optionally `.` and decimal digits.
fn time_ok(v: &[u8]) -> bool {
    let (secs, frac) = match v.iter().position(|b| *b == b'.') {
        Some(dot) => (&v[..dot], &v[dot + 1..]),
        None => (v, &[][..]),
    };
    int(secs).is_some() && frac.iter().all(u8::is_ascii_digit)
}

impl Records {
    /// The value of `key` (empty when absent).
    pub(super) fn get(&self, key: &str) -> &[u8] {
        self.0.get(key.as_bytes()).map_or(&[], Vec::as_slice)
    }

    /// Applies the records to an entry's name and size (`mergePAX`: an empty value keeps
    /// the header's own; a standard numeric or time record that does not parse is an error).
    pub(super) fn merge(&self, name: &mut Vec<u8>, size: &mut i64) -> Result<(), PaxError> {
        for (key, value) in self.0.iter().filter(|(_, v)| !v.is_empty()) {
            let shown = || String::from_utf8_lossy(key).into_owned();
            match key.as_slice() {
                b"path" => *name = value.clone(),
                b"size" => {
                    *size = int(value).ok_or_else(|| bad(&format!("{} is no number", shown())))?
                }
                b"uid" | b"gid" if int(value).is_none() => {
                    return Err(bad(&format!("{} is no number", shown())));
                }
                b"atime" | b"mtime" | b"ctime" if !time_ok(value) => {
                    return Err(bad(&format!("{} is no time", shown())));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The `linkpath` record, when one is set (it wins over the header's link name).
    pub(super) fn link_path(&self) -> Option<&[u8]> {
        Some(self.get("linkpath")).filter(|v| !v.is_empty())
    }

    /// When the records make the entry a GNU sparse file (`readGNUSparsePAXHeaders`: versions
    /// 0.0, 0.1 and 1.0, or a sparse map without a version), its `GNU.sparse.name` (may be
    /// empty: the name stays).
    pub(super) fn sparse_name(&self) -> Option<&[u8]> {
        let sparse = match (self.get("GNU.sparse.major"), self.get("GNU.sparse.minor")) {
            (b"0", b"0" | b"1") | (b"1", b"0") => true,
            (b"", b"") => !self.get("GNU.sparse.map").is_empty(),
            _ => false,
        };
        sparse.then(|| self.get("GNU.sparse.name"))
    }
}
