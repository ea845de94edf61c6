#!/usr/bin/env python3
"""Helpers of scripts/bench-windows-stage.

make-base DIR SIZE_MIB: an OCI layout DIR (tag 1) holding a Windows image (os.version
  10.0.20348.2461) with one layer in the Windows layer format: Files/, Hives/ and
  Files/Windows/big.bin of SIZE_MIB random bytes (gzip level 1).
compose REGISTRY BASE_REPO:TAG TARGET_REPO:TAG FILE: the compose peer: reads the base's
  manifest and config over HTTP, appends one Windows-format layer holding FILE as
  Files/<name>, uploads the layer, the config and the manifest. Never reads the base's layers.
"""
import gzip, hashlib, io, json, os, sys, tarfile, urllib.request

PAX = {"MSWINDOWS.fileattr": "32", "LIBARCHIVE.creationtime": "1700000000"}
DIR_PAX = {"MSWINDOWS.fileattr": "16", "LIBARCHIVE.creationtime": "1700000000"}


def layer(entries):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in entries:
            ti = tarfile.TarInfo(name)
            ti.mtime = 1700000000
            if data is None:
                ti.type, ti.mode, ti.pax_headers = tarfile.DIRTYPE, 0o755, dict(DIR_PAX)
                t.addfile(ti)
            else:
                ti.size, ti.mode, ti.pax_headers = len(data), 0o755, dict(PAX)
                t.addfile(ti, io.BytesIO(data))
    tar = raw.getvalue()
    gz = gzip.compress(tar, compresslevel=1, mtime=0)
    return gz, "sha256:" + hashlib.sha256(tar).hexdigest()


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def make_base(out, size_mib):
    gz, diff_id = layer([("Hives/", None), ("Files/", None), ("Files/Windows/", None),
                         ("Files/Windows/big.bin", os.urandom(size_mib << 20))])
    config = json.dumps({"architecture": "amd64", "os": "windows", "os.version": "10.0.20348.2461",
                         "rootfs": {"type": "layers", "diff_ids": [diff_id]},
                         "config": {}, "history": [{"created_by": "bench base"}]}).encode()
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                      "digest": sha(config), "size": len(config)},
                           "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                                       "digest": sha(gz), "size": len(gz)}]}).encode()
    os.makedirs(f"{out}/blobs/sha256", exist_ok=True)
    for b in (gz, config, manifest):
        with open(f"{out}/blobs/sha256/{sha(b)[7:]}", "wb") as f:
            f.write(b)
    with open(f"{out}/oci-layout", "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    with open(f"{out}/index.json", "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": sha(manifest),
            "size": len(manifest), "annotations": {"org.opencontainers.image.ref.name": "1"}}]}, f)


def req(method, url, data=None, headers=None):
    r = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    return urllib.request.urlopen(r)


def upload(reg, repo, blob):
    loc = req("POST", f"http://{reg}/v2/{repo}/blobs/uploads/").headers["Location"]
    loc = loc if loc.startswith("http") else f"http://{reg}{loc}"
    sep = "&" if "?" in loc else "?"
    req("PUT", f"{loc}{sep}digest={sha(blob)}", blob, {"Content-Type": "application/octet-stream"})


def compose(reg, base, target, path):
    brepo, btag = base.split(":")
    trepo, ttag = target.split(":")
    mt = "application/vnd.oci.image.manifest.v1+json"
    manifest = json.load(req("GET", f"http://{reg}/v2/{brepo}/manifests/{btag}", headers={"Accept": mt}))
    config = json.load(req("GET", f"http://{reg}/v2/{brepo}/blobs/{manifest['config']['digest']}"))
    with open(path, "rb") as f:
        gz, diff_id = layer([("Hives/", None), ("Files/", None), ("Files/" + os.path.basename(path), f.read())])
    for d in manifest["layers"]:  # cross-repository mount: the base's layers never travel
        req("POST", f"http://{reg}/v2/{trepo}/blobs/uploads/?mount={d['digest']}&from={brepo}")
    upload(reg, trepo, gz)
    config["rootfs"]["diff_ids"].append(diff_id)
    config["config"]["Entrypoint"] = ["/" + os.path.basename(path)]
    cbytes = json.dumps(config).encode()
    upload(reg, trepo, cbytes)
    manifest["config"] = {"mediaType": "application/vnd.oci.image.config.v1+json",
                          "digest": sha(cbytes), "size": len(cbytes)}
    manifest["layers"].append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                               "digest": sha(gz), "size": len(gz)})
    req("PUT", f"http://{reg}/v2/{trepo}/manifests/{ttag}", json.dumps(manifest).encode(), {"Content-Type": mt})


if __name__ == "__main__":
    if sys.argv[1] == "make-base":
        make_base(sys.argv[2], int(sys.argv[3]))
    else:
        compose(*sys.argv[2:6])
