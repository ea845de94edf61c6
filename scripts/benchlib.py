"""What the bench seeders share (scripts/bench-seed.py, scripts/bench-catalog-seed.py): the
media types, the six platforms of a bench image, a registry client over the distribution API,
the stand-in layers, and the child image (config + manifest) pushed for one platform.
Standard library only; both seeders import it from their own folder.
"""

import gzip
import hashlib
import http.client
import io
import json
import ssl
import tarfile

LINUX = [("amd64", None), ("arm64", "v8"), ("ppc64le", None), ("s390x", None)]
WINDOWS = ["10.0.17763.5830", "10.0.20348.2461"]
# Every child of a bench image: (os, architecture, variant, os.version).
CHILDREN = [("linux", a, v, None) for a, v in LINUX] + \
           [("windows", "amd64", None, v) for v in WINDOWS]
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


def digest(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def dumps(obj):
    """`obj` as compact JSON bytes (what the seeders push, so digests are stable)."""
    return json.dumps(obj, separators=(",", ":")).encode()


class Registry:
    """One connection to a registry at `host` (HTTPS with the CA file `ca`, else plain HTTP);
    a request that breaks off is sent again on a new connection, three times at the most."""

    def __init__(self, host, ca=None, timeout=30):
        self.host = host
        self.ca = ca
        self.timeout = timeout
        self.conn = self.connect()

    def connect(self):
        if self.ca is None:
            return http.client.HTTPConnection(self.host, timeout=self.timeout)
        context = ssl.create_default_context(cafile=self.ca)
        return http.client.HTTPSConnection(self.host, timeout=self.timeout, context=context)

    def request(self, method, path, body=None, headers=None):
        for attempt in range(3):
            try:
                self.conn.request(method, path, body=body, headers=headers or {})
                resp = self.conn.getresponse()
                return resp.status, dict(resp.getheaders()), resp.read()
            except (ConnectionError, http.client.HTTPException):
                self.conn.close()
                self.conn = self.connect()
                if attempt == 2:
                    raise

    def upload(self, repo, blob):
        d = digest(blob)
        status, headers, _ = self.request("POST", f"/v2/{repo}/blobs/uploads/")
        assert status == 202, (status, repo)
        loc = headers["Location"]
        loc = loc.split(self.host, 1)[-1] if "://" in loc else loc
        sep = "&" if "?" in loc else "?"
        status, _, body = self.request("PUT", f"{loc}{sep}digest={d}", body=blob,
                                       headers={"Content-Type": "application/octet-stream"})
        assert status == 201, (status, body[:200])
        return d

    def mount(self, repo, d, source):
        status, _, body = self.request("POST", f"/v2/{repo}/blobs/uploads/?mount={d}&from={source}")
        assert status == 201, (status, body[:200])

    def put_manifest(self, repo, ref, body, media_type):
        status, _, resp = self.request("PUT", f"/v2/{repo}/manifests/{ref}", body=body,
                                       headers={"Content-Type": media_type})
        assert status == 201, (status, resp[:300])


def layer(name):
    """A small gzip'd tar standing in for a layer (verify never fetches layers without
    --deep): the blob, and the hex sha256 of the uncompressed tar (its diff ID)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        data = name.encode() * 64
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mtime = 0
        tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0), hashlib.sha256(raw.getvalue()).hexdigest()


def layers():
    """The stand-in layer of each platform: by architecture (Linux) or os.version (Windows)."""
    found = {arch: layer(f"bin/app-{arch}") for arch, _ in LINUX}
    found.update({v: layer(f"Files/csi-{v}.exe") for v in WINDOWS})
    return found


def push_child(reg, repo, child, layer_of, labels):
    """Pushes the image of one platform `child` (an entry of CHILDREN) to `repo`: its config
    (with `labels`) and its manifest over the platform's layer (from `layer_of`, as made by
    layers()). Returns the index entry, the manifest's digest and the config's digest."""
    os_, arch, variant, osv = child
    blob, diff_id = layer_of[arch if os_ == "linux" else osv]
    config = {"architecture": arch, "os": os_,
              "config": {"Entrypoint": ["/app"], "Labels": labels},
              "rootfs": {"type": "layers", "diff_ids": ["sha256:" + diff_id]}}
    platform = {"architecture": arch, "os": os_}
    if variant:
        config["variant"] = variant
        platform["variant"] = variant
    if osv:
        config["os.version"] = osv
        platform["os.version"] = osv
    config_bytes = dumps(config)
    config_digest = reg.upload(repo, config_bytes)
    manifest = dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                      "config": {"mediaType": OCI_CONFIG, "digest": config_digest,
                                 "size": len(config_bytes)},
                      "layers": [{"mediaType": OCI_LAYER, "digest": digest(blob),
                                  "size": len(blob)}]})
    md = digest(manifest)
    reg.put_manifest(repo, md, manifest, OCI_MANIFEST)
    entry = {"mediaType": OCI_MANIFEST, "digest": md, "size": len(manifest),
             "platform": platform}
    return entry, md, config_digest
