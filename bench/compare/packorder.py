#!/usr/bin/env python3
"""How the chunks of each file in one folder of the latest snapshot lie in
the packs: the pack switches along the file's content list (at least the
number of packs minus one), the returns to a pack the file had left, and,
within a pack, steps back and gaps (other blobs between two neighbouring
chunks). A restore that reads a file in order reads each pack once when
there are no returns.

    NIGHTJAR_REPOSITORY=... NIGHTJAR_PASSWORD_FILE=... \\
      python3 bench/compare/packorder.py NIGHTJAR_BIN /abs/folder/as/backed/up

It reads the local repository's index files through `nightjar cat`.
"""
import json
import os
import subprocess
import sys


def run(nj, *args):
    return subprocess.run([nj, "cat", *args], check=True, capture_output=True).stdout


def nodes(nj, tree):
    t = json.loads(run(nj, "tree", tree))
    if "parts" in t:  # a big tree: its JSON cut into blobs
        t = json.loads(b"".join(run(nj, "blob", p) for p in t["parts"]))
    return t["nodes"]


def main():
    nj, folder = sys.argv[1], sys.argv[2]
    place = {}
    repo = os.environ["NIGHTJAR_REPOSITORY"]
    for name in os.listdir(os.path.join(repo, "index")):
        for p in json.loads(run(nj, "index", name))["packs"]:
            for b in p["blobs"]:
                place[b["id"]] = (p["id"], b["offset"], b["length"])
    tree = json.loads(run(nj, "snapshot", "latest"))["tree"]
    for part in folder.strip("/").split("/"):
        tree = next(n for n in nodes(nj, tree) if n["name"] == part)["subtree"]
    for n in nodes(nj, tree):
        if n["type"] != "file":
            continue
        seen, switches, back, gaps, prev = set(), 0, 0, 0, None
        for c in n.get("content") or []:
            pack, off, length = place[c]
            if prev is not None:
                if pack != prev[0]:
                    switches += 1
                elif off < prev[1]:
                    back += 1
                elif off != prev[1] + prev[2]:
                    gaps += 1
            seen.add(pack)
            prev = (pack, off, length)
        returns = switches + 1 - len(seen) if seen else 0
        print(f"{n['name']}: {len(n.get('content') or [])} chunks in {len(seen)} packs, "
              f"{switches} pack switches, {returns} returns to a pack left before; "
              f"within a pack {back} steps back, {gaps} gaps")


main()
