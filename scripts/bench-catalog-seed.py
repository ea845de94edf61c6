#!/usr/bin/env python3
"""Seeds a registry with a catalog for scripts/bench-catalog (issue 24).

REPOS repositories (cat/rI), each holding a pool of 6 child manifests (4 Linux: amd64,
arm64/v8, ppc64le, s390x; 2 Windows: 10.0.17763, 10.0.20348), each with its own config, and
PUSHED tags t0..t(PUSHED-1), each tag an OCI index of its own (an annotation names the tag)
over the repository's shared pool — as a catalog's tags share their children. Layer blobs
are uploaded once and cross-repository mounted. Everything goes over the registry's HTTP API
(THREADS connections, repositories split between them).

With STORAGE (the registry's filesystem `rootdirectory`) only the first repository is pushed
over HTTP (its children and its first tag); its other tags are written straight into the
registry's storage as the registry writes a pushed tag (docker/distribution's layout: the
index blob's `data`, the repository's revision link, the tag's `current` and `index` links),
and every other repository is a copy of its links (the blobs are shared, as after a
cross-repository mount). The last repository's last tag and a child are then read back over
HTTP to prove the layout. Pushing 100,000 indexes over HTTP takes many minutes on two cores;
this takes well under one. The configs carry no per-repository label, so every repository
holds the same digests (imgcheck still fetches them once per repository: existence in one
repository proves nothing about another).

Writes the reference list: LISTED tags per repository (t0..t(LISTED-1)), repository after
repository, so the first N lines are N/LISTED whole repositories; tags past PUSHED do not
exist (404: a `not-found` report each). Standard library only.

  bench-catalog-seed.py HOST REPOS PUSHED LISTED REFS_FILE [THREADS [STORAGE]]
"""

import json
import sys
import threading

from benchlib import CHILDREN, OCI_INDEX, OCI_MANIFEST, Registry, digest, dumps, layers, push_child


def write(path, data):
    import os
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_tag(storage, repo, tag, body):
    """`body` as the manifest of `repo:tag`, written where the registry keeps a pushed one."""
    d = digest(body)
    hexd = d.split(":", 1)[1]
    v2 = f"{storage}/docker/registry/v2"
    write(f"{v2}/blobs/sha256/{hexd[:2]}/{hexd}/data", body)
    manifests = f"{v2}/repositories/{repo}/_manifests"
    write(f"{manifests}/revisions/sha256/{hexd}/link", d.encode())
    write(f"{manifests}/tags/{tag}/index/sha256/{hexd}/link", d.encode())
    write(f"{manifests}/tags/{tag}/current/link", d.encode())
    return d


def seed_repo(reg, repo, source, layer_of, pushed, storage=None):
    """The pool of children of `repo`, then its `pushed` tags."""
    if repo != source:
        for blob, _ in layer_of.values():
            reg.mount(repo, digest(blob), source)
    entries = [push_child(reg, repo, child, layer_of, {"catalog": "bench"})[0]
               for child in CHILDREN]
    for t in range(pushed):
        index = dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries,
                       "annotations": {"org.opencontainers.image.ref.name": f"t{t}"}})
        if storage is None or t == 0:
            reg.put_manifest(repo, f"t{t}", index, OCI_INDEX)
        else:
            write_tag(storage, repo, f"t{t}", index)


def main():
    host, repos, pushed, listed, refs_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        int(sys.argv[4]), sys.argv[5]
    threads = int(sys.argv[6]) if len(sys.argv) > 6 else 4
    storage = sys.argv[7] if len(sys.argv) > 7 else None
    layer_of = layers()
    source = "cat/r0"
    first = Registry(host, timeout=60)
    for blob, _ in layer_of.values():
        first.upload(source, blob)
    seed_repo(first, source, source, layer_of, pushed, storage)
    if storage is not None:
        copy_repos(first, storage, source, repos, pushed)
    else:
        push_repos(host, source, layer_of, repos, pushed, threads)
    with open(refs_path, "w") as refs:
        for r in range(repos):
            for t in range(listed):
                refs.write(f"{host}/cat/r{r}:t{t}\n")


def copy_repos(reg, storage, source, repos, pushed):
    """Repositories 1.. as copies of `source`'s links, one of them read back over HTTP."""
    import shutil
    root = f"{storage}/docker/registry/v2/repositories"
    for r in range(1, repos):
        shutil.copytree(f"{root}/{source}", f"{root}/cat/r{r}")
    last = f"cat/r{repos - 1}"
    status, headers, body = reg.request(
        "GET", f"/v2/{last}/manifests/t{pushed - 1}", headers={"Accept": OCI_INDEX})
    if status != 200 or headers.get("Docker-Content-Digest") != digest(body):
        sys.exit(f"bench-catalog-seed: {last}:t{pushed - 1} written to {storage} is not served: {status}")
    child = json.loads(body)["manifests"][0]["digest"]
    status, _, body = reg.request("GET", f"/v2/{last}/manifests/{child}",
                                  headers={"Accept": OCI_MANIFEST})
    config = json.loads(body)["config"]["digest"]
    status2, _, _ = reg.request("GET", f"/v2/{last}/blobs/{config}")
    if (status, status2) != (200, 200):
        sys.exit(f"bench-catalog-seed: {last}'s children are not served: {status}, {status2}")


def push_repos(host, source, layer_of, repos, pushed, threads):
    """Repositories 1.. pushed over HTTP, `threads` connections at once."""
    failures = []

    def work(k):
        try:
            reg = Registry(host, timeout=60)
            for r in range(1 + k, repos, threads):
                seed_repo(reg, f"cat/r{r}", source, layer_of, pushed)
        except Exception as e:  # reported below: the seeding failed
            failures.append(repr(e))

    workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if failures:
        sys.exit("bench-catalog-seed: " + "; ".join(failures[:3]))


if __name__ == "__main__":
    main()
