#!/usr/bin/env python3
"""Print the Markdown table of one or more bench/compare/run.sh results.

    python3 bench/compare/report.py RESULTS.tsv [MORE.tsv ...]

With several files (rounds), each cell is the median, followed by the
individual rounds in brackets, and the ratios are taken from the medians.
"""
import os
import re
import statistics
import sys
from collections import defaultdict

MB = 1e6
MIB = 1024.0

# key, label, unit conversion, format, better ("low", "high" or None)
ROWS = [
    ("init.wall", "init (s)", 1, "{:.2f}", "low"),
    ("b1.wall", "first backup (s)", 1, "{:.1f}", "low"),
    ("b1.mbps", "first backup (MB/s)", 1, "{:.0f}", "high"),
    ("b1.cpu", "first backup, CPU (%)", 1, "{:.0f}", None),
    ("b1.cpusec", "first backup, CPU time user+sys (s)", 1, "{:.1f}", "low"),
    ("b1.rss_kib", "first backup, peak RSS (MiB)", 1 / MIB, "{:.0f}", "low"),
    ("b2.wall", "unchanged re-backup (s)", 1, "{:.2f}", "low"),
    ("b2w.wall", "unchanged re-backup again, cache not dropped (s)", 1, "{:.2f}", "low"),
    ("b2.rss_kib", "unchanged re-backup, peak RSS (MiB)", 1 / MIB, "{:.0f}", "low"),
    ("b2.grow", "2 unchanged re-backups: repository growth (MB)", 1 / MB, "{:.3f}", "low"),
    ("b3.wall", "backup after the change (s)", 1, "{:.1f}", "low"),
    ("b3.cpusec", "backup after the change, CPU time user+sys (s)", 1, "{:.1f}", "low"),
    ("b3.grow", "after the change: repository growth (MB)", 1 / MB, "{:.1f}", "low"),
    ("b3.added", "after the change: bytes added, tool's own figure (MB)", 1 / MB, "{:.1f}", None),
    ("restore.wall", "full restore (s)", 1, "{:.1f}", "low"),
    ("restore.mbps", "full restore (MB/s)", 1, "{:.0f}", "high"),
    ("restore.cpu", "full restore, CPU (%)", 1, "{:.0f}", None),
    ("restore.cpusec", "full restore, CPU time user+sys (s)", 1, "{:.1f}", "low"),
    ("restore.rss_kib", "full restore, peak RSS (MiB)", 1 / MIB, "{:.0f}", "low"),
    ("restore.identical", "restored tree identical (diff -r)", None, "{}", None),
    ("check.wall", "check reading all data (s)", 1, "{:.1f}", "low"),
    ("check.cpu", "check, CPU (%)", 1, "{:.0f}", None),
    ("check.cpusec", "check, CPU time user+sys (s)", 1, "{:.1f}", "low"),
    ("check.rss_kib", "check, peak RSS (MiB)", 1 / MIB, "{:.0f}", "low"),
    ("size1", "repository after first backup (MB)", 1 / MB, "{:.1f}", "low"),
    ("size3", "repository after all 4 backups (MB)", 1 / MB, "{:.1f}", "low"),
]


def load(path):
    meta, vals = {}, defaultdict(dict)
    for line in open(path):
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 3:
            continue
        tool, key, value = parts
        if tool == "meta":
            meta[key] = value
            continue
        try:
            vals[tool][key] = float(value)
        except ValueError:
            vals[tool][key] = value
    # CPU seconds from the /usr/bin/time -v logs next to the results
    folder = os.path.dirname(os.path.abspath(path))
    for tool in list(vals):
        for step in ("b1", "b2", "b3", "restore", "check"):
            try:
                txt = open(os.path.join(folder, f"{tool}.{step}.time")).read()
            except OSError:
                continue
            user = re.search(r"User time \(seconds\): ([\d.]+)", txt)
            system = re.search(r"System time \(seconds\): ([\d.]+)", txt)
            if user and system:
                vals[tool][f"{step}.cpusec"] = float(user.group(1)) + float(system.group(1))
    data = float(meta.get("data_bytes", 0))
    for v in vals.values():
        if data and v.get("b1.wall"):
            v["b1.mbps"] = data / MB / v["b1.wall"]
        if data and v.get("restore.wall"):
            v["restore.mbps"] = data / MB / v["restore.wall"]
        if "size2" in v and "size1" in v:
            v["b2.grow"] = v["size2"] - v["size1"]
        if "size3" in v and "size2" in v:
            v["b3.grow"] = v["size3"] - v["size2"]
    return meta, vals


def main():
    runs = [load(p) for p in sys.argv[1:]]
    if not runs:
        sys.exit(__doc__)
    meta = runs[0][0]
    tools = [t for t in ("nightjar", "restic", "borg") if t in runs[0][1]]
    peers = [t for t in tools if t != "nightjar"]

    def cell(tool, key, scale, fmt):
        xs = [r[1][tool][key] for r in runs if key in r[1].get(tool, {})]
        if not xs:
            return None, ""
        if scale is None:
            return None, "/".join(str(x) for x in xs)
        xs = [x * scale for x in xs]
        med = statistics.median(xs)
        s = fmt.format(med)
        if len(xs) > 1:
            s += " (" + ", ".join(fmt.format(x) for x in xs) + ")"
        return med, s

    print("Data set: {:.2f} GB in {} files; {}; page cache {}.".format(
        float(meta.get("data_bytes", 0)) / 1e9, meta.get("data_files", "?"),
        ", ".join(f"{k} {meta[k]}" for k in ("restic", "borg") if k in meta) or "no peers",
        meta.get("cache", "?")))
    if len(runs) > 1:
        print(f"Medians of {len(runs)} rounds; the rounds in brackets.")
    print()
    head = ["step"] + tools + [f"nightjar / {p}" for p in peers]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for key, label, scale, fmt, better in ROWS:
        meds, cells = {}, []
        for t in tools:
            m, s = cell(t, key, scale, fmt)
            meds[t] = m
            cells.append(s)
        if not any(cells):
            continue
        ratios = []
        for p in peers:
            a, b = meds.get("nightjar"), meds.get(p)
            if a is None or b is None or b == 0 or better is None:
                ratios.append("")
            else:
                ratios.append(f"{a / b:.2f}")
        print("| " + " | ".join([label] + cells + ratios) + " |")


if __name__ == "__main__":
    main()
