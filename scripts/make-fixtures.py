#!/usr/bin/env python3
"""Generate the committed test fixtures under fixtures/.

Every fixture is an OCI image layout (what `skopeo copy --all ... oci:DIR:latest`
writes) in fixtures/layouts/<name>/.  Blobs that are intentionally absent or
corrupted in a layout have their true bytes in fixtures/seed/sha256/<hex>, so a
test harness can still push the real object to a registry.  Foreign layers of
the `foreign-layer` fixture are never written anywhere.

fixtures/digests.json records, per fixture, the digest of the tagged object and
of every child, for tests that assert which child is selected.

The output is byte-identical on every run (fixed tar mtimes, uid/gid 0, sorted
entries, gzip mtime 0, compact JSON with fixed key order).  Regenerate with:

    python3 scripts/make-fixtures.py

Only the Python standard library is used.  fixtures/README.md is hand-written
and not touched by this script.
"""

import gzip
import hashlib
import io
import json
import os
import shutil
import struct
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, "..", "fixtures"))
LAYOUTS = os.path.join(FIXTURES, "layouts")
SEED = os.path.join(FIXTURES, "seed")

MTIME = 1700000000
CREATED = "2023-11-14T22:13:20Z"  # == MTIME

# Media types
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER_GZ = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER_GZ = "application/vnd.docker.image.rootfs.diff.tar.gzip"
DOCKER_FOREIGN_GZ = "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"
DOCKER_SCHEMA1_SIGNED = "application/vnd.docker.distribution.manifest.v1+prettyjws"
IN_TOTO = "application/vnd.in-toto+json"

REF_NAME = "org.opencontainers.image.ref.name"

WIN_REV = {17763: 5830, 20348: 2461, 26100: 1742}


def winver(build):
    return "10.0.%d.%d" % (build, WIN_REV[build])


# ---------------------------------------------------------------------------
# Primitive helpers


def jbytes(obj):
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def hexof(digest):
    assert digest.startswith("sha256:")
    return digest[len("sha256:"):]


class Blob:
    def __init__(self, data, media_type):
        self.data = data
        self.media_type = media_type
        self.digest = sha256(data)
        self.size = len(data)

    def desc(self, docker=False, **extra):
        if docker:  # Docker tooling writes mediaType, size, digest
            d = {"mediaType": self.media_type, "size": self.size, "digest": self.digest}
        else:  # OCI tooling writes mediaType, digest, size
            d = {"mediaType": self.media_type, "digest": self.digest, "size": self.size}
        d.update(extra)
        return d


def make_tar(entries, fmt):
    """entries: list of (name, data_or_None_for_dir, mode, pax_headers_or_None)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        for name, data, mode, pax in sorted(entries, key=lambda e: e[0]):
            ti = tarfile.TarInfo(name)
            ti.mtime = MTIME
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = ""
            ti.mode = mode
            if pax:
                ti.pax_headers = dict(pax)
            if data is None:
                ti.type = tarfile.DIRTYPE
                tf.addfile(ti)
            else:
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def gz(data):
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=buf, mtime=0) as g:
        g.write(data)
    return buf.getvalue()


class Layer:
    def __init__(self, tar_bytes, foreign_url_base=None):
        self.diff_id = sha256(tar_bytes)
        self.blob = Blob(gz(tar_bytes), None)
        self.foreign = foreign_url_base is not None
        self.urls = [foreign_url_base + self.blob.digest] if self.foreign else None

    def desc(self, flavour):
        if flavour == "oci":
            mt = OCI_LAYER_GZ
        elif self.foreign:
            mt = DOCKER_FOREIGN_GZ
        else:
            mt = DOCKER_LAYER_GZ
        d = {"mediaType": mt}
        if flavour == "oci":
            d.update({"digest": self.blob.digest, "size": self.blob.size})
        else:
            d.update({"size": self.blob.size, "digest": self.blob.digest})
        if self.urls:
            d["urls"] = list(self.urls)
        return d


# ---------------------------------------------------------------------------
# Layers

WIN_DIR_PAX = {"MSWINDOWS.fileattr": "16", "LIBARCHIVE.creationtime": str(MTIME)}
WIN_FILE_PAX = {"MSWINDOWS.fileattr": "32", "LIBARCHIVE.creationtime": str(MTIME)}


def linux_app_layer(arch, variant):
    plat = "linux/%s%s" % (arch, "/" + variant if variant else "")
    content = ("#!/bin/sh\necho imgcheck fixture app for %s\n" % plat).encode()
    return Layer(make_tar([("bin", None, 0o755, None), ("bin/app", content, 0o755, None)],
                          tarfile.USTAR_FORMAT))


def windows_base_layer(build, tag=""):
    ntdll = ("MZ imgcheck fixture ntdll.dll %s%s\n" % (winver(build), tag)).encode()
    hive = ("regf imgcheck fixture SOFTWARE hive %s%s\n" % (winver(build), tag)).encode()
    entries = [
        ("Files", None, 0o755, WIN_DIR_PAX),
        ("Files/Windows", None, 0o755, WIN_DIR_PAX),
        ("Files/Windows/System32", None, 0o755, WIN_DIR_PAX),
        ("Files/Windows/System32/ntdll.dll", ntdll, 0o644, WIN_FILE_PAX),
        ("Hives", None, 0o755, WIN_DIR_PAX),
        ("Hives/Software_Base", hive, 0o644, WIN_FILE_PAX),
    ]
    return make_tar(entries, tarfile.PAX_FORMAT)


def pe32plus_amd64(note):
    """The headers of a PE32+ AMD64 console program (Microsoft's "PE Format": MS-DOS stub with
    e_lfanew at 0x3c, the PE signature, the COFF file header, the optional header with its 16
    data directories), no sections and no imports, followed by `note`: what `verify --deep`
    reads of an entrypoint, without shipping a real program."""
    dos = b"MZ" + bytes(0x3A) + struct.pack("<I", 0x40)
    coff = struct.pack("<HHIIIHH", 0x8664, 0, 0, 0, 0, 240, 0x0022)
    optional = bytearray(240)
    struct.pack_into("<H", optional, 0, 0x20B)  # PE32+
    struct.pack_into("<H", optional, 68, 3)  # Subsystem: Windows console
    struct.pack_into("<I", optional, 108, 16)  # NumberOfRvaAndSizes
    return dos + b"PE\0\0" + coff + bytes(optional) + note


def windows_top_layer(build, tag="", legacy=False):
    exe = pe32plus_amd64(("imgcheck fixture csi.exe for %s%s\n" % (winver(build), tag)).encode())
    if legacy:
        # What Buildah < 1.44 writes for COPY in a Windows stage: a plain Linux
        # layer, file at the root, no Files/ prefix, no PAX records.
        return make_tar([("csi.exe", exe, 0o755, None)], tarfile.USTAR_FORMAT)
    entries = [
        ("Files", None, 0o755, WIN_DIR_PAX),
        ("Files/csi.exe", exe, 0o755, WIN_FILE_PAX),
    ]
    return make_tar(entries, tarfile.PAX_FORMAT)


NANOSERVER_BLOBS = "https://mcr.microsoft.com/v2/windows/nanoserver/blobs/"

# ---------------------------------------------------------------------------
# Images


class Image:
    """An image manifest with its config and layers."""

    def __init__(self, config_obj, layers, flavour):
        self.flavour = flavour
        self.layers = layers
        self.config_obj = config_obj
        self.config = Blob(jbytes(config_obj), OCI_CONFIG if flavour == "oci" else DOCKER_CONFIG)
        docker = flavour == "docker"
        manifest = {
            "schemaVersion": 2,
            "mediaType": DOCKER_MANIFEST if docker else OCI_MANIFEST,
            "config": self.config.desc(docker=docker),
            "layers": [layer.desc(flavour) for layer in layers],
        }
        self.manifest = Blob(jbytes(manifest), manifest["mediaType"])

    @property
    def digest(self):
        return self.manifest.digest

    def platform(self):
        """Descriptor platform as the config describes it (OCI field order)."""
        c = self.config_obj
        p = {"architecture": c["architecture"], "os": c["os"]}
        for k in ("os.version", "os.features", "variant"):
            if k in c:
                p[k] = c[k]
        return p

    def blobs(self):
        """(blob, is_foreign) for every blob this image references."""
        out = [(self.manifest, False), (self.config, False)]
        out += [(layer.blob, layer.foreign) for layer in self.layers]
        return out


def linux_image(arch, variant=None, flavour="oci"):
    layer = linux_app_layer(arch, variant)
    cfg = {"architecture": arch, "os": "linux"}
    if variant:
        cfg["variant"] = variant
    cfg.update({
        "created": CREATED,
        "config": {"Entrypoint": ["/bin/app"]},
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id]},
        "history": [{"created": CREATED, "created_by": "COPY app /bin/app # buildkit"}],
    })
    return Image(cfg, [layer], flavour)


def windows_image(build, flavour="oci", tag="", legacy_top=False, foreign_base=False,
                  features=None, os_version=True):
    """os_version=False: the config has no os.version, like an image built on
    mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image."""
    base_tag = tag + (" (foreign base)" if foreign_base else "")
    base = Layer(windows_base_layer(build, base_tag),
                 NANOSERVER_BLOBS if foreign_base else None)
    top = Layer(windows_top_layer(build, tag, legacy=legacy_top))
    cfg = {"architecture": "amd64", "os": "windows"}
    if os_version:
        cfg["os.version"] = winver(build)
    if features:
        cfg["os.features"] = list(features)
    cfg.update({
        "created": CREATED,
        "config": {"Entrypoint": ["csi.exe"], "User": "ContainerAdministrator"},
        "rootfs": {"type": "layers", "diff_ids": [base.diff_id, top.diff_id]},
        "history": [
            {"created": CREATED, "created_by": "Apply image %s" % winver(build)},
            {"created": CREATED, "created_by": "COPY csi.exe /Files/csi.exe"},
        ],
    })
    return Image(cfg, [base, top], flavour)


# ---------------------------------------------------------------------------
# Layout assembly


class Layout:
    def __init__(self, name):
        self.name = name
        self.blobs = {}        # digest -> bytes (true content)
        self.omit = set()      # digests whose file is not written (seeded)
        self.foreign = set()   # digests of foreign layers (never written, never seeded)
        self.tamper = {}       # digest -> bytes written instead of the true content
        self.top = None        # Blob of the tagged object
        self.children = {}     # key -> digest
        self.entries = []      # detailed per-entry info for digests.json
        self.attestations = {}

    def add(self, blob, foreign=False):
        self.blobs[blob.digest] = blob.data
        if foreign:
            self.foreign.add(blob.digest)

    def add_image(self, img):
        for blob, foreign in img.blobs():
            self.add(blob, foreign)

    def set_top(self, blob):
        self.top = blob
        self.add(blob)


def child_key(desc_platform, img, keys):
    p = desc_platform or img.platform()
    key = "%s/%s" % (p["os"], p["architecture"])
    if p.get("variant"):
        key += "/" + p["variant"]
    if p["os"] == "windows":
        # Key on the descriptor's os.version; fall back to the config's when the
        # descriptor omits it (no-os-version).
        key += ":" + p.get("os.version", img.config_obj.get("os.version", ""))
    base, n = key, 1
    while key in keys:
        n += 1
        key = "%s#%d" % (base, n)
    return key


def build_index(layout, entries, docker=False):
    """entries: list of (image, platform_override_or_None) or ('attest', att_image, ref_img).

    platform_override: a dict to use as the descriptor platform instead of the
    one derived from the config.
    """
    manifests = []
    for entry in entries:
        if entry[0] == "attest":
            _, att, ref = entry
            layout.add_image(att)
            manifests.append(att.manifest.desc(
                annotations={
                    "vnd.docker.reference.digest": ref.digest,
                    "vnd.docker.reference.type": "attestation-manifest",
                },
                platform={"architecture": "unknown", "os": "unknown"},
            ))
            layout.attestations[child_key(None, ref, {})] = att.digest
            layout.entries.append({
                "index": len(manifests) - 1,
                "digest": att.digest,
                "platform": {"architecture": "unknown", "os": "unknown"},
                "attestation_for": ref.digest,
            })
            continue
        if entry[0] == "nested":
            # A child that is itself an index (built into its own Layout, merged here),
            # with the given descriptor platform or none.
            _, inner, plat = entry
            layout.blobs.update(inner.blobs)
            for key, digest in inner.children.items():
                layout.children[key] = digest
            extra = {"platform": plat} if plat is not None else {}
            manifests.append(inner.top.desc(docker=docker, **extra))
            layout.entries.append({
                "index": len(manifests) - 1,
                "digest": inner.top.digest,
                "platform": plat,
                "nested": [e["digest"] for e in inner.entries],
            })
            continue
        img, override = entry[0], entry[1]
        annotations = entry[2] if len(entry) > 2 else None
        layout.add_image(img)
        plat = override if override is not None else img.platform()
        extra = {"annotations": annotations} if annotations else {}
        manifests.append(img.manifest.desc(docker=docker, platform=plat, **extra))
        key = child_key(plat, img, layout.children)
        layout.children[key] = img.digest
        layout.entries.append({
            "index": len(manifests) - 1,
            "key": key,
            "digest": img.digest,
            "platform": plat,
            "config_platform": img.platform(),
        })
    obj = {
        "schemaVersion": 2,
        "mediaType": DOCKER_LIST if docker else OCI_INDEX,
        "manifests": manifests,
    }
    return Blob(jbytes(obj), obj["mediaType"])


def attestation_image(ref_img):
    plat = ref_img.platform()
    purl_plat = "%s/%s%s" % (plat["os"], plat["architecture"],
                             "/" + plat["variant"] if plat.get("variant") else "")
    statement = {
        "_type": "https://in-toto.io/Statement/v0.1",
        "predicateType": "https://slsa.dev/provenance/v0.2",
        "subject": [{
            "name": "pkg:docker/example.com/imgcheck/fixture@latest?platform="
                    + purl_plat.replace("/", "%2F"),
            "digest": {"sha256": hexof(ref_img.digest)},
        }],
        "predicate": {
            "builder": {"id": ""},
            "buildType": "https://mobyproject.org/buildkit@v1",
            "metadata": {"buildStartedOn": CREATED, "buildFinishedOn": CREATED},
        },
    }
    layer_blob = Blob(jbytes(statement), IN_TOTO)
    cfg = {
        "architecture": "unknown",
        "os": "unknown",
        "config": {},
        "rootfs": {"type": "layers", "diff_ids": [layer_blob.digest]},
    }

    class AttImage(Image):
        def __init__(self):
            self.flavour = "oci"
            self.config_obj = cfg
            self.config = Blob(jbytes(cfg), OCI_CONFIG)
            self.layers = []
            manifest = {
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": self.config.desc(),
                "layers": [layer_blob.desc(annotations={
                    "in-toto.io/predicate-type": "https://slsa.dev/provenance/v0.2"})],
            }
            self.manifest = Blob(jbytes(manifest), OCI_MANIFEST)

        def blobs(self):
            return [(self.manifest, False), (self.config, False), (layer_blob, False)]

    return AttImage()


# ---------------------------------------------------------------------------
# Fixtures

def oci_set():
    return {
        "lin_amd64": linux_image("amd64"),
        "lin_arm64": linux_image("arm64", "v8"),
        "w17763": windows_image(17763),
        "w20348": windows_image(20348),
        "w26100": windows_image(26100),
    }


def build_fixtures():
    I = oci_set()
    good_entries = [(I["lin_amd64"], None), (I["lin_arm64"], None),
                    (I["w17763"], None), (I["w20348"], None)]
    out = []

    def new(name):
        lay = Layout(name)
        out.append(lay)
        return lay

    # 1. good
    lay = new("good")
    lay.set_top(build_index(lay, good_entries))

    # 2. no-os-version: Windows descriptors lack os.version (configs have it)
    lay = new("no-os-version")
    lay.set_top(build_index(lay, [
        (I["lin_amd64"], None), (I["lin_arm64"], None),
        (I["w17763"], {"architecture": "amd64", "os": "windows"}),
        (I["w20348"], {"architecture": "amd64", "os": "windows"}),
    ]))

    # 3. ltsc2022-only
    lay = new("ltsc2022-only")
    lay.set_top(build_index(lay, [(I["lin_amd64"], None), (I["w20348"], None)]))

    # 4. platform-mismatch: descriptor says 17763, config says 20348
    mislabelled = windows_image(20348, tag=" (mislabelled as 17763)")
    lay = new("platform-mismatch")
    lay.set_top(build_index(lay, [
        (I["lin_amd64"], None),
        (mislabelled, {"architecture": "amd64", "os": "windows", "os.version": winver(17763)}),
        (I["w20348"], None),
    ]))

    # 5. docker-list
    lay = new("docker-list")
    lay.set_top(build_index(lay, [
        (linux_image("amd64", flavour="docker"), None),
        (windows_image(17763, flavour="docker"), None),
        (windows_image(20348, flavour="docker"), None),
    ], docker=True))

    # 6. attestation: good + buildx attestation entries
    lay = new("attestation")
    lay.set_top(build_index(lay, good_entries + [
        ("attest", attestation_image(I["lin_amd64"]), I["lin_amd64"]),
        ("attest", attestation_image(I["w17763"]), I["w17763"]),
    ]))

    # 7. foreign-layer: Windows base layers are foreign and not in the layout
    lay = new("foreign-layer")
    lay.set_top(build_index(lay, [
        (linux_image("amd64", flavour="docker"), None),
        (windows_image(17763, flavour="docker", foreign_base=True), None),
        (windows_image(20348, flavour="docker", foreign_base=True), None),
    ], docker=True))

    # 8. missing-child: the windows 20348 manifest blob is absent
    lay = new("missing-child")
    lay.set_top(build_index(lay, good_entries))
    lay.omit.add(I["w20348"].digest)

    # 9. corrupt-config: one byte of the windows 17763 config altered
    lay = new("corrupt-config")
    lay.set_top(build_index(lay, good_entries))
    true = I["w17763"].config.data
    pos = true.index(b"Apply image") + len(b"Apply ")
    assert true[pos:pos + 1] == b"i"
    lay.tamper[I["w17763"].config.digest] = true[:pos] + b"I" + true[pos + 1:]

    # 10. truncated-manifest: linux/amd64 manifest truncated to half its length
    lay = new("truncated-manifest")
    lay.set_top(build_index(lay, good_entries))
    true = I["lin_amd64"].manifest.data
    lay.tamper[I["lin_amd64"].digest] = true[:len(true) // 2]

    # 11. single-arch: tagged descriptor points straight at an image manifest
    lay = new("single-arch")
    lay.add_image(I["lin_amd64"])
    lay.set_top(I["lin_amd64"].manifest)

    # 12. legacy-buildah: Windows top layers in plain Linux layout
    lay = new("legacy-buildah")
    lay.set_top(build_index(lay, [
        (I["lin_amd64"], None),
        (windows_image(17763, legacy_top=True), None),
        (windows_image(20348, legacy_top=True), None),
    ]))

    # 13. schema1
    lay = new("schema1")
    s1_layer = I["lin_amd64"].layers[0].blob
    lay.add(s1_layer)
    lay.set_top(Blob(jbytes({
        "schemaVersion": 1,
        "name": "library/busybox",
        "tag": "latest",
        "architecture": "amd64",
        "fsLayers": [{"blobSum": s1_layer.digest}],
        "history": [{"v1Compatibility": "{}"}],
        "signatures": [],
    }), DOCKER_SCHEMA1_SIGNED))

    # 14. duplicate-platform: two different 17763 children
    lay = new("duplicate-platform")
    lay.set_top(build_index(lay, [
        (I["lin_amd64"], None),
        (I["w17763"], None),
        (windows_image(17763, tag=" (child B)"), None),
        (I["w20348"], None),
    ]))

    # 15. with-ltsc2025
    lay = new("with-ltsc2025")
    lay.set_top(build_index(lay, good_entries + [(I["w26100"], None)]))

    # 16. bad-json
    lay = new("bad-json")
    lay.set_top(Blob(b'{"schemaVersion":2,"manifests":[', OCI_INDEX))

    # 17. wrong-media-type: a config-looking object tagged as such
    lay = new("wrong-media-type")
    lay.set_top(Blob(jbytes({
        "mediaType": OCI_CONFIG,
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": ["/bin/app"]},
        "rootfs": {"type": "layers", "diff_ids": []},
    }), OCI_CONFIG))

    # 19. os-features: windows 17763 with os.features ["win32k"] in descriptor and config
    lay = new("os-features")
    lay.set_top(build_index(lay, [
        (I["lin_amd64"], None),
        (windows_image(17763, features=["win32k"]), None),
        (I["w20348"], None),
    ]))

    # 20. windows-hp: upstream's HostProcess tag (azurefile-csi `...-windows-hp`): one
    # windows/amd64 entry built on the HostProcess base image, no os.version in the
    # descriptor or the config, plus the Linux entries.
    hp = windows_image(17763, tag=" (hostprocess)", os_version=False)
    lay = new("windows-hp")
    lay.set_top(build_index(lay, [(I["lin_amd64"], None), (I["lin_arm64"], None), (hp, None)]))

    # 20a. windows-hp-only: the HostProcess image alone in a list, as a Windows-only
    # DaemonSet's image may be published (a Linux node never pulls it).
    lay = new("windows-hp-only")
    lay.set_top(build_index(lay, [(hp, None)]))

    # 20a'. linux-only-list: a list of Linux entries only (linux/amd64, linux/arm64/v8), as a
    # component built without its Windows half is published.
    lay = new("linux-only-list")
    lay.set_top(build_index(lay, [(I["lin_amd64"], None), (I["lin_arm64"], None)]))

    # 20b. hp-claimed-version: the same HostProcess image with a made-up os.version written
    # on its descriptor (`docker manifest annotate --os-version`), beside a real 20348 entry.
    lay = new("hp-claimed-version")
    lay.set_top(build_index(lay, [
        (I["lin_amd64"], None),
        (hp, {"architecture": "amd64", "os": "windows", "os.version": winver(17763)}),
        (I["w20348"], None),
    ]))

    # 21. nested-index: linux/amd64, then a child without platform that is itself an OCI
    # index holding the Windows 17763 and 20348 images (containerd walks it).
    inner = Layout("nested-index (inner)")
    inner.set_top(build_index(inner, [(I["w17763"], None), (I["w20348"], None)]))
    lay = new("nested-index")
    lay.set_top(build_index(lay, [(I["lin_amd64"], None), ("nested", inner, None)]))

    # 22. zstd-pair: `podman manifest push --add-compression zstd`: linux/amd64 twice, the
    # second child annotated as the zstd instance (synthetic: its layer is a second gzip
    # layer, Python's standard library has no zstd), then the Windows 17763 and 20348 entries.
    twin = linux_image("amd64")
    twin.layers[0] = Layer(make_tar([("bin", None, 0o755, None),
                                     ("bin/app", b"#!/bin/sh\necho zstd twin\n", 0o755, None)],
                                    tarfile.USTAR_FORMAT))
    twin = Image(dict(twin.config_obj, rootfs={"type": "layers",
                                               "diff_ids": [twin.layers[0].diff_id]}),
                 twin.layers, "oci")
    lay = new("zstd-pair")
    lay.set_top(build_index(lay, [
        (I["lin_amd64"], None),
        (twin, None, {"io.github.containers.compression.zstd": "true"}),
        (I["w17763"], None), (I["w20348"], None),
    ]))

    return out


# ---------------------------------------------------------------------------
# Output


def write_file(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_layout(lay, seed):
    root = os.path.join(LAYOUTS, lay.name)
    write_file(os.path.join(root, "oci-layout"), jbytes({"imageLayoutVersion": "1.0.0"}))
    index = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [lay.top.desc(annotations={REF_NAME: "latest"})],
    }
    write_file(os.path.join(root, "index.json"), jbytes(index))
    for digest in sorted(lay.blobs):
        data = lay.blobs[digest]
        if digest in lay.foreign:
            continue
        if digest in lay.omit or digest in lay.tamper:
            seed[digest] = data
        if digest in lay.omit:
            continue
        write_file(os.path.join(root, "blobs", "sha256", hexof(digest)),
                   lay.tamper.get(digest, data))


def verify(layouts):
    """Independent re-read of what was written: check every descriptor."""
    seed_dir = os.path.join(SEED, "sha256")
    seeded = set(os.listdir(seed_dir)) if os.path.isdir(seed_dir) else set()
    all_foreign = set()
    for lay in layouts:
        all_foreign |= {hexof(d) for d in lay.foreign}
    assert not (seeded & all_foreign), "foreign blob in seed"
    for h in seeded:
        with open(os.path.join(seed_dir, h), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == h, "bad seed " + h

    for lay in layouts:
        root = os.path.join(LAYOUTS, lay.name)
        blobdir = os.path.join(root, "blobs", "sha256")
        files = set(os.listdir(blobdir))
        referenced = set()
        problems = set()

        def read(desc):
            h = hexof(desc["digest"])
            referenced.add(h)
            path = os.path.join(blobdir, h)
            data = None
            if os.path.exists(path):
                with open(path, "rb") as f:
                    data = f.read()
                if hashlib.sha256(data).hexdigest() != h or \
                        ("size" in desc and len(data) != desc["size"]):
                    problems.add(desc["digest"])
                    data = None
            else:
                problems.add(desc["digest"])
            if data is None and h in seeded:
                with open(os.path.join(seed_dir, h), "rb") as f:
                    data = f.read()
            if data is not None and "size" in desc:
                assert len(data) == desc["size"], (lay.name, desc)
            return data

        def walk(desc):
            mt = desc["mediaType"]
            data = read(desc)
            if data is None:
                return
            if mt in (OCI_INDEX, DOCKER_LIST):
                try:
                    obj = json.loads(data)
                except ValueError:
                    assert lay.name == "bad-json"
                    return
                assert obj["mediaType"] == mt
                for d in obj["manifests"]:
                    walk(d)
            elif mt in (OCI_MANIFEST, DOCKER_MANIFEST):
                obj = json.loads(data)
                assert obj["mediaType"] == mt
                read(obj["config"])
                for d in obj["layers"]:
                    if d.get("urls"):
                        referenced.add(hexof(d["digest"]))
                        assert d["digest"] in lay.foreign
                        problems.add(d["digest"])
                    else:
                        read(d)
            elif mt == DOCKER_SCHEMA1_SIGNED:
                obj = json.loads(data)
                for fs in obj["fsLayers"]:
                    read({"mediaType": "layer", "digest": fs["blobSum"]})

        with open(os.path.join(root, "index.json"), "rb") as f:
            index = json.load(f)
        assert len(index["manifests"]) == 1
        walk(index["manifests"][0])
        expected = set(lay.omit) | set(lay.tamper) | set(lay.foreign)
        assert problems == expected, (lay.name, problems, expected)
        assert files <= referenced, (lay.name, "unreferenced blobs", files - referenced)
        for d in set(lay.omit) | set(lay.tamper):
            assert hexof(d) in seeded, (lay.name, "not seeded", d)


def main():
    layouts = build_fixtures()
    for d in (LAYOUTS, SEED):
        if os.path.isdir(d):
            shutil.rmtree(d)
    seed = {}
    for lay in layouts:
        write_layout(lay, seed)
    for digest in sorted(seed):
        write_file(os.path.join(SEED, "sha256", hexof(digest)), seed[digest])

    summary = {}
    for lay in layouts:
        entry = {"top": lay.top.digest, "children": dict(lay.children)}
        if lay.attestations:
            entry["attestations"] = dict(lay.attestations)
        if lay.foreign:
            entry["foreign_layers"] = sorted(lay.foreign)
        if lay.omit:
            entry["missing"] = sorted(lay.omit)
        if lay.tamper:
            entry["corrupted"] = sorted(lay.tamper)
        if lay.entries:
            entry["entries"] = lay.entries
        summary[lay.name] = entry
    write_file(os.path.join(FIXTURES, "digests.json"),
               (json.dumps(summary, indent=2) + "\n").encode("utf-8"))

    verify(layouts)
    print("wrote %d layouts, %d seed blobs under %s" % (len(layouts), len(seed), FIXTURES))


if __name__ == "__main__":
    main()
