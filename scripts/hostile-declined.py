#!/usr/bin/env python3
"""The hostile suite's cases (tests/hostile/) in runs whose copies are declined at their build
and whose kernels' times as written are unsettled, on queues that profile: the untracked run's
journal then takes their launches and times them by their events (docs/cost-model.md, "A
declined run timed from the journal"). For each case: the plain run; two runs under `auto` that
fill a cache (the copies built, then loaded); the cache's `worth` record made to decline the
copies (a load of 1e15 ns) and its `times` records made unsettled (one timing as written each);
then the run under test (`CLAYOUT_PROFILE=1`), whose standard output and exit status must be the
plain run's. Cases that carry flags (policy=, env=, side=) run without them. Prints each case
that differs and a count of the cases whose run stayed untracked with the journal counted.

  scripts/hostile-declined.py [--lib PATH] [PROGRAM...]   (programs: bytes objects events loops)

PATH: a build with the `fault-injection` feature (its `quick-build` site counts every build as
answered from a driver cache, so that `auto` weighs the copies as on NVIDIA); default
target/fault-injection/release/libclayout.so, built with cargo when missing.
"""
import json, os, shutil, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOSTILE = os.path.join(ROOT, "tests", "hostile")


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def records(cache, kind):
    return [os.path.join(cache, f) for f in os.listdir(cache) if f.startswith(kind + "-")] if os.path.isdir(cache) else []


def edit(path, change):
    """Rewrites a cache record's JSON payload with `change`, under a header that checks out."""
    raw = open(path, "rb").read()
    i = raw.index(b"\n")
    fields = raw[:i].decode().split(" ", 4)
    value = json.loads(raw[i + 1:])
    change(value)
    payload = json.dumps(value, separators=(",", ":")).encode()
    header = f"{fields[0]} {fields[1]} {len(payload)} {fnv1a(payload):016x} {fields[4]}"
    open(path, "wb").write(header.encode() + b"\n" + payload)


def decline(worth):
    worth["load_ns"] = 1e15
    worth["runs"] = [{"args": None, "kernels": []}]


def unsettle(times):
    for c in times.get("classes", []):
        c[1]["timed"] = [1, 0, 0]


def main():
    args = sys.argv[1:]
    lib = os.path.join(ROOT, "target", "fault-injection", "release", "libclayout.so")
    if args[:1] == ["--lib"]:
        lib, args = os.path.abspath(args[1]), args[2:]
    elif not os.path.exists(lib):
        env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(ROOT, "target", "fault-injection"))
        subprocess.run(["cargo", "build", "--release", "--lib", "--quiet", "--features", "fault-injection"],
                       cwd=ROOT, env=env, check=True)
    programs = args or ["bytes", "objects", "events", "loops"]
    work = tempfile.mkdtemp(prefix="hostile-declined-")
    for p in programs:
        subprocess.run(["gcc", "-O2", "-pthread", "-DCL_TARGET_OPENCL_VERSION=300", "-o", os.path.join(work, p),
                        os.path.join(HOSTILE, p + ".c"), "-lOpenCL", "-lm"], check=True)

    def run(prog, case, env=None):
        e = dict(os.environ)
        if env is not None:
            e.update(LD_PRELOAD=lib, CLAYOUT_ANNOTATIONS=os.path.join(HOSTILE, "particles.dl"),
                     CLAYOUT_POLICY="auto", CLAYOUT_FAULT="quick-build", **env)
        try:
            r = subprocess.run([os.path.join(work, prog), case], env=e, cwd=HOSTILE, capture_output=True, timeout=60)
            return r.returncode, r.stdout, r.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            return "timeout", b"", ""

    same = differ = journal = 0
    for prog in programs:
        listed = subprocess.run([os.path.join(work, prog), "--list"], capture_output=True).stdout.decode()
        for line in listed.splitlines():
            case = line.split("\t")[0]
            plain = run(prog, case)
            cache = os.path.join(work, "cache")
            shutil.rmtree(cache, ignore_errors=True)
            run(prog, case, {"CLAYOUT_CACHE_DIR": cache, "CLAYOUT_BUILD_AFTER": "wait"})
            run(prog, case, {"CLAYOUT_CACHE_DIR": cache})
            for r in records(cache, "worth"):
                edit(r, decline)
            for r in records(cache, "times"):
                edit(r, unsettle)
            got = run(prog, case, {"CLAYOUT_CACHE_DIR": cache, "CLAYOUT_PROFILE": "1", "CLAYOUT_LOG": "debug"})
            if got[:2] == plain[:2]:
                same += 1
            else:
                differ += 1
                print(f"differ  {prog} {case}: exit {plain[0]} without clayout, {got[0]} with")
            if "journal counted" in got[2] and "tracked from now on" not in got[2]:
                journal += 1
    shutil.rmtree(work, ignore_errors=True)
    print(f"hostile, declined and timed from the journal: {same} the same, {differ} differ; "
          f"{journal} stayed untracked with the journal counted")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
