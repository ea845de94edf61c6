#!/usr/bin/env bash
# Builds fuzz/corpus/<target>/ seed corpora from fixtures/ and policies/.
set -euo pipefail
cd "$(dirname "$0")"
root=..
mkdir -p corpus/manifest corpus/policy corpus/reference corpus/platform corpus/binary
for layout in "$root"/fixtures/layouts/*/; do
  cp "$layout"index.json "corpus/manifest/$(basename "$layout")-index.json"
  for blob in "$layout"blobs/sha256/*; do
    [ -f "$blob" ] && [ "$(stat -c %s "$blob")" -lt 65536 ] && cp "$blob" corpus/manifest/ || true
  done
done
cp "$root"/policies/*.yaml corpus/policy/
i=0
for r in quay.io/org/img:tag docker://quay.io/org/img:tag busybox 127.0.0.1:5000/csi/driver:v1 \
  "host:5000/org/img@sha256:56589d3b6f54d5fa05bb6d5cfa1f1bbdb2e0e5a8c3b5f1ebb3c6f1f3d0d2a111" \
  oci:fixtures/layouts/good oci:dir:tag "oci:dir@sha256:56589d3b6f54d5fa05bb6d5cfa1f1bbdb2e0e5a8c3b5f1ebb3c6f1f3d0d2a111"; do
  printf '%s' "$r" > "corpus/reference/seed-$i"; i=$((i+1))
done
i=0
for p in windows/amd64:10.0.17763 windows/amd64:10.0.20348.2461 linux/arm64/v8 linux/arm/v7 windows/amd64 \
  10.0.26100.1 10.0.17763; do
  printf '%s' "$p" > "corpus/platform/seed-$i"; i=$((i+1))
done
# binary: a chunk-size byte, then a file: the headers of this machine's ELF programs, a small
# Windows program importing NETAPI32.dll (when gcc-mingw-w64-x86-64 is installed), #! lines.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if command -v x86_64-w64-mingw32-gcc >/dev/null; then
  printf '#include <windows.h>\n#include <lm.h>\nint main(void){return NetApiBufferFree(0);}\n' > "$tmp/n.c"
  x86_64-w64-mingw32-gcc -s -o "$tmp/n.exe" "$tmp/n.c" -lnetapi32
fi
i=0
for f in /bin/sh /bin/ls "$tmp"/n.exe; do
  [ -f "$f" ] && { printf '\x40'; head -c 65536 "$f"; } > "corpus/binary/seed-$i" && i=$((i+1)) || true
done
for s in '#!/bin/sh' '#! /usr/bin/env python3 -u' '#!/bin/bash\r'; do
  printf '\x07%s\n' "$s" > "corpus/binary/seed-$i"; i=$((i+1))
done
echo "seed corpora: $(ls corpus/manifest | wc -l) manifest, $(ls corpus/policy | wc -l) policy, $(ls corpus/reference | wc -l) reference, $(ls corpus/platform | wc -l) platform, $(ls corpus/binary | wc -l) binary"
