#!/usr/bin/env python3
"""Print the Markdown table of one or more bench/compare/run.sh results.

    python3 bench/compare/report.py RESULTS.tsv [MORE.tsv ...]

Any set of tools: one column per tool, named with its version (the meta
lines version.TOOL), nightjar first. With several files (rounds), each cell
is the median, followed by the individual rounds in brackets, and the
ratios are taken from the medians.

After the tools' columns come the ratio of nightjar to each peer, the ratio
to the best peer ("nightjar / best peer", with that peer in brackets) and,
where the project states one, the target and whether the medians meet it:

    first backup            <= 0.67 x each compressing peer at its default
                               settings (all but kopia-zstd), and no slower
                               than the fastest peer that does not compress
                               (issue 19's restated target: two rows)
    unchanged re-backup     <= 0.5  x the fastest peer
    growth after the change <= the smallest peer's
    full restore            <= 0.67 x the fastest peer
    check                   <= 0.67 x the fastest peer
    repository size         <= 1.015 x the smallest among the compressing peers
                               (meta compresses.TOOL: restic with repository
                               format 2, borg, kopia-zstd; not plain kopia)
    first backup peak RSS   <= the lowest restic's (tools named restic*)
    prune                   <= 0.5 x restic 0.19's (tools named restic* whose
                               version starts with 0.19)
"""
import os
import re
import statistics
import sys
from collections import defaultdict

MB = 1e6
MIB = 1024.0

# Targets: (factor, which peers, text)
T_B1_COMPRESSING = (0.67, "compressing defaults", "≤ 0.67 × each compressing peer (defaults)")
T_B1_PLAIN = (1.0, "not compressing", "≤ fastest peer that does not compress")
T_B2 = (0.5, "all", "≤ 0.5 × fastest")
T_GROW = (1.0, "all", "≤ smallest")
T_RESTORE = (0.67, "all", "≤ 0.67 × fastest")
T_CHECK = (0.67, "all", "≤ 0.67 × fastest")
T_SIZE = (1.015, "compressing", "≤ 1.015 × smallest compressing peer")
T_RSS = (1.0, "restic", "≤ lowest restic")
T_PRUNE = (0.5, "restic 0.19", "≤ 0.5 × restic 0.19")

# key, label, unit conversion, format, better ("low", "high" or None), target
ROWS = [
    ("init.wall", "init (s)", 1, "{:.2f}", "low", None),
    ("b1.wall", "first backup (s)", 1, "{:.1f}", "low", T_B1_COMPRESSING),
    ("b1.wall", "first backup (s), against peers that do not compress", 1, "{:.1f}", "low", T_B1_PLAIN),
    ("b1.mbps", "first backup (MB/s)", 1, "{:.0f}", "high", None),
    ("b1.cpu", "first backup, CPU (%)", 1, "{:.0f}", None, None),
    ("b1.cpusec", "first backup, CPU time user+sys (s)", 1, "{:.1f}", "low", None),
    ("b1.rss_kib", "first backup, peak RSS (MiB)", 1 / MIB, "{:.0f}", "low", T_RSS),
    ("b2.wall", "unchanged re-backup (s)", 1, "{:.2f}", "low", T_B2),
    ("b2w.wall", "unchanged re-backup again, cache not dropped (s)", 1, "{:.2f}", "low", None),
    ("b2.rss_kib", "unchanged re-backup, peak RSS (MiB)", 1 / MIB, "{:.0f}", "low", None),
    ("b2.grow", "unchanged re-backup(s): repository growth (MB)", 1 / MB, "{:.3f}", "low", None),
    ("b3.wall", "backup after the change (s)", 1, "{:.2f}", "low", None),
    ("b3.cpusec", "backup after the change, CPU time user+sys (s)", 1, "{:.1f}", "low", None),
    ("b3.rss_kib", "backup after the change, peak RSS (MiB)", 1 / MIB, "{:.0f}", "low", None),
    ("b3.grow", "after the change: repository growth (MB)", 1 / MB, "{:.2f}", "low", T_GROW),
    ("b3.added", "after the change: bytes added, tool's own figure (MB)", 1 / MB, "{:.2f}", None, None),
    ("restore.wall", "full restore (s)", 1, "{:.1f}", "low", T_RESTORE),
    ("restore.mbps", "full restore (MB/s)", 1, "{:.0f}", "high", None),
    ("restore.cpu", "full restore, CPU (%)", 1, "{:.0f}", None, None),
    ("restore.cpusec", "full restore, CPU time user+sys (s)", 1, "{:.1f}", "low", None),
    ("restore.rss_kib", "full restore, peak RSS (MiB)", 1 / MIB, "{:.0f}", "low", None),
    ("restore.identical", "restored tree identical (diff -r)", None, "{}", None, None),
    ("check.wall", "check reading all data (s)", 1, "{:.1f}", "low", T_CHECK),
    ("check.mbps", "check (data MB/s)", 1, "{:.0f}", "high", None),
    ("check.cpu", "check, CPU (%)", 1, "{:.0f}", None, None),
    ("check.cpusec", "check, CPU time user+sys (s)", 1, "{:.1f}", "low", None),
    ("check.rss_kib", "check, peak RSS (MiB)", 1 / MIB, "{:.0f}", "low", None),
    ("size1", "repository after the first backup (MB)", 1 / MB, "{:.1f}", "low", None),
    ("size3", "repository after all backups (MB)", 1 / MB, "{:.1f}", "low", T_SIZE),
    ("prune.wall", "prune after forgetting all but the newest snapshot (s)", 1, "{:.2f}", "low", T_PRUNE),
    ("prune.cpu", "prune, CPU (%)", 1, "{:.0f}", None, None),
    ("prune.cpusec", "prune, CPU time user+sys (s)", 1, "{:.2f}", "low", None),
    ("prune.rss_kib", "prune, peak RSS (MiB)", 1 / MIB, "{:.0f}", "low", None),
    ("prune.freed", "prune: repository shrank by (MB)", 1 / MB, "{:.2f}", None, None),
    ("size4", "repository after prune (MB)", 1 / MB, "{:.1f}", "low", None),
    ("prune.check", "check --read-data after prune passed", None, "{}", None, None),
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
        for step in ("b1", "b2", "b3", "restore", "check", "prune"):
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
        for step in ("b1", "restore", "check"):
            if data and v.get(f"{step}.wall"):
                v[f"{step}.mbps"] = data / MB / v[f"{step}.wall"]
        if "size2" in v and "size1" in v:
            v["b2.grow"] = v["size2"] - v["size1"]
        if "size3" in v and "size2" in v:
            v["b3.grow"] = v["size3"] - v["size2"]
    return meta, vals


def version(meta, tool):
    # version.TOOL; older results had the version under the tool's name
    return meta.get(f"version.{tool}", meta.get(tool, ""))


def compresses(meta, tool):
    v = meta.get(f"compresses.{tool}")
    if v is not None:
        return v == "yes"
    # older results: restic 0.14 and later create format 2 by default
    return tool.startswith(("restic", "borg")) or tool == "kopia-zstd"


def main():
    runs = [load(p) for p in sys.argv[1:]]
    if not runs:
        sys.exit(__doc__)
    meta = runs[0][0]
    # Tools in the order run.sh ran them, nightjar first, then any others
    # that show up in later rounds.
    tools = meta.get("tools", "").split()
    for _, vals in runs:
        tools += [t for t in vals if t not in tools]
    tools = [t for t in tools if any(t in vals for _, vals in runs)]
    tools.sort(key=lambda t: t != "nightjar")
    peers = [t for t in tools if t != "nightjar"]
    has_nj = "nightjar" in tools

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

    def peer_set(kind):
        if kind == "compressing":
            return [p for p in peers if compresses(meta, p)]
        if kind == "compressing defaults":
            # kopia-zstd is kopia with a compression policy set: not kopia's defaults
            return [p for p in peers if compresses(meta, p) and p != "kopia-zstd"]
        if kind == "not compressing":
            return [p for p in peers if not compresses(meta, p)]
        if kind == "restic":
            return [p for p in peers if p.startswith("restic")]
        if kind == "restic 0.19":
            return [p for p in peers if p.startswith("restic") and version(meta, p).startswith("0.19")]
        return peers

    gb = float(meta.get("data_bytes", 0)) / 1e9
    files = meta.get("data_files", "?")
    if files.isdigit():
        files = f"{int(files):,}"
    print(f"Data set `{meta.get('dataset', 'generated')}`: {gb:.2f} GB in {files} files; "
          f"page cache {meta.get('cache', '?')}.")
    if "change" in meta:
        print(f"The change before the third backup: {meta['change']}.")
    machine = [meta[k] for k in ("cpu", "memory", "fs", "kernel") if k in meta]
    if machine:
        print(f"Machine: {', '.join(machine)}; {meta.get('date', '')}, load {meta.get('loadavg', '?')} at the start.")
    if len(runs) > 1:
        print(f"Medians of {len(runs)} rounds; the rounds in brackets.")
    print()
    head = ["step"] + [f"{t} {version(meta, t)}".strip() for t in tools]
    if has_nj:
        head += [f"nightjar / {p}" for p in peers]
        if peers:
            head += ["nightjar / best peer", "target", "met"]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for key, label, scale, fmt, better, target in ROWS:
        meds, cells = {}, []
        for t in tools:
            m, s = cell(t, key, scale, fmt)
            meds[t] = m
            cells.append(s)
        if not any(cells):
            continue
        row = [label] + cells
        if has_nj:
            a = meds.get("nightjar")
            for p in peers:
                b = meds.get(p)
                if a is None or b is None or b == 0 or better is None:
                    row.append("")
                else:
                    row.append(f"{a / b:.2f}")
            if peers:
                row += best(a, meds, better, target, peer_set)
        print("| " + " | ".join(row) + " |")
    if has_nj and peers:
        comp = [p for p in peers if compresses(meta, p)]
        print()
        print("nightjar / best peer: nightjar's median over the best peer's (named in brackets) among "
              "the peers its target is stated on; without a target, among all peers. "
              f"Compressing peers: {', '.join(comp) or 'none'}. "
              "MB/s are data bytes over wall seconds.")


def best(a, meds, better, target, peer_set):
    """The cells nightjar / best peer, target and met."""
    if better is None or a is None:
        return ["", target[2] if target else "", ""]
    cands = [(meds[p], p) for p in peer_set(target[1] if target else "all") if meds.get(p)]
    if not cands:
        return ["", target[2] if target else "", "no peer" if target else ""]
    val, who = (min if better == "low" else max)(cands)
    ratio = a / val
    if target is None:
        return [f"{ratio:.2f} ({who})", "", ""]
    met = "yes" if ratio <= target[0] else "**no**"
    return [f"{ratio:.2f} ({who})", target[2], met]


if __name__ == "__main__":
    main()
