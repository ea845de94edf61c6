#!/usr/bin/env python3
"""Writes a node list of N nodes for measuring how imgcheck reads large node lists (issue 33,
item 17): the nodes of fixtures/nodes/ocp-wmco.json (an OpenShift cluster with WMCO Windows
nodes, as `oc get nodes -o json` prints them, indented), repeated with unique names, hostnames,
addresses and uids until there are N.

  nodes-seed.py N OUT.json

scripts/bench-nodes runs it and measures the peak memory of `verify --nodes OUT.json` (figures in
docs/benchmarks.md). Standard library only.
"""

import json
import pathlib
import sys


def main() -> None:
    count, out = int(sys.argv[1]), pathlib.Path(sys.argv[2])
    fixture = pathlib.Path(__file__).resolve().parent.parent / "fixtures/nodes/ocp-wmco.json"
    template = json.loads(fixture.read_text())
    pool = template["items"]
    with out.open("w") as f:
        f.write('{\n    "apiVersion": "v1",\n    "kind": "List",\n    "items": [\n')
        for i in range(count):
            node = json.loads(json.dumps(pool[i % len(pool)]))
            name = f"node-{i:06d}.example.internal"
            node["metadata"]["name"] = name
            node["metadata"]["uid"] = f"00000000-0000-4000-8000-{i:012d}"
            node["metadata"].setdefault("labels", {})["kubernetes.io/hostname"] = name
            text = json.dumps(node, indent=4)
            f.write("        " + text.replace("\n", "\n        "))
            f.write(",\n" if i + 1 < count else "\n")
        f.write('    ],\n    "metadata": {"resourceVersion": ""}\n}\n')


if __name__ == "__main__":
    main()
