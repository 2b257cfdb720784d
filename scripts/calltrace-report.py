#!/usr/bin/env python3
"""Where a run's time goes under clayout, from the call traces of bench/calltrace.c (issue 17).

Each run's directory holds the two files calltrace.c wrote (app-PID.txt: the application's
calls, seen before libclayout.so; drv-PID.txt: what reached the driver, seen after it) and the
sample's output (out.txt). For each of the application's calls, clayout's own time is its time
less that of the driver calls made on its thread inside it.

  scripts/calltrace-report.py DIR...          one run: each call of the application, from its
                                              first clEnqueueWriteBuffer on, then the driver
                                              calls of clayout's other threads meanwhile
  scripts/calltrace-report.py --table ROOT    ROOT/CONFIG-ROUND/ for every run: per run and the
                                              median per CONFIG, the sample's total_ms and
                                              clayout's own time in its calls (us), in all and
                                              by entry point, and in the application's build
                                              call (outside total_ms: clayout's work before and
                                              after the real build, on the application's thread)
  scripts/calltrace-report.py --spans ROOT    ROOT/CONFIG-ROUND/ for every run: the host's time per
                                              launch in each tenth of the run's launches, the
                                              launches in which clayout's own time passed 1 ms
                                              (a wait), the driver calls of clayout's other
                                              threads that passed 1 ms (its builds), and the
                                              application's waits for the device that passed
                                              0.1 ms, each at its time from the first launch
"""
import glob, os, statistics, sys

ENTRIES = ["clEnqueueWriteBuffer", "clSetKernelArg", "clEnqueueNDRangeKernel", "clFinish", "clEnqueueReadBuffer"]


def load(path):
    rows = []
    for line in open(path):
        tid, start, length, name = line.split()[:4]
        rows.append((int(tid), float(start), float(length), name))
    return sorted(rows, key=lambda r: r[1])


def run_of(d):
    app_path = glob.glob(os.path.join(d, "app-*.txt"))[0]
    return load(app_path), load(app_path.replace("app-", "drv-"))


def inside(drv, call):
    tid, start, length, _ = call
    return [r for r in drv if r[0] == tid and r[1] >= start - 0.05 and r[1] + r[2] <= start + length + 0.05]


def own_time(drv, call):
    """Clayout's own time in one of the application's calls: its length less the driver's."""
    return call[2] - sum(r[2] for r in inside(drv, call))


def window(app):
    """The run proper: from the first upload to the first release of a buffer."""
    first = next(a for a in app if a[3] == "clEnqueueWriteBuffer")
    end = next((a[1] for a in app if a[3] == "clReleaseMemObject" and a[1] > first[1]), float("inf"))
    return first, [a for a in app if first[1] <= a[1] < end]


def one(d):
    app, drv = run_of(d)
    first, calls = window(app)
    print(f"== {d}")
    for call in calls:
        inner = inside(drv, call)
        real = max((r[2] for r in inner if r[3] == call[3]), default=0.0)
        others = " ".join(f"{r[3]} {r[2]:.1f}" for r in inner if r[3] != call[3])
        own = own_time(drv, call)
        print(f"  {call[3]:26s} {call[2]:9.1f} us, the driver's call {real:9.1f}, clayout's own {own:7.1f}  {others}")
    main, last = first[0], calls[-1][1] + calls[-1][2]
    for r in drv:
        if r[0] != main and r[1] + r[2] >= first[1] and r[1] <= last:
            print(f"  thread {r[0]} at +{r[1] - first[1]:9.1f} us: {r[3]} {r[2]:.1f} us")


def table(root):
    runs = {}
    for d in sorted(glob.glob(os.path.join(root, "*-*/"))):
        config = os.path.basename(d.rstrip("/")).rsplit("-", 1)[0]
        app, drv = run_of(d)
        first, calls = window(app)
        owns = [(call[3], own_time(drv, call)) for call in calls]
        by_entry = [sum(t for name, t in owns if name == e) for e in ENTRIES]
        total = float(open(os.path.join(d, "out.txt")).read().split("total_ms:")[1].split()[0]) * 1e3
        build = sum(own_time(drv, a) for a in app if a[3] == "clBuildProgram")
        # The window starts at the first upload: it is the first of `owns`.
        runs.setdefault(config, []).append([total, sum(t for _, t in owns), owns[0][1]] + by_entry + [build])
    head = ["total_ms (us)", "clayout's own", "first upload"] + [e[2:].replace("Enqueue", "") for e in ENTRIES]
    head.append("build call")
    print("| config | " + " | ".join(head) + " |")
    print("| --- |" + " ---: |" * len(head))
    for config, rows in runs.items():
        med = [statistics.median(c) for c in zip(*rows)]
        print(f"| {config} (median of {len(rows)}) | " + " | ".join(f"{x:.1f}" for x in med) + " |")


def spans(root):
    for d in sorted(glob.glob(os.path.join(root, "*-*/"))):
        app, drv = run_of(d)
        launches = [a for a in app if a[3] == "clEnqueueNDRangeKernel"]
        if len(launches) < 2:
            continue
        t0, main = launches[0][1], launches[0][0]
        tenth = max(1, (len(launches) - 1) // 10)
        per = [
            (launches[min(i + tenth, len(launches) - 1)][1] - launches[i][1]) / (min(i + tenth, len(launches) - 1) - i)
            for i in range(0, len(launches) - 1, tenth)
        ]
        waits = [(a[1] - t0, own_time(drv, a)) for a in launches]
        waits = [f"launch {i} at +{at / 1e3:.2f} ms: {own / 1e3:.2f} ms" for i, (at, own) in enumerate(waits) if own > 1000]
        builds = [f"{r[3]} at +{(r[1] - t0) / 1e3:.2f} ms: {r[2] / 1e3:.2f} ms" for r in drv if r[0] != main and r[1] >= t0 and r[2] > 1000]
        blocking = [
            f"{a[3]} at +{(a[1] - t0) / 1e3:.2f} ms: {a[2] / 1e3:.2f} ms"
            for a in app
            if a[1] > t0 and a[2] > 100 and a[3] in ("clFinish", "clEnqueueReadBuffer", "clWaitForEvents")
        ]
        total = open(os.path.join(d, "out.txt")).read().split("total_ms:")[1].split()[0]
        print(f"== {os.path.basename(d.rstrip('/'))}: total_ms {total}, {len(launches)} launches in {(launches[-1][1] - t0) / 1e3:.2f} ms")
        print("  us per launch, by tenths: " + " ".join(f"{x:.1f}" for x in per))
        for line in waits + builds + blocking:
            print("  " + line)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--table":
        table(sys.argv[2])
    elif len(sys.argv) > 2 and sys.argv[1] == "--spans":
        spans(sys.argv[2])
    elif len(sys.argv) > 1:
        for d in sys.argv[1:]:
            one(d)
    else:
        sys.exit(__doc__)
