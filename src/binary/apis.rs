//! The CSI Proxy API group versions a Go program embeds, read from its bytes as they stream
//! past: the package paths `github.com/kubernetes-csi/csi-proxy/client/api/<group>/<version>`
//! (the protobuf messages) and `client/groups/<group>/<version>` (the client that dials the
//! group's named pipe) that its symbol table (`pclntab` function names, the protobuf
//! descriptors' Go package) names. The Go build information names modules, not packages: only
//! these tell which groups a driver talks to.

use std::collections::BTreeSet;

use memchr::memmem::Finder;

/// The client module drivers import (`client/go.mod`, a module of its own since v1.0.0).
pub const CLIENT_MODULE: &str = "github.com/kubernetes-csi/csi-proxy/client";
/// The csi-proxy module itself: the proxy's main module, and the client of drivers built
/// before the client was a module of its own (v0.x); `/v2` is the library, which dials no
/// pipe.
pub const PROXY_MODULE: &str = "github.com/kubernetes-csi/csi-proxy";

/// The prefix every such package path starts with.
const NEEDLE: &[u8] = b"github.com/kubernetes-csi/csi-proxy/client/";
/// The directories under it whose packages are per group and version.
const KINDS: [&[u8]; 2] = [b"api/", b"groups/"];
/// The longest `<group>/<version>` read (`filesystem/v2alpha1` is 19 bytes).
const MAX_SUFFIX: usize = 48;
/// Bytes kept from the end of one chunk so that a path cut by a chunk boundary is read whole.
const CARRY: usize = 128;
/// The most distinct group versions kept (csi-proxy v1 has about 25): the smallest in byte
/// order, whatever the chunking.
pub const MAX_APIS: usize = 64;

/// A streaming search for the package paths; see the module docs.
#[derive(Debug)]
pub(super) struct ApiScan {
    finder: Finder<'static>,
    /// The last [`CARRY`] bytes fed before the current chunk.
    carry: Vec<u8>,
    found: BTreeSet<String>,
    overflow: bool,
}

/// What the bytes after a match are.
#[derive(Debug, PartialEq, Eq)]
enum Suffix {
    /// `<group>/<version>`.
    Api(String),
    /// Something else: not a group version package.
    Not,
    /// The buffer ends before the path does.
    Cut,
}

impl ApiScan {
    pub(super) fn new() -> ApiScan {
        ApiScan {
            finder: Finder::new(NEEDLE),
            carry: Vec::with_capacity(CARRY * 2),
            found: BTreeSet::new(),
            overflow: false,
        }
    }

    /// The file's next bytes, in order.
    pub(super) fn feed(&mut self, chunk: &[u8]) {
        if !self.carry.is_empty() {
            // Matches that start in the carry: read over the carry and the chunk's head.
            let mut seam = self.carry.clone();
            seam.extend_from_slice(&chunk[..chunk.len().min(CARRY)]);
            self.search(&seam, self.carry.len(), false);
        }
        self.search(chunk, chunk.len(), false);
        let keep = chunk.len().min(CARRY);
        let from = (self.carry.len() + keep).saturating_sub(CARRY);
        self.carry.drain(..from.min(self.carry.len()));
        self.carry.extend_from_slice(&chunk[chunk.len() - keep..]);
        if self.carry.len() > CARRY {
            let extra = self.carry.len() - CARRY;
            self.carry.drain(..extra);
        }
    }

    /// The group versions found, sorted; whether more were seen than kept.
    pub(super) fn finish(mut self) -> (Vec<String>, bool) {
        let carry = std::mem::take(&mut self.carry);
        self.search(&carry, carry.len(), true);
        (self.found.into_iter().collect(), self.overflow)
    }

    /// Records each match in `buf` that starts before `starts_before`; a path cut by the end
    /// of `buf` counts only at the end of the file (`eof`).
    fn search(&mut self, buf: &[u8], starts_before: usize, eof: bool) {
        let mut at = 0;
        while let Some(i) = self.finder.find(&buf[at..]) {
            let start = at + i;
            if start >= starts_before {
                break;
            }
            if let Suffix::Api(api) = suffix(&buf[start + NEEDLE.len()..], eof) {
                self.found.insert(api);
                if self.found.len() > MAX_APIS {
                    self.found.pop_last();
                    self.overflow = true;
                }
            }
            at = start + 1;
        }
    }
}

/// Reads `api/<group>/<version>` or `groups/<group>/<version>` at the start of `rest`.
fn suffix(rest: &[u8], eof: bool) -> Suffix {
    let Some(kind) = KINDS
        .iter()
        .find(|k| rest.starts_with(k) || k.starts_with(rest))
    else {
        return Suffix::Not;
    };
    if rest.len() < kind.len() {
        return if eof { Suffix::Not } else { Suffix::Cut };
    }
    let path = &rest[kind.len()..];
    let run = path
        .iter()
        .take(MAX_SUFFIX + 1)
        .take_while(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || **b == b'/')
        .count();
    if run > MAX_SUFFIX {
        return Suffix::Not;
    }
    if run == path.len() && !eof {
        return Suffix::Cut;
    }
    let text = String::from_utf8_lossy(&path[..run]);
    let mut parts = text.split('/');
    match (parts.next(), parts.next()) {
        (Some(group), Some(version)) if is_group(group) && is_version(version) => {
            Suffix::Api(format!("{group}/{version}"))
        }
        _ => Suffix::Not,
    }
}

/// A group name: lower-case letters and digits, starting with a letter.
fn is_group(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// A Kubernetes-style API version: `v1`, `v1alpha1`, `v2beta3`.
pub fn is_version(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('v') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (major, rest) = rest.split_at(digits);
    if major.is_empty() || major.starts_with('0') {
        return false;
    }
    let Some(n) = rest
        .strip_prefix("alpha")
        .or_else(|| rest.strip_prefix("beta"))
    else {
        return rest.is_empty();
    };
    !n.is_empty() && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(bytes: &[u8], chunk: usize) -> (Vec<String>, bool) {
        let mut s = ApiScan::new();
        for piece in bytes.chunks(chunk.max(1)) {
            s.feed(piece);
        }
        s.finish()
    }

    /// Package paths as Go's linker writes them (function names in pclntab, a protobuf
    /// descriptor's go_package), found whatever the chunk size; other paths are not.
    #[test]
    fn finds_group_versions_whatever_the_chunking() {
        let text = b"\0github.com/kubernetes-csi/csi-proxy/client/api/disk/v1.(*ListDiskLocationsRequest).Reset\0\
            github.com/kubernetes-csi/csi-proxy/client/groups/smb/v1beta1.NewClient\0\
            github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v2alpha1\"\0\
            github.com/kubernetes-csi/csi-proxy/client/api/errors.pb.go\0\
            github.com/kubernetes-csi/csi-proxy/client/apiversion.Version\0\
            github.com/kubernetes-csi/csi-proxy/client/api/disk/v01.x\0\
            github.com/kubernetes-csi/csi-proxy/client@v1.2.1/api/volume/v1/api.pb.go\0\
            github.com/kubernetes-csi/csi-proxy/client/api/system/v1alpha1";
        let want = vec![
            "disk/v1".to_string(),
            "filesystem/v2alpha1".into(),
            "smb/v1beta1".into(),
            "system/v1alpha1".into(),
        ];
        for chunk in [1, 2, 7, 43, 44, 45, 100, 127, 128, 129, text.len()] {
            assert_eq!(scan(text, chunk), (want.clone(), false), "chunk {chunk}");
        }
    }

    /// Shapes of API versions, as Kubernetes names them.
    #[test]
    fn versions() {
        for (s, ok) in [
            ("v1", true),
            ("v1alpha1", true),
            ("v2beta3", true),
            ("v10", true),
            ("v0", false),
            ("v1alpha", false),
            ("v1gamma1", false),
            ("1", false),
            ("v", false),
            ("v1beta01", false),
        ] {
            assert_eq!(is_version(s), ok, "{s}");
        }
    }

    /// At most `MAX_APIS` kept, the same ones whatever the chunking.
    #[test]
    fn bounded() {
        let mut text = Vec::new();
        for i in (0..100).rev() {
            text.extend_from_slice(NEEDLE);
            text.extend_from_slice(format!("api/g{i}/v1.\0").as_bytes());
        }
        let (apis, overflow) = scan(&text, 50);
        assert!(overflow);
        assert_eq!(apis.len(), MAX_APIS);
        assert_eq!(scan(&text, 1000), (apis, true));
    }
}
