#!/usr/bin/env python3
"""Report of bench/hdd/two-disks.sh (standard library only).

  two-disks.py report --runs runs.jsonl --plan plan.jsonl --trace-a A.csv --trace-b B.csv
                      --disk-a loopN --disk-b loopM --min-overlap PCT --md OUT.md
                      [--json OUT.json] [--reps N] [--files N] [--busy 0|1] [--damon STATE]
                      [--corpus-a TEXT] [--corpus-b TEXT] [--summary-disks TEXT]

runs.jsonl has one line per timed run (written by two-disks.sh):
  {"run": "alone-a"|"alone-b"|"together", "rep": R, "wall_s": S,
   "anchor": {"a": WALL_US, "b": WALL_US}, "stats": {"a": {...}, "b": {...}}}
where anchor.X is the wall-clock time (µs) at which the mark "run RUN R" was written to
disk X's hddsim control file. Each hddsim trace counts virtual µs from its own start;
the mark's virtual_us and the anchor put both traces on one clock.

A traced read is a *data* read when it touches a planned file's bytes ([offset, offset +
size) from `seekless order --json`, rounded up to 4 KiB); the rest (directories, inode
tables, extent blocks, the journal) is metadata. A disk's *sweep* is the span from its
first data read's start to its last data read's end. The overlap of a together run is
|sweep A ∩ sweep B| / the shorter sweep: 100 % when the shorter sweep ran entirely while
the other disk was sweeping, 0 % when the sweeps ran one after the other. Asserted
(exit 1) against --min-overlap for every together rep; so is that each alone run read
data from its own disk only.
"""
import bisect
import json
import statistics
import sys

PAGE = 4096


def args(argv):
    out, i = {}, 0
    while i < len(argv):
        out[argv[i].lstrip("-")] = argv[i + 1]
        i += 2
    return out


def data_ranges(plan, disk):
    """Sorted, merged [start, end) byte ranges of the planned files on `disk`."""
    rs = []
    for f in plan:
        if f.get("disk") != disk or f.get("offset") is None or not f.get("size"):
            continue
        size = (f["size"] + PAGE - 1) // PAGE * PAGE
        rs.append((f["offset"], f["offset"] + size))
    rs.sort()
    merged = []
    for s, e in rs:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return [m[0] for m in merged], [m[1] for m in merged]


def is_data(ranges, off, n):
    starts, ends = ranges
    i = bisect.bisect_right(starts, off + n - 1) - 1
    return i >= 0 and ends[i] > off


def trace_runs(path):
    """{label: {"mark_us": virtual µs of 'run LABEL', "reads": [(start_us, end_us, off, len,
    seek_us, rot_us, xfer_us)]}} for every 'run LABEL' ... 'end LABEL' pair in the trace."""
    runs, cur = {}, None
    for line in open(path):
        if line.startswith("#"):
            # "# mark run together 1 virtual_us=123"
            body = line[len("# mark "):] if line.startswith("# mark ") else ""
            label, _, at = body.rpartition(" virtual_us=")
            if label.startswith("run "):
                cur = label[4:]
                runs[cur] = {"mark_us": float(at), "reads": []}
            elif label.startswith("end "):
                cur = None
            continue
        if cur is None:
            continue
        p = line.strip().split(",")
        if len(p) < 8 or p[3] != "read":
            continue
        start, off, n = float(p[0]), int(p[1]), int(p[2])
        seek, rot, xfer = float(p[5]), float(p[6]), float(p[7])
        # A read served from the drive's buffer has no modeled service time: count its
        # bytes at the bus rate so it is not a zero-length interval.
        service = seek + rot + xfer if seek + rot + xfer > 0 else n / 550e6 * 1e6
        runs[cur]["reads"].append((start, start + service, off, n, seek, rot, xfer))
    return runs


def merge(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def measure(ivs):
    return sum(e - s for s, e in ivs)


def intersect(a, b):
    """Total length of the intersection of two merged interval lists."""
    i = j = 0
    tot = 0.0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if e > s:
            tot += e - s
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tot


def disk_view(run, ranges, anchor_us):
    """One disk's reads in one run, on the wall clock (µs), relative to the run's start."""
    if run is None:
        return None
    shift = anchor_us - run["mark_us"]
    reads = [(s + shift, e + shift, o, n, sk, rt, xf) for s, e, o, n, sk, rt, xf in run["reads"]]
    data = [r for r in reads if is_data(ranges, r[2], r[3])]
    v = {
        "reads": len(reads),
        "data_reads": len(data),
        "data_bytes": sum(r[3] for r in data),
        "busy_s": sum(r[1] - r[0] for r in reads) / 1e6,
        "positioning_s": sum(r[4] + r[5] for r in reads) / 1e6,
    }
    if data:
        v["sweep"] = [min(r[0] for r in data), max(r[1] for r in data)]
        v["sweep_s"] = (v["sweep"][1] - v["sweep"][0]) / 1e6
        v["busy"] = merge([(r[0], r[1]) for r in data])
    if reads:
        v["first_read_s"] = (min(r[0] for r in reads) - anchor_us) / 1e6
    return v


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def report(a):
    runs = [json.loads(l) for l in open(a["runs"]) if l.strip()]
    plan = [json.loads(l) for l in open(a["plan"]) if l.strip()]
    disks = {"a": a["disk-a"], "b": a["disk-b"]}
    ranges = {k: data_ranges(plan, d) for k, d in disks.items()}
    traces = {"a": trace_runs(a["trace-a"]), "b": trace_runs(a["trace-b"])}
    min_overlap = float(a.get("min-overlap", 80))
    files = {k: sum(1 for f in plan if f.get("disk") == d) for k, d in disks.items()}
    nbytes = {k: sum(f.get("size") or 0 for f in plan if f.get("disk") == d) for k, d in disks.items()}
    failures = []

    for r in runs:
        label = f"{r['run']} {r['rep']}"
        r["disks"] = {}
        for k in "ab":
            r["disks"][k] = disk_view(traces[k].get(label), ranges[k], r["anchor"][k])
            if r["disks"][k] is None:
                failures.append(f"{label}: no 'run {label}' mark in disk {k.upper()}'s trace")
        va, vb = r["disks"]["a"], r["disks"]["b"]
        if va is None or vb is None:
            continue
        if r["run"] == "alone-a" and (va["data_reads"] == 0 or vb["data_reads"] > 0):
            failures.append(f"{label}: expected data reads on disk A only "
                            f"(A {va['data_reads']}, B {vb['data_reads']})")
        if r["run"] == "alone-b" and (vb["data_reads"] == 0 or va["data_reads"] > 0):
            failures.append(f"{label}: expected data reads on disk B only "
                            f"(A {va['data_reads']}, B {vb['data_reads']})")
        if r["run"] == "together":
            if "sweep" not in va or "sweep" not in vb:
                failures.append(f"{label}: a disk had no data reads (A {va['data_reads']}, B {vb['data_reads']})")
                r["overlap_pct"] = 0.0
                continue
            sa, sb = va["sweep"], vb["sweep"]
            inter = max(0.0, min(sa[1], sb[1]) - max(sa[0], sb[0]))
            shorter = min(sa[1] - sa[0], sb[1] - sb[0])
            r["overlap_pct"] = 100.0 * inter / shorter if shorter > 0 else 0.0
            # Finer: of the time the less busy disk spent serving data reads, the share
            # during which the other was serving data reads too.
            ba, bb = va["busy"], vb["busy"]
            both = intersect(ba, bb)
            r["both_busy_pct"] = 100.0 * both / min(measure(ba), measure(bb))
            r["start_gap_s"] = (sb[0] - sa[0]) / 1e6
            r["end_gap_s"] = (sb[1] - sa[1]) / 1e6
            if r["overlap_pct"] < min_overlap:
                t0 = r["anchor"]["a"]
                failures.append(f"{label}: sweeps overlap {r['overlap_pct']:.1f} % < {min_overlap:.0f} % "
                                f"(seconds after the run's start: A {(sa[0] - t0) / 1e6:.3f}..{(sa[1] - t0) / 1e6:.3f}, "
                                f"B {(sb[0] - t0) / 1e6:.3f}..{(sb[1] - t0) / 1e6:.3f})")
        for k in "ab":
            v = r["disks"][k]
            if v is not None:
                v.pop("busy", None)

    by = {}
    for r in runs:
        by.setdefault(r["run"], []).append(r)

    def wall(name):
        return med([r["wall_s"] for r in by.get(name, [])])

    def sweep(name, k):
        return med([(r["disks"][k] or {}).get("sweep_s") for r in by.get(name, [])])

    def stat(name, k, key):
        rs = sorted(by.get(name, []), key=lambda r: r["wall_s"])
        if not rs:
            return None
        return (rs[len(rs) // 2].get("stats", {}).get(k) or {}).get(key)

    wa, wb, wt = wall("alone-a"), wall("alone-b"), wall("together")
    ratio_max = wt / max(wa, wb) if None not in (wa, wb, wt) else None
    ratio_sum = wt / (wa + wb) if None not in (wa, wb, wt) else None
    overlaps = [r.get("overlap_pct") for r in by.get("together", []) if r.get("overlap_pct") is not None]
    both = [r.get("both_busy_pct") for r in by.get("together", []) if r.get("both_busy_pct") is not None]

    def f(x, fmt="{:.2f}"):
        return "–" if x is None else fmt.format(x)

    title = {"alone-a": f"disk A alone (`hash A`, {disks['a']})",
             "alone-b": f"disk B alone (`hash B`, {disks['b']})",
             "together": "A and B together (`hash A B`)"}
    L = [f"### Two emulated disks, one seekless run: {files['a']} + {files['b']} files, "
         f"median of {a.get('reps', '?')} cold runs",
         "",
         f"Disk A: {disks['a']}, {files['a']} files, {nbytes['a'] / 1e6:.1f} MB"
         + (f" (`{a['corpus-a']}`)" if a.get("corpus-a") else "") + ". "
         f"Disk B: {disks['b']}, {files['b']} files, {nbytes['b'] / 1e6:.1f} MB"
         + (f" (`{a['corpus-b']}`)" if a.get("corpus-b") else "") + ". "
         f"Each disk its own hddsim (7200 rpm model, defaults) → loop device → filesystem. "
         f"Command: `seekless hash --summary --algo blake3` on the corpus of A, of B, and of both. "
         f"Every run starts cold (both stacks remounted, caches dropped). "
         f"SCHED_IDLE busy loop per CPU: {'yes' if a.get('busy') == '1' else 'no'}. "
         f"DAMON proactive reclaim: {a.get('damon') or 'not recorded'}. "
         f"Sweep = first to last data read on that disk (hddsim traces, both on one clock); "
         f"seeks from hddsim's stats of the median rep.",
         "",
         "| run | total s | reps s | sweep A s | sweep B s | reads A | reads B | seeks A | seeks B | max outst. A | max outst. B |",
         "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in ("alone-a", "alone-b", "together"):
        rs = by.get(name, [])
        if not rs:
            continue
        reps = ", ".join(f"{r['wall_s']:.2f}" for r in rs)
        L.append(f"| {title[name]} | {f(wall(name))} | {reps} | {f(sweep(name, 'a'))} | {f(sweep(name, 'b'))} | "
                 f"{f(stat(name, 'a', 'reads'), '{}')} | {f(stat(name, 'b', 'reads'), '{}')} | "
                 f"{f(stat(name, 'a', 'seeks'), '{}')} | {f(stat(name, 'b', 'seeks'), '{}')} | "
                 f"{f(stat(name, 'a', 'max_outstanding'), '{}')} | {f(stat(name, 'b', 'max_outstanding'), '{}')} |")
    tg = by.get("together", [])
    if tg:
        L += ["", "Together runs, per rep: overlap of the sweeps = |sweep A ∩ sweep B| ÷ shorter sweep; "
              "both busy = share of the less busy disk's data-read service time during which the other "
              "disk was serving data reads too; start/end = B's sweep start/end minus A's.", "",
              "| rep | total s | sweep A s | sweep B s | overlap | both busy | start B−A s | end B−A s |",
              "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in tg:
            L.append(f"| {r['rep']} | {r['wall_s']:.2f} | {f((r['disks']['a'] or {}).get('sweep_s'))} | "
                     f"{f((r['disks']['b'] or {}).get('sweep_s'))} | {f(r.get('overlap_pct'), '{:.1f} %')} | "
                     f"{f(r.get('both_busy_pct'), '{:.1f} %')} | {f(r.get('start_gap_s'), '{:+.3f}')} | "
                     f"{f(r.get('end_gap_s'), '{:+.3f}')} |")
    targets = []

    def t(name, value, goal, ok, fmt="{:.2f}"):
        targets.append({"target": name, "value": value, "goal": goal, "met": ok})
        L.append(f"| {name} | {f(value, fmt)} | {goal} | {'yes' if ok else '**no**'} |")

    L += ["", "| target | value | goal | met |", "| --- | ---: | --- | --- |"]
    t("together ÷ max(A alone, B alone)", ratio_max, "≤ 1.1", ratio_max is not None and ratio_max <= 1.1)
    t("together ÷ (A alone + B alone)", ratio_sum, "≈ 0.5 (not 1)", ratio_sum is not None and ratio_sum < 0.75)
    lo = min(overlaps) if overlaps else None
    t("overlap of the two sweeps (lowest rep)", lo, f"≥ {min_overlap:.0f} %",
      lo is not None and lo >= min_overlap, "{:.1f} %")
    if both:
        L.append(f"| both disks busy (lowest rep, information) | {min(both):.1f} % | – | – |")
    if a.get("summary-disks"):
        L.append(f"| disks in `seekless order --summary A B` | {a['summary-disks']} | 2 | yes |")
    if failures:
        L += ["", "Check FAILED:", ""] + [f"- {x}" for x in failures]
    text = "\n".join(L) + "\n"
    open(a["md"], "w").write(text)
    if a.get("json"):
        json.dump({"disks": disks, "files": files, "bytes": nbytes, "runs": runs, "targets": targets,
                   "failures": failures}, open(a["json"], "w"), indent=1)
    sys.stdout.write(text)
    if failures:
        for x in failures:
            print(f"two-disks: FAIL: {x}", file=sys.stderr)
        sys.exit(1)


def main():
    if len(sys.argv) < 2 or sys.argv[1] != "report":
        sys.exit(__doc__)
    report(args(sys.argv[2:]))


if __name__ == "__main__":
    main()
