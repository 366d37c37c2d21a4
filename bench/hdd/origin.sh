#!/usr/bin/env bash
# The origin's benchmark at the origin's size on the emulated 7200 rpm disk: 87,418 files,
# 12.46 GiB (mean 149 KiB, its shape: DCIM/1xxCANON folders of 500), written shuffled on
# ext4; one cold run each of
#
#   dir          filesystem (directory) order, one file at a time: find | xargs cat
#   origin       the origin's method: first-extent order, one file at a time, no window
#                (seekless hash --no-prefetch -j 1)
#   tar-inode    tar --sort=inode -cf - | cat
#   seekless     seekless hash --algo blake3 (physical order, the queue kept full)
#
# and how the lookup (walk + locate), the sort and peak memory grow with the number of
# files: cold `seekless order` of the first 6, 20, 60 and all 175 folders (3,000, 10,000,
# 30,000 and 87,418 files).
#
#   sudo bench/hdd/origin.sh [--files N] [--size 16G] [--seed S]
#
# The backing image lives in /dev/shm (RAM): 12.46 GiB of files need a 16 GiB image, so
# the machine needs ~20 GiB of memory. Writes bench/results/origin-scale.{md,json}.
# Environment: SEEKLESS, HDDSIM (binaries; default target/release), STACK_DIR.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
SEEKLESS=${SEEKLESS:-$TARGET/release/seekless}
export HDDSIM=${HDDSIM:-$TARGET/release/hddsim}
export STACK_DIR=${STACK_DIR:-/dev/shm/seekless-hdd-origin}
STACK=$HERE/stack.sh
OUT=${OUT:-$REPO/bench/results}
FILES=87418 SIZE=16G SEED=1
while [[ $# -gt 0 ]]; do
    case $1 in
        --files) FILES=$2; shift 2 ;;
        --size) SIZE=$2; shift 2 ;;
        --seed) SEED=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "origin.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[[ $(id -u) -eq 0 ]] || { echo "origin.sh: needs root (loop device, mounts, FUSE, drop_caches)" >&2; exit 1; }
for b in "$SEEKLESS" "$HDDSIM"; do
    [[ -x $b ]] || { echo "origin.sh: $b missing; cargo build --release -p seekless -p hddsim" >&2; exit 1; }
done
TIME=/usr/bin/time
[[ -x $TIME ]] || { echo "origin.sh: needs GNU time (apt-get install time)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/seekless-origin.XXXXXX)
BUSY_PIDS=()
cleanup() {
    local rc=$?
    cd /
    for p in "${BUSY_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    "$STACK" down || true
    rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
cold() {
    cd /
    "$STACK" cold
    "$SEEKLESS" --version > /dev/null
    find --version > /dev/null; xargs --version > /dev/null; cat --version > /dev/null
    tar --version > /dev/null; $TIME -o /dev/null true
    cd "$MNT"
}

echo "== stack up ($SIZE backing image in $STACK_DIR)" >&2
eval "$("$STACK" up --fs ext4 --size "$SIZE" --keep-model-off | sed -n 's/^\(loop\|mnt\)=/\1=/p')"
MNT=$mnt
echo "== corpus: $FILES files, shuffled, seed $SEED (model off)" >&2
python3 "$HERE/corpus.py" gen --layout shuffled --files "$FILES" --seed "$SEED" "$MNT/corpus" 2> "$WORK/corpus.txt" ||
    { cat "$WORK/corpus.txt" >&2; exit 1; }
cat "$WORK/corpus.txt" >&2
sync
"$STACK" model on
# Keep the CPUs from sleeping between requests, as bench/hdd/run does (idle priority).
for _ in $(seq "$(nproc)"); do chrt -i 0 bash -c 'while :; do :; done' & BUSY_PIDS+=($!); done

RUNS=$WORK/runs.jsonl
: > "$RUNS"
# One timed, cold run: name, command (in $MNT).
timed() {
    local name=$1 cmd=$2 t0 t1
    cold
    t0=$(now)
    $TIME -f '%e %U %S %M' -o "$WORK/time.txt" bash -o pipefail -c "$cmd" 2> "$WORK/stderr.txt" ||
        { cat "$WORK/stderr.txt" >&2; echo "origin.sh: $name failed" >&2; exit 1; }
    t1=$(now)
    grep -v '^seekless: ' "$WORK/stderr.txt" >&2 || true
    python3 - "$name" "$t0" "$t1" "$WORK/time.txt" "$WORK/stderr.txt" >> "$RUNS" <<'PY'
import json, re, sys
name, t0, t1, tf, ef = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
e, u, s, m = open(tf).read().split()[-4:]
err = open(ef, errors="replace").read()
row = {"name": name, "wall_s": t1 - t0, "user_s": float(u), "sys_s": float(s), "max_rss_kib": int(m)}
w = re.search(r"walk\+locate ([0-9.]+) s", err)
so = re.search(r"sort ([0-9.]+) s", err)
rd = re.search(r"read \d+ files, .* in ([0-9.]+) s", err)
if w: row["lookup_s"] = float(w.group(1))
if so: row["sort_s"] = float(so.group(1))
if rd: row["read_s"] = float(rd.group(1))
print(json.dumps(row))
PY
    echo "   $name: $(tail -1 "$RUNS")" >&2
}

SL="$SEEKLESS hash --summary --algo blake3"
timed dir "find corpus -type f -print0 | xargs -0 cat > /dev/null"
timed origin "$SL --no-prefetch -j 1 corpus > /dev/null"
timed tar-inode "tar --sort=inode -cf - corpus | cat > /dev/null"
timed seekless "$SL corpus > /dev/null"

# Growth of the lookup: the first k folders, cold.
mapfile -t FOLDERS < <(cd "$MNT" && ls -d corpus/DCIM/*CANON | sort)
for k in 6 20 60 ${#FOLDERS[@]}; do
    [[ $k -le ${#FOLDERS[@]} ]] || continue
    timed "lookup-$k" "$SEEKLESS order --summary ${FOLDERS[*]:0:$k} > /dev/null"
    # How many files that was (after the timed run: this warms the cache).
    n=$(cd "$MNT" && find "${FOLDERS[@]:0:$k}" -type f | wc -l)
    sed -i "\$s/\"name\": \"lookup-$k\"/\"name\": \"lookup-$k\", \"files\": $n/" "$RUNS"
done

for p in "${BUSY_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
BUSY_PIDS=()
mkdir -p "$OUT"
python3 - "$RUNS" "$WORK/corpus.txt" "$OUT/origin-scale.md" "$OUT/origin-scale.json" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
by = {r["name"]: r for r in runs}
corpus = open(sys.argv[2]).read().strip()
md = []
d, o, t, s = by["dir"], by["origin"], by["tar-inode"], by["seekless"]
md.append(f"Corpus: {corpus}\n")
md.append("The origin's table, side by side (origin: its own published figures on its disk; "
          "here: one cold run each on the emulated 7200 rpm disk):\n")
md.append("| | origin (published) | origin's method here | seekless here |")
md.append("|---|---:|---:|---:|")
md.append(f"| filesystem order | 506 s | {d['wall_s']:.1f} s | {d['wall_s']:.1f} s |")
md.append(f"| lookup (walk + locate) | 12 s | {o.get('lookup_s', 0):.2f} s | {s.get('lookup_s', 0):.2f} s |")
md.append(f"| sort | 54 ms | {o.get('sort_s', 0) * 1000:.0f} ms | {s.get('sort_s', 0) * 1000:.0f} ms |")
md.append(f"| sorted read | 347 s | {o.get('read_s', 0):.1f} s | {s.get('read_s', 0):.1f} s |")
md.append(f"| total | 359 s | {o['wall_s']:.1f} s | {s['wall_s']:.1f} s |")
md.append(f"| ratio (filesystem order ÷ total) | 1.42× | {d['wall_s'] / o['wall_s']:.2f}× | {d['wall_s'] / s['wall_s']:.2f}× |")
md.append("")
md.append(f"`tar --sort=inode -cf - | cat`: {t['wall_s']:.1f} s "
          f"(seekless is {t['wall_s'] / s['wall_s']:.2f}× faster); peak RSS of seekless hash: {s['max_rss_kib'] / 1024:.0f} MiB.\n")
md.append("Lookup growth (cold `seekless order` of the first k folders of 500 files):\n")
md.append("| files | walk + locate | sort | peak RSS |")
md.append("|---:|---:|---:|---:|")
for r in runs:
    if r["name"].startswith("lookup-"):
        n = r.get("files", 0)
        md.append(f"| {n:,} | {r.get('lookup_s', 0):.2f} s | {r.get('sort_s', 0) * 1000:.1f} ms | {r['max_rss_kib'] / 1024:.0f} MiB |")
open(sys.argv[3], "w").write("\n".join(md) + "\n")
json.dump(runs, open(sys.argv[4], "w"), indent=1)
print("\n".join(md))
PY
