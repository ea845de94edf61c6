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

import sys

from benchlib import CHILDREN, OCI_INDEX, OCI_MANIFEST, Registry, digest, dumps, layers, push_child

ACCEPT = ",".join([OCI_INDEX, OCI_MANIFEST,
                   "application/vnd.docker.distribution.manifest.list.v2+json",
                   "application/vnd.docker.distribution.manifest.v2+json"])


def main():
    host, n, refs_path, urls_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    reg = Registry(host, sys.argv[5] if len(sys.argv) > 5 else None)
    source = "bench/img0"
    layer_of = layers()
    uploaded = False
    with open(refs_path, "w") as refs, open(urls_path, "w") as urls:
        for i in range(n):
            repo = f"bench/img{i}"
            for blob, _ in layer_of.values():
                if not uploaded:
                    reg.upload(source, blob)
                elif repo != source:
                    reg.mount(repo, digest(blob), source)
            uploaded = True
            entries = []
            for child in CHILDREN:
                entry, md, config_digest = push_child(reg, repo, child, layer_of,
                                                      {"image": str(i)})
                entries.append(entry)
                urls.write(f"/v2/{repo}/manifests/{md}\t{ACCEPT}\n")
                urls.write(f"/v2/{repo}/blobs/{config_digest}\t*/*\n")
            index = dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries})
            reg.put_manifest(repo, "v1", index, OCI_INDEX)
            urls.write(f"/v2/{repo}/manifests/v1\t{ACCEPT}\n")
            refs.write(f"{host}/{repo}:v1\n")


if __name__ == "__main__":
    main()
