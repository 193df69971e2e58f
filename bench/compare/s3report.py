#!/usr/bin/env python3
"""Print the Markdown table of one or more bench/compare/s3.sh results.

    python3 bench/compare/s3report.py RESULTS.tsv [MORE.tsv ...]

One column per tool (nightjar first), named with its version; with several
files each cell is the median with the runs in brackets. Then the ratio of
nightjar to each restic and issue 15's targets: each step's time at most
0.67 x restic's, and no more requests per GB of data than restic.
"""
import statistics
import sys
from collections import defaultdict

STEPS = [("init", "init"), ("b1", "first backup"), ("b2", "unchanged re-backup"),
         ("restore", "full restore"), ("check", "check --read-data")]


def load(path):
    meta, vals = {}, defaultdict(dict)
    for line in open(path):
        tool, key, value = line.rstrip("\n").split("\t", 2)
        if tool == "meta":
            meta[key] = value
        else:
            vals[tool][key] = value
    return meta, vals


def main(paths):
    runs = [load(p) for p in paths]
    meta = runs[0][0]
    for m, _ in runs[1:]:
        # A tool left out of the first run (restic-new) has its version
        # in a later one.
        for key, value in m.items():
            meta.setdefault(key, value)
    tools = [t for t in ["nightjar", "restic", "restic-new"] if any(t in v for _, v in runs)]
    gb = int(meta["data_bytes"]) / 1e9

    def cell(tool, key, scale=1.0):
        xs = [float(v[tool][key]) * scale for _, v in runs if key in v.get(tool, {})]
        return xs

    def fmt(xs, f):
        if not xs:
            return "–"
        m = statistics.median(xs)
        s = f.format(m)
        if len(xs) > 1:
            s += " (" + ", ".join(f.format(x) for x in xs) + ")"
        return s

    peers = [t for t in tools if t.startswith("restic")]
    head = ["step"] + [f"{t} {meta.get('version.' + t, '')}".strip() for t in tools]
    head += [f"nightjar / {p}" for p in peers] + ["target", "met"]
    print(f"Data: {meta['data_files']} files, {int(meta['data_bytes']) / 1e6:.0f} MB ({meta['dataset']}); "
          f"{meta['cpu']}; load average at the start {meta['loadavg']}; {meta['date']}")
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))

    def row(label, key, f, target=None, scale=1.0):
        cols = [label] + [fmt(cell(t, key, scale), f) for t in tools]
        nj = cell("nightjar", key, scale)
        ratios, met = [], []
        for p in peers:
            pv = cell(p, key, scale)
            if nj and pv and statistics.median(pv) > 0:
                r = statistics.median(nj) / statistics.median(pv)
                ratios.append(f"{r:.2f}")
                if target is not None:
                    met.append("yes" if r <= target else "no")
            else:
                ratios.append("–")
        cols += ratios
        cols += [f"≤ {target:g} × restic" if target is not None else "", ", ".join(met)]
        print("| " + " | ".join(cols) + " |")

    for step, name in STEPS:
        row(f"{name} (s)", f"{step}.wall", "{:.2f}", 0.67 if step != "init" else None)
    for step, name in STEPS[1:]:
        row(f"{name}: requests per GB of data", f"{step}.requests", "{:.0f}", 1.0, 1 / gb)
    for step, name in STEPS[1:]:
        row(f"{name}: requests", f"{step}.requests", "{:.0f}")
    for step, name in [("b1", "first backup"), ("b2", "unchanged re-backup")]:
        row(f"{name}: MB sent", f"{step}.bytes_in", "{:.1f}", None, 1e-6)
    for step, name in [("restore", "full restore"), ("check", "check --read-data")]:
        row(f"{name}: MB received", f"{step}.bytes_out", "{:.1f}", None, 1e-6)
    for step, name in [("b1", "first backup"), ("restore", "full restore")]:
        row(f"{name}: peak RSS (MiB)", f"{step}.rss_kib", "{:.0f}", None, 1 / 1024)
    same = {t: all(v[t].get("restore.identical") == "yes" for _, v in runs if t in v) for t in tools}
    print()
    print("Restored trees identical to the data: " + ", ".join(f"{t} {'yes' if ok else 'NO'}" for t, ok in same.items()) + ".")
    print()
    print("Requests by method and folder (of the first results file):")
    print()
    for t in tools:
        for step, name in STEPS:
            folders = sorted(((k[len(step) + 8:].replace("_", " "), v) for k, v in runs[0][1][t].items()
                              if k.startswith(step + ".folder.")), key=lambda kv: -int(kv[1]))
            print(f"- {t}, {name}: " + ", ".join(f"{k} {v}" for k, v in folders))


if __name__ == "__main__":
    main(sys.argv[1:])
