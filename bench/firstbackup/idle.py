#!/usr/bin/env python3
"""idle.py: how busy a run kept the cores, from a Go runtime trace.

    go tool trace -d=parsed TRACE | bench/firstbackup/idle.py [BUCKET_SECONDS] [PROCS]

For each bucket of time (0.5 s by default) it prints the mean number of
goroutines running, the mean number runnable (waiting for a core), and the
cores idle while no goroutine was runnable, which is the program's own
fault (a serial stage, a stall between stages), not the machine's load.
The last line sums those idle core-seconds. PROCS is GOMAXPROCS (2).

nightjar writes a runtime trace of a command to the file that
NIGHTJAR_TRACE names:

    NIGHTJAR_TRACE=/tmp/b1.trace nightjar backup DATA
"""
import re
import sys

bucket = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
procs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
transition = re.compile(r'StateTransition Time=(\d+) GoID=(\d+) (\w+)->(\w+)')
events = []
for line in sys.stdin:
    m = transition.search(line)
    if m:
        events.append((int(m.group(1)), m.group(3), m.group(4)))
if not events:
    sys.exit("no goroutine transitions in the input")
events.sort()
t0, end = events[0][0], events[-1][0]
n = int((end - t0) / 1e9 / bucket) + 1
running_s, runnable_s, idle_s = [0.0] * n, [0.0] * n, [0.0] * n


def spread(a, b, running, runnable):
    """Adds the interval [a, b) with the given counts to its buckets."""
    while a < b:
        i = int((a - t0) / 1e9 / bucket)
        stop = min(b, t0 + int((i + 1) * bucket * 1e9))
        d = (stop - a) / 1e9
        running_s[i] += running * d
        runnable_s[i] += runnable * d
        if runnable == 0:
            idle_s[i] += max(0, procs - running) * d
        a = stop


running = runnable = 0
last = t0
for t, before, after in events:
    spread(last, t, min(running, procs), runnable)
    last = t
    running += (after == 'Running') - (before == 'Running')
    runnable += (after == 'Runnable') - (before == 'Runnable')
for i in range(n):
    print(f"{i * bucket:7.2f} s  running {running_s[i] / bucket:4.2f}  runnable {runnable_s[i] / bucket:5.2f}  idle with nothing runnable {idle_s[i] / bucket:4.2f}")
print(f"{(end - t0) / 1e9:.2f} s traced; core-seconds idle with nothing runnable: {sum(idle_s):.2f}")
