#!/usr/bin/env python3
"""Seeds a registry with N multi-arch images for scripts/bench.

Each image lives in its own repository (bench/imgI:v1) as an OCI index with 4 Linux children
(amd64, arm64/v8, ppc64le, s390x) and 2 Windows children (10.0.17763, 10.0.20348). Every child
has its own config (so every image is distinct, as in a real release); layer blobs are shared
and cross-repository mounted, which keeps seeding fast without changing what verify fetches.

Writes two files: the reference list (one per line, for `imgcheck verify --from-file` and the
skopeo loop) and the URL set (method, path, Accept header) that a full check fetches, for the
raw-capacity load generator. With a fifth argument (a CA certificate file) it talks HTTPS.
Standard library only.
"""

import hashlib
import http.client
import json
import ssl
import sys

LINUX = [("amd64", None), ("arm64", "v8"), ("ppc64le", None), ("s390x", None)]
WINDOWS = ["10.0.17763.5830", "10.0.20348.2461"]
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
ACCEPT = ",".join([OCI_INDEX, OCI_MANIFEST,
                   "application/vnd.docker.distribution.manifest.list.v2+json",
                   "application/vnd.docker.distribution.manifest.v2+json"])


def digest(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def dumps(obj):
    return json.dumps(obj, separators=(",", ":")).encode()


class Registry:
    def __init__(self, host, ca=None):
        self.host = host
        self.ca = ca
        self.conn = self.connect()

    def connect(self):
        if self.ca is None:
            return http.client.HTTPConnection(self.host, timeout=30)
        context = ssl.create_default_context(cafile=self.ca)
        return http.client.HTTPSConnection(self.host, timeout=30, context=context)

    def request(self, method, path, body=None, headers=None):
        for attempt in range(3):
            try:
                self.conn.request(method, path, body=body, headers=headers or {})
                resp = self.conn.getresponse()
                data = resp.read()
                return resp.status, dict(resp.getheaders()), data
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
    # Small gzip'd payloads stand in for layers; verify never fetches them without --deep.
    import gzip
    import io
    import tarfile
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        data = name.encode() * 64
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mtime = 0
        tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0), hashlib.sha256(raw.getvalue()).hexdigest()


def main():
    host, n, refs_path, urls_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    reg = Registry(host, sys.argv[5] if len(sys.argv) > 5 else None)
    source = "bench/img0"
    layers = {}
    for arch, _ in LINUX:
        layers[arch] = layer(f"bin/app-{arch}")
    for v in WINDOWS:
        layers[v] = layer(f"Files/csi-{v}.exe")
    uploaded = False
    with open(refs_path, "w") as refs, open(urls_path, "w") as urls:
        for i in range(n):
            repo = f"bench/img{i}"
            for blob, _ in layers.values():
                if not uploaded:
                    reg.upload(source, blob)
                elif repo != source:
                    reg.mount(repo, digest(blob), source)
            uploaded = True
            entries = []
            children = [("linux", a, v, None) for a, v in LINUX] + \
                       [("windows", "amd64", None, v) for v in WINDOWS]
            for os_, arch, variant, osv in children:
                blob, diff_id = layers[arch if os_ == "linux" else osv]
                config = {"architecture": arch, "os": os_,
                          "config": {"Entrypoint": ["/app"], "Labels": {"image": str(i)}},
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
                entries.append({"mediaType": OCI_MANIFEST, "digest": md, "size": len(manifest),
                                "platform": platform})
                urls.write(f"/v2/{repo}/manifests/{md}\t{ACCEPT}\n")
                urls.write(f"/v2/{repo}/blobs/{config_digest}\t*/*\n")
            index = dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries})
            reg.put_manifest(repo, "v1", index, OCI_INDEX)
            urls.write(f"/v2/{repo}/manifests/v1\t{ACCEPT}\n")
            refs.write(f"{host}/{repo}:v1\n")


if __name__ == "__main__":
    main()
