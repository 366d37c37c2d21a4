#!/usr/bin/env python3
"""Every mutant cargo-mutants makes of the code that decides, tried against the tests.

ci/mutants.py plants 27 chosen bugs; this sweep takes every mutant `cargo mutants --list`
generates (a function's body replaced by a default, a comparison or operator turned
around, a `!` deleted, a match arm or guard changed) in the files that decide what is
removed, replaced or trusted, and for each runs the tests in tiers, cheapest first,
stopping at the first that fails:

  1. the unit tests of the crate the file is in (seconds);
  2. the integration tests of the jobs that use the file (tens of seconds);
  3. the randomized fault harnesses (faults::, faults_acts; about a minute).

A mutant is *caught* when a tier fails (or times out), *unviable* when it does not build,
*missed* when every tier passes: a check no test holds to account, or an equivalent
mutant (docs/faults.md lists each missed one with its reason).

    sudo python3 ci/mutants-sweep.py                 # every file below, in order
    sudo python3 ci/mutants-sweep.py destructive/    # the files whose path contains a word

It edits the working tree (each mutant is put back before the next, also on an error):
run it in a worktree of its own. Results go to target/mutants-sweep.tsv as they come (a
second run resumes: mutants already judged at this commit are skipped), and a summary is
printed at the end. Root is required, as for ci/mutants.py. On 2 CPUs a mutant takes
5-90 s: the full sweep is hours; run it where that is affordable.
"""

import json
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

JOBS_UNIT = ["test", "-q", "-p", "seekless-jobs", "--lib"]
CORE_UNIT = ["test", "-q", "-p", "seekless-core", "--lib"]
CATALOG_UNIT = ["test", "-q", "-p", "seekless-catalog", "--lib"]


def it(*filters):
    return ["test", "-q", "--test", "it", "--"] + list(filters)


HARNESS = it("faults::", "faults_acts")

# What the removal owner's files are held to: its unit tests, then the catalog's and the
# jobs' that remove or forget, then the two seeded harnesses.
DESTRUCTIVE = [[JOBS_UNIT],
               [CATALOG_UNIT, it("copy_delete", "copy_safety", "tar_safety", "dupes_act",
                                 "copy::", "copy_runs", "index_scope")],
               [HARNESS]]
# The duplicate acts: their own crate's unit tests, the other crate's (the acts and their
# caller test each other), then `dupes --act` and the harnesses.
ACTS = [[JOBS_UNIT], [CATALOG_UNIT, it("dupes_act", "dupes::")], [HARNESS]]
RESOLVE = [[CATALOG_UNIT], [JOBS_UNIT, it("dupes_act", "dupes::")], [HARNESS]]

# (file, tiers): each tier a list of cargo commands run in turn.
FILES = (
    [(f"crates/jobs/src/destructive/{f}.rs", DESTRUCTIVE)
     for f in ["evidence", "tree", "directory", "temporaries", "lock", "forget"]]
    + [
        ("crates/jobs/src/temp.rs",
         [[JOBS_UNIT],
          [it("copy_delete", "copy_safety", "tar_safety", "copy::")],
          [HARNESS]]),
        ("crates/core/src/read/mod.rs",
         [[CORE_UNIT],
          [it("read::", "copy_safety", "hash::")],
          [HARNESS]]),
        ("crates/jobs/src/copy/content.rs",
         [[JOBS_UNIT],
          [it("copy_delete", "copy_safety", "copy::", "copy_runs")],
          [HARNESS]]),
    ]
    + [(f"crates/jobs/src/destructive/acts/{f}.rs", ACTS)
       for f in ["check", "primitives", "trash_info"]]
    + [(f"crates/catalog/src/dupes/resolve/{f}.rs", RESOLVE)
       for f in ["act", "prepare", "places", "clean_up", "undo", "trash"]]
)

TIMEOUT = 600


def cargo(args, log):
    env = dict(os.environ)
    env["SEEKLESS_REQUIRE_ROOT_TESTS"] = "1"
    env.pop("SEEKLESS_ALLOW_SKIP", None)
    log.write(f"----- cargo {' '.join(args)}\n")
    log.flush()
    try:
        return subprocess.run(["cargo"] + args, cwd=ROOT, env=env, stdout=log,
                              stderr=subprocess.STDOUT, timeout=TIMEOUT).returncode
    except subprocess.TimeoutExpired:
        log.write("----- timed out\n")
        return "timeout"


def mutants_of(rel):
    out = subprocess.run(["cargo", "mutants", "--workspace", "--list", "--json", "-f", rel],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return [m for m in json.loads(out) if m["file"] == rel]


def planted(text, m):
    """`text` with mutant `m` in place (spans are 1-based lines and character columns)."""
    lines = text.split("\n")
    s, e = m["span"]["start"], m["span"]["end"]
    head = "\n".join(lines[:s["line"] - 1] + [lines[s["line"] - 1][:s["column"] - 1]])
    tail = lines[e["line"] - 1][e["column"] - 1:]
    rest = "\n".join([tail] + lines[e["line"]:])
    return head + m["replacement"] + rest


def main():
    if os.geteuid() != 0:
        print("mutants-sweep: needs root (loop devices, bind mounts, FUSE)", file=sys.stderr)
        return 2
    # Stopped (SIGTERM): the file being mutated is put back on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    words = sys.argv[1:]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    os.makedirs(os.path.join(ROOT, "target"), exist_ok=True)
    tsv = os.path.join(ROOT, "target", "mutants-sweep.tsv")
    done = set()
    if os.path.exists(tsv):
        for line in open(tsv):
            f = line.rstrip("\n").split("\t")
            if len(f) >= 3 and f[0] == commit:
                done.add(f[1])
    log = open(os.path.join(ROOT, "target", "mutants-sweep.log"), "a")
    # The tests must pass before anything is planted, or every mutant would look caught.
    chosen = [(rel, tiers) for rel, tiers in FILES if not words or any(w in rel for w in words)]
    baseline = []
    for _, tiers in chosen:
        for tier in tiers:
            baseline.extend(c for c in tier if c not in baseline)
    for c in baseline:
        if cargo(c, log) != 0:
            print(f"mutants-sweep: unmutated, cargo {' '.join(c)} fails"
                  " (see target/mutants-sweep.log)", file=sys.stderr)
            return 2
    results = open(tsv, "a")
    counts = {}
    for rel, tiers in chosen:
        path = os.path.join(ROOT, rel)
        text = open(path).read()
        for m in mutants_of(rel):
            name = m["name"]
            if name in done:
                continue
            start = time.time()
            try:
                open(path, "w").write(planted(text, m))
                log.write(f"\n===== {name}\n")
                # Built as far as the first tier needs (the crate's own tests): a mutant
                # that does not build there builds nowhere.
                if cargo(tiers[0][0] + ["--no-run"], log) != 0:
                    verdict = "unviable"
                else:
                    verdict = "missed"
                    for n, tier in enumerate(tiers, 1):
                        rc = next((rc for rc in (cargo(c, log) for c in tier) if rc != 0), 0)
                        if rc != 0:
                            verdict = f"caught by tier {n}" + (" (timeout)" if rc == "timeout" else "")
                            break
            finally:
                open(path, "w").write(text)
            secs = time.time() - start
            counts[verdict.split(" (")[0]] = counts.get(verdict.split(" (")[0], 0) + 1
            results.write(f"{commit}\t{name}\t{verdict}\t{secs:.0f}\n")
            results.flush()
            print(f"{verdict:<24} {secs:4.0f} s  {name}", flush=True)
    print("mutants-sweep:", ", ".join(f"{v}: {n}" for v, n in sorted(counts.items())),
          f"(results: {tsv})")
    return 1 if counts.get("missed") else 0


if __name__ == "__main__":
    sys.exit(main())
