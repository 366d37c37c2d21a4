#!/usr/bin/env python3
"""Tables and seek maps for bench/hdd/run (standard library only).

  plot.py table --tag T --runs runs.jsonl --extents e.json --stream s.json --corpus c.txt
                --md OUT.md --json OUT.json [--busy 0|1] [--damon on|paused|none] [--reps N]
  plot.py seekmap --trace trace.csv --a "dir 1" --b "sl-physical 1" --svg OUT.svg [--title T]
"""
import json
import statistics
import sys

LABELS = {
    "dir": "directory order (find | xargs cat)",
    "tar": "GNU tar (tar -cf - | cat)",
    "tar-inode": "tar --sort=inode",
    "sl-given-noprefetch": "seekless given, no prefetch",
    "sl-given": "seekless given",
    "sl-inode-noprefetch": "seekless inode, no prefetch",
    "sl-inode": "seekless inode",
    "sl-physical-noprefetch": "seekless physical, no prefetch",
    "sl-physical": "seekless physical",
    "sl-physical-nobarrier": "seekless physical --gap-barrier-kb 0",
    "sl-physical-w128": "seekless physical --window-mb 128",
    "sl-physical-w256": "seekless physical --window-mb 256",
    "sl-tar": "seekless tar (-f - | cat)",
    "sl-tar-zstd": "seekless tar --zstd (-f - | cat)",
    "sl-tar-gzip": "seekless tar --gzip (-f - | cat)",
    "cp": "cp -a (to tmpfs)",
    "rsync": "rsync -a (to tmpfs)",
    "rsync-rerun": "rsync -a, re-run, nothing changed",
    "sl-copy": "seekless copy (to tmpfs)",
    "sl-copy-rerun": "seekless copy, re-run, nothing changed",
    "stream": "streaming limit (bytes / zone rate)",
}


def args(argv):
    out, i = {}, 0
    while i < len(argv):
        k = argv[i].lstrip("-")
        out[k] = argv[i + 1]
        i += 2
    return out


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def table(a):
    runs = [json.loads(l) for l in open(a["runs"]) if l.strip()]
    ext = json.load(open(a["extents"]))
    stream = json.load(open(a["stream"]))
    nfiles, nbytes = ext["files"], stream["bytes"]
    by = {}
    for r in runs:
        by.setdefault(r["contender"], []).append(r)
    lk = by.pop("lookup", [])
    dir_s = med([r["wall_s"] for r in by.get("dir", [])])
    rows = []
    order = [k for k in LABELS if k in by] + [k for k in by if k not in LABELS]
    for name in order + ["stream"]:
        if name == "stream":
            wall = stream["stream_s"]
            st = {}
            reps = []
        else:
            reps = [r["wall_s"] for r in by[name]]
            wall = med(reps)
            # stats of the median rep
            mr = sorted(by[name], key=lambda r: r["wall_s"])[len(by[name]) // 2]
            st = mr["stats"]
        tm = {} if name == "stream" else (mr.get("time") or {})
        rss = [r["time"]["max_rss_kib"] for r in by.get(name, []) if (r.get("time") or {}).get("max_rss_kib") is not None]
        is_sl = name.startswith(("sl-", "ix-"))
        # Each seekless run reports its own walk+locate and sort (--summary): the lookup
        # phase of that very run, cold.
        lookup_s = med([r.get("walk_locate_s") for r in by.get(name, [])]) if is_sl else None
        sort_s = med([r.get("sort_s") for r in by.get(name, [])]) if is_sl else None
        row = {
            "contender": name,
            "label": LABELS.get(name, name),
            "files": nfiles,
            "total_bytes": nbytes,
            "avg_bytes": nbytes / nfiles,
            "lookup_s": lookup_s,
            "sort_s": sort_s,
            "read_s": wall - (lookup_s or 0) - (sort_s or 0),
            "total_s": wall,
            "reps_s": reps,
            # A re-run that reads nothing has no rate.
            "mb_s": None if name.endswith("-rerun") else nbytes / wall / 1e6,
            "gain_s": (dir_s - wall) if dir_s else None,
            "gain_pct": (dir_s - wall) / dir_s * 100 if dir_s else None,
            "ratio": dir_s / wall if dir_s else None,
            "max_outstanding": st.get("max_outstanding"),
            "seeks": st.get("seeks"),
            "requests": st.get("reads"),
            "positioning_ms_per_request": st.get("positioning_ms_per_request"),
            "mean_candidates": st.get("mean_candidates"),
            # GNU time (bench/hdd/run): the median rep's user and system CPU seconds, and
            # the largest max RSS (KiB) of any rep, of the whole command.
            "user_s": tm.get("user_s"),
            "sys_s": tm.get("sys_s"),
            "max_rss_kib": max(rss) if rss else None,
        }
        rows.append(row)
    get = {r["contender"]: r for r in rows}
    sl = get.get("sl-physical")
    targets = []
    if sl:
        def t(name, value, goal, ok):
            targets.append({"target": name, "value": value, "goal": goal, "met": bool(ok)})
        if "dir" in get:
            t("seekless physical vs directory order", sl["ratio"], ">= 8x", sl["ratio"] >= 8)
        if "tar-inode" in get:
            v = get["tar-inode"]["total_s"] / sl["total_s"]
            t("seekless physical vs tar --sort=inode", v, ">= 3x", v >= 3)
        lim = stream["stream_s"] + (sl["lookup_s"] or 0)
        t("seekless wall / (streaming limit + lookup)", sl["total_s"] / lim, "<= 1.15", sl["total_s"] / lim <= 1.15)
        if sl["lookup_s"] is not None:
            v = sl["lookup_s"] / sl["total_s"] * 100
            t("lookup share of seekless total (%)", v, "<= 3 %", v <= 3)
        if "sl-physical-noprefetch" in get:
            v = get["sl-physical-noprefetch"]["total_s"] / sl["total_s"]
            t("physical prefetch vs physical no-prefetch", v, ">= 1.3x (aged)", v >= 1.3)
    corpus = open(a["corpus"]).read().strip() if a.get("corpus") else ""
    lookup_stats = None
    try:
        if lk:
            m = sorted(lk, key=lambda r: r["wall_s"])[len(lk) // 2]["stats"]
            lookup_stats = {k: m.get(k) for k in ("reads", "bytes_read", "seeks", "seek_ms", "rotation_ms",
                                                  "transfer_ms", "max_outstanding", "positioning_ms_per_request")}
            lookup_stats["walk_locate_s"] = med([r.get("walk_locate_s") for r in lk])
            lookup_stats["wall_s"] = med([r["wall_s"] for r in lk])
    except Exception:
        pass
    doc = {"lookup_stats": lookup_stats, "tag": a["tag"], "reps": a.get("reps"), "busy_loops": a.get("busy") == "1", "damon": a.get("damon"),
           "corpus": corpus, "extents": ext, "stream": stream, "rows": rows, "targets": targets}
    json.dump(doc, open(a["json"], "w"), indent=1)

    def f(x, fmt="{:.2f}"):
        return "–" if x is None else fmt.format(x)
    L = [f"### {a['tag']}: {nfiles} files, median of {a.get('reps')} cold runs",
         "",
         f"Corpus: `{corpus}`; files with ≥ 3 extents: {ext['extents_ge3']} ({ext['fraction_ge3'] * 100:.1f} %). "
         f"SCHED_IDLE busy loop per CPU: {'yes' if a.get('busy') == '1' else 'no'}. "
         f"DAMON proactive reclaim: {a.get('damon') or 'not recorded'}. "
         f"Every run starts cold (remount, drop caches, tool binaries reloaded). Lookup and sort are each "
         f"seekless run's own walk + locate and sort (`hash --summary`); read = total − lookup − sort "
         f"(it includes process start and exit). Gain % = time saved vs directory order.",
         "",
         "| contender | files | total MB | avg KiB | lookup s | sort s | read s | total s | MB/s | gain s | gain % | dir/this | max outst. | seeks | pos. ms/req |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        L.append(f"| {r['label']} | {r['files']} | {r['total_bytes'] / 1e6:.1f} | {r['avg_bytes'] / 1024:.1f} | "
                 f"{f(r['lookup_s'], '{:.3f}')} | {f(r['sort_s'], '{:.3f}')} | {f(r['read_s'])} | {f(r['total_s'])} | "
                 f"{f(r['mb_s'], '{:.1f}')} | {f(r['gain_s'])} | {f(r['gain_pct'], '{:.1f}')} | {f(r['ratio'])} | "
                 f"{f(r['max_outstanding'], '{}')} | {f(r['seeks'], '{}')} | {f(r['positioning_ms_per_request'])} |")
    if lookup_stats:
        L += ["", f"Lookup I/O (cold `seekless order`, median rep): {lookup_stats['reads']} reads, "
              f"{(lookup_stats['bytes_read'] or 0) / 1e6:.1f} MB, {lookup_stats['seeks']} seeks, "
              f"max outstanding {lookup_stats['max_outstanding']}, "
              f"walk+locate {f(lookup_stats['walk_locate_s'], '{:.3f}')} s of {f(lookup_stats['wall_s'], '{:.3f}')} s wall."]
    L += ["", "| target | value | goal | met |", "| --- | ---: | --- | --- |"]
    for t in targets:
        L.append(f"| {t['target']} | {t['value']:.2f} | {t['goal']} | {'yes' if t['met'] else '**no**'} |")
    open(a["md"], "w").write("\n".join(L) + "\n")


def seekmap(a):
    """Head position (byte offset of each command) against virtual time since the mark."""
    series = {a["a"]: [], a["b"]: []}
    cur = None
    t0 = None
    size = None
    for line in open(a["trace"]):
        if line.startswith("#"):
            cur = None
            for k in series:
                if f"mark run {k}" in line and line.split("mark run ", 1)[1].split(" virtual_us")[0].strip() == k:
                    cur = k
                    t0 = float(line.rsplit("virtual_us=", 1)[1].split()[0])
            continue
        if cur is None:
            continue
        p = line.strip().split(",")
        if len(p) < 4 or p[3] != "read":
            continue
        series[cur].append(((float(p[0]) - t0) / 1e6, int(p[1]), int(p[2])))
    if not any(series.values()):
        sys.exit("seekmap: no traced reads after the marks")
    offs = [o for s in series.values() for _, o, _ in s]
    lo, hi = min(offs), max(o + n for s in series.values() for _, o, n in s)
    W, H, ml, mr, mt, mb = 900, 300, 70, 20, 40, 40
    cols = {a["a"]: "#c0392b", a["b"]: "#2471a3"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H * 2 + 40}" font-family="sans-serif" font-size="12">',
           f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="14">{a.get("title", "seek map")}</text>']
    for i, (k, s) in enumerate(series.items()):
        y0 = 30 + i * (H + 10)
        tmax = max([t for t, _, _ in s] + [1e-3])
        pw, ph = W - ml - mr, H - mt - mb + 20
        top = y0 + mt - 20
        out.append(f'<rect x="{ml}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>')
        out.append(f'<text x="{ml}" y="{top - 4}">{k.split()[0]}: {len(s)} reads in {tmax:.2f} s (x: time, y: disk offset {lo / 2**20:.0f}–{hi / 2**20:.0f} MiB)</text>')
        for j in range(0, 6):
            tx = ml + pw * j / 5
            out.append(f'<text x="{tx:.1f}" y="{top + ph + 14}" text-anchor="middle">{tmax * j / 5:.1f}s</text>')
        for j in range(0, 5):
            ty = top + ph - ph * j / 4
            out.append(f'<text x="{ml - 4}" y="{ty + 4:.1f}" text-anchor="end">{(lo + (hi - lo) * j / 4) / 2**20:.0f}M</text>')
        pts = []
        for t, o, n in s:
            x = ml + pw * t / tmax
            y = top + ph - ph * (o - lo) / max(1, hi - lo)
            pts.append(f"{x:.1f},{y:.1f}")
        if pts:
            out.append(f'<polyline fill="none" stroke="{cols[k]}" stroke-width="0.5" stroke-opacity="0.6" points="{" ".join(pts)}"/>')
            for p in pts:
                out.append(f'<circle cx="{p.split(",")[0]}" cy="{p.split(",")[1]}" r="1.2" fill="{cols[k]}"/>')
    out.append("</svg>")
    open(a["svg"], "w").write("\n".join(out) + "\n")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    a = args(sys.argv[2:])
    {"table": table, "seekmap": seekmap}[sys.argv[1]](a)


if __name__ == "__main__":
    main()
