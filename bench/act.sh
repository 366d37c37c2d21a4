#!/usr/bin/env bash
# Acting on exact duplicates (issue 33.6): `seekless dupes --act move` against fclones and
# rmlint, side by side in one run, warm and on the emulated 7200 rpm disk.
#
#   cargo build --release -p seekless -p hddsim
#   cargo install fclones --root tools            # or FCLONES=/path/to/fclones; rmlint: apt-get install rmlint
#   sudo REPS=3 bench/act.sh                      # warm (100,000 duplicates) and emulated disk (3,000)
#
# Corpus (seeded: bench/act-gen.c; made once, kept in BASE): ORIGINALS files of 4-64 KiB
# (uniform, each its own random bytes after a JPEG start marker, named .jpg so that `index`
# catalogs them), in folders of 100, and two byte-identical copies of each (`cp -a`, so the
# same mtime) deeper and under longer paths, so that every keeper rule used below picks the
# original:
#
#   TREE/photos/dNNN/IMG_NNNNNN.jpg                the originals (kept)
#   TREE/backup/2023/dNNN/IMG_NNNNNN.jpg           copy 1
#   TREE/backup/old/disk2/dNNN/IMG_NNNNNN.jpg      copy 2
#
# Warm: an ext4 filesystem on a loop device over an image in BASE (tmpfs, /dev/shm) holds
# the originals (`pristine/`), the tree, the folder files are moved to, the catalog and the
# journals (all on that one filesystem: a move is a rename, and the journal's and catalog's
# fsyncs are ext4's). Before every contender the tree is made again from the originals
# (`cp -a` ×3, then `sync`; untimed), so every contender starts from the same tree with its
# files in the page cache.
#
#   contender        command (timed by GNU time: wall, user+sys, peak RSS of the largest
#                    process of the tree)
#   seekless index   seekless index --db DB TREE                         (a fresh catalog)
#   seekless act     seekless dupes --db DB --similar 0 --act move --to MOVED --keep shortest-path --journal J
#   fclones group    fclones group TREE > groups.txt
#   fclones move     fclones move --priority most-nested MOVED < groups.txt
#   rmlint           rmlint -T df -S d TREE        (writes rmlint.sh and rmlint.json; -S d: keep the least deep path)
#   rmlint.sh        sh rmlint.sh -d                (removes the duplicates: rmlint removes, it does not move)
#   fclones remove   fclones remove --priority most-nested < groups.txt   (for information; its groups made untimed)
#
# fclones' --priority orders the files to *remove* (fclones move --help: "priority for files
# to be removed"): most-nested moves the deepest copies and keeps the least nested file,
# the original here (least-nested would move the originals and keep the deepest copy;
# FCLONES_PRIORITY=least-nested shows it, its check then says WRONG).
#
# What each checks before it acts: seekless reads every duplicate and its keeper again
# (BLAKE3, physical order), compares device, inode, size, mtime and hash with the catalog,
# journals every move (fsync) and flushes both parent directories; fclones move checks
# that each file is a regular file of the group's length, modified before the groups file
# was written, then renames (no read, no fsync); rmlint.sh -d checks that the duplicate and
# its original exist (-p would compare their bytes, one rmlint process per file), then
# `rm -rf`. Each contender's result is checked: the files left in the tree must be the
# originals, and the files moved away (or removed) the copies, with byte counts; a
# contender that does something else is reported as such.
#
# Emulated disk (HDD=1): one bench/hdd/stack.sh stack (4 GiB, ext4, --fs-seed 1) with
# HDD_ORIGINALS originals and their copies written with the model off, catalogued once
# (model off; the catalog on tmpfs). Then REPS rounds, each contender after `stack.sh cold`
# (unmount, drop caches, mount; every program run once with --version; hddsim's counters
# reset): seekless index (fresh catalog), seekless act (a copy of the catalog made before),
# fclones group, then fclones move right after it (not cold: one user session), then `sync -f`
# (timed apart: what making its renames durable costs, which seekless does per file). Moved files
# are put back between runs by hard-linking them back and removing the moved names (model
# off), so every run sees the same inodes on the same blocks. DAMON paused and SCHED_IDLE
# busy loops, as bench/hdd/run; MB read and seeks from hddsim's stats.
#
#   REPS=N (3); HDD_REPS=N (REPS: rounds on the emulated disk); ORIGINALS=N (50000: 100,000 duplicates); HDD_ORIGINALS=N (1500: 3,000
#   duplicates); BASE=DIR (/dev/shm/seekless-bench-act: the image with the originals,
#   ~2 GB of tmpfs kept between runs; delete it to get the memory back); HDD=0: warm only;
#   WARM=0: emulated disk only; BUSY=0: no busy loops; REMOVE=0: no `fclones remove`;
#   BIN, FCLONES, RMLINT: the programs (default: a release build of this tree, fclones on
#   the PATH or tools/bin/fclones, rmlint on the PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-3}
base=${BASE:-/dev/shm/seekless-bench-act}
originals=${ORIGINALS:-50000}
hdd_originals=${HDD_ORIGINALS:-1500}
hdd=${HDD:-1}
hreps=${HDD_REPS:-$reps}
warm=${WARM:-1}
remove=${REMOVE:-1}
fprio=${FCLONES_PRIORITY:-most-nested}
. bench/lib.sh
need() { command -v "$1" > /dev/null || { echo "needs $1 ($2)" >&2; exit 1; }; }
need sqlite3 "apt-get install sqlite3"
need bc "apt-get install bc"
need cc "apt-get install gcc"
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "needs root (loop devices, mount, drop_caches)" >&2; exit 1; }
fclones=${FCLONES:-$(command -v fclones || echo "$PWD/tools/bin/fclones")}
[ -x "$fclones" ] || { echo "needs fclones: cargo install fclones --root $PWD/tools (or FCLONES=...)" >&2; exit 1; }
rmlint=${RMLINT:-$(command -v rmlint || true)}
[ -n "$rmlint" ] || echo "-- rmlint not installed (apt-get install rmlint): left out" >&2
bin=${BIN:-$(seekless_bin)}
hddsim=${HDDSIM:-${CARGO_TARGET_DIR:-$PWD/target}/release/hddsim}
if [ "$hdd" = 1 ] && [ ! -x "$hddsim" ]; then
    echo "needs $hddsim: cargo build --release -p hddsim" >&2; exit 1
fi

load() { cut -d' ' -f1-3 /proc/loadavg; }
work=$(mktemp -d /dev/shm/seekless-act.XXXXXX)
gen=$work/act-gen
cc -O2 -o "$gen" bench/act-gen.c

export STACK_DIR=/dev/shm/seekless-act-hdd HDDSIM=$hddsim
stack=$PWD/bench/hdd/stack.sh
loop="" mnt=$base/mnt stack_up=0
damon_paused=()
busy=()
cleanup() {
    local rc=$?
    cd /work 2> /dev/null || cd /
    undo_busy_and_damon
    if [ "$stack_up" = 1 ]; then "$stack" down || true; fi
    if mountpoint -q "$mnt" 2> /dev/null; then
        # Only the scratch goes; the originals stay (BASE is the cache).
        rm -rf "$mnt/tree" "$mnt/moved" "$mnt/work"
        fstrim "$mnt" 2> /dev/null || true
        umount "$mnt" || echo "could not unmount $mnt" >&2
    fi
    if [ -n "$loop" ]; then losetup -d "$loop" || echo "could not detach $loop" >&2; fi
    rm -rf "$work"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- checking a result ---------------------------------------------------------------

# "FILES BYTES" under a directory (0 0 if it is not there).
count() {
    if [ -d "$1" ]; then
        find "$1" -type f -printf '%s\n' | awk '{n++; b += $1} END {printf "%d %.0f\n", n, b}'
    else
        echo "0 0"
    fi
}

# The names (relative to the tree) of the originals and of the copies of tree T.
expected_lists() {
    local t=$1 out=$2
    (cd "$t/photos" && find . -type f -printf 'photos/%P\n') | sort > "$out.kept"
    sed -e 's|^photos/|backup/2023/|' "$out.kept" > "$out.gone"
    sed -e 's|^photos/|backup/old/disk2/|' "$out.kept" >> "$out.gone"
    LC_ALL=C sort -o "$out.gone" "$out.gone"
    LC_ALL=C sort -o "$out.kept" "$out.kept"
}

# Checks the tree T and the move folder M after a contender (MODE move or remove) against
# the lists at L: prints "ok: ..." or "WRONG: ...".
verdict() {
    local t=$1 m=$2 mode=$3 l=$4 kn kb gn gb why=""
    (cd "$t" && find . -type f -printf '%P\n') | LC_ALL=C sort > "$work/left"
    read -r kn kb < <(count "$t")
    if ! cmp -s "$work/left" "$l.kept"; then
        why+=" tree: $(comm -23 "$work/left" "$l.kept" | wc -l) files left that should have gone, $(comm -13 "$work/left" "$l.kept" | wc -l) originals missing;"
    fi
    if [ "$mode" = move ]; then
        read -r gn gb < <(count "$m")
        (cd "$m${t}" 2> /dev/null && find . -type f -printf '%P\n') | LC_ALL=C sort > "$work/moved"
        if ! cmp -s "$work/moved" "$l.gone"; then
            why+=" moved: $(comm -23 "$work/moved" "$l.gone" | wc -l) unexpected, $(comm -13 "$work/moved" "$l.gone" | wc -l) copies not moved (or not at MOVED/<absolute path>);"
        fi
        [ "$((kn + gn))" -eq "$(($(wc -l < "$l.kept") + $(wc -l < "$l.gone")))" ] || why+=" files lost: $kn left + $gn moved;"
        [ "$((kb + gb))" = "$(cat "$l.bytes")" ] || why+=" bytes: $kb left + $gb moved, expected $(cat "$l.bytes");"
    else
        gn=$(($(wc -l < "$l.kept") + $(wc -l < "$l.gone") - kn))
        gb=$(($(cat "$l.bytes") - kb))
    fi
    if [ -z "$why" ]; then
        echo "ok: $kn left ($kb B), $gn ${mode}d ($gb B)"
    else
        echo "WRONG: $kn left ($kb B), $gn ${mode}d ($gb B):$why"
    fi
}

# --- measuring -----------------------------------------------------------------------

# "WALL CPU MAXRSS_KIB" of a shell command line (stdout to OUT), GNU time of the whole tree.
timed() {
    local out=$2
    /usr/bin/time -f '%e %U %S %M' -o "$work/time" bash -o pipefail -c "$1" > "$out" 2> "$work/stderr" || {
        echo "-- failed: $1" >&2; tail -5 "$work/stderr" >&2; tail -1 "$work/time" >&2
    }
    tail -1 "$work/time" | awk '{printf "%s %.2f %d\n", $1, $2 + $3, $4}'
}

declare -A walls=() cpus=() rsss=() mbs=() seekss=() writess=() checks=()
# Runs the shell command line CMD (stdout to OUT) as one run of NAME: wall, CPU, peak RSS.
run() {
    local name=$1 wall cpu rss
    read -r wall cpu rss < <(timed "$2" "$3")
    walls[$name]+="$wall " cpus[$name]+="$cpu " rsss[$name]+="$rss "
    echo "   $name: ${wall} s wall, ${cpu} s CPU, $((rss / 1024)) MiB" >&2
}
med() { printf '%s\n' $1 | median; }

# The table of NAMES (and sums: "a+b" as a name) for SETTING.
table() {
    local setting=$1; shift
    local name parts p w c r
    printf '| %s | wall s | CPU s | peak RSS MiB |%s\n' contender "$([ "$setting" = hdd ] && echo ' MB read | seeks | writes |')"
    printf '|---|---:|---:|---:|%s\n' "$([ "$setting" = hdd ] && echo '---:|---:|---:|')"
    for name in "$@"; do
        IFS=+ read -r -a parts <<< "$name"
        w=0 c=0 r=0
        for p in "${parts[@]}"; do
            w=$(echo "$w + $(med "${walls[$p]}")" | bc -l)
            c=$(echo "$c + $(med "${cpus[$p]}")" | bc -l)
            r=$(( $(med "${rsss[$p]}") > r ? $(med "${rsss[$p]}") : r ))
        done
        tot_wall[$name]=$w tot_cpu[$name]=$c tot_rss[$name]=$r
        if [ "$setting" = hdd ]; then
            local mb=0 sk=0 wr=0
            for p in "${parts[@]}"; do
                mb=$((mb + $(med "${mbs[$p]}"))) sk=$((sk + $(med "${seekss[$p]}"))) wr=$((wr + $(med "${writess[$p]}")))
            done
            tot_mb[$name]=$mb tot_seeks[$name]=$sk
            printf '| %s | %.2f | %.2f | %.0f | %d | %d | %d |\n' "$name" "$w" "$c" "$(echo "$r / 1024" | bc -l)" "$mb" "$sk" "$wr"
        else
            printf '| %s | %.2f | %.2f | %.0f |\n' "$name" "$w" "$c" "$(echo "$r / 1024" | bc -l)"
        fi
    done
}
declare -A tot_wall=() tot_cpu=() tot_rss=() tot_mb=() tot_seeks=()
ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }

echo "# bench/act.sh (REPS=$reps ORIGINALS=$originals HDD=$hdd HDD_ORIGINALS=$hdd_originals), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r)"
echo "# seekless: $bin ($("$bin" --version 2>&1 | head -1)); git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "# $("$fclones" --version 2>&1 | head -1); rmlint: $([ -n "$rmlint" ] && "$rmlint" --version 2>&1 | head -1 | cut -d" " -f2 || echo not installed)"
echo "# load average at start: $(load)"
echo

# --- warm: 100,000 duplicates on ext4 over tmpfs --------------------------------------

if [ "$warm" = 1 ]; then
    img=$base/fs.img
    mkdir -p "$base" "$mnt"
    if [ ! -f "$base/.complete-$originals" ]; then
        echo "-- making the originals: $originals files in $img" >&2
        rm -f "$img" "$base"/.complete-*
        truncate -s $((originals * 40 * 4 + 2 * 1024 * 1024))K "$img"
        mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img"
        fresh=1
    else
        fresh=0
    fi
    # Direct I/O where the kernel lets the loop device do it on tmpfs (no second copy of
    # every block in the page cache).
    loop=$(losetup -f --show --direct-io=on "$img" 2> /dev/null || losetup -f --show "$img")
    mount -o noatime "$loop" "$mnt"
    if [ "$fresh" = 1 ]; then
        mkdir -p "$mnt/pristine"
        "$gen" "$mnt/pristine/photos" "$originals" 1 100
        sync
        touch "$base/.complete-$originals"
    fi
    tree=$mnt/tree moved=$mnt/moved w=$mnt/work
    mkdir -p "$w"
    restore() {
        rm -rf "$tree" "$moved" "$w"/*
        mkdir -p "$tree/backup/old" "$moved"
        cp -a "$mnt/pristine/photos" "$tree/photos"
        cp -a "$mnt/pristine/photos" "$tree/backup/2023"
        cp -a "$mnt/pristine/photos" "$tree/backup/old/disk2"
        sync
    }
    restore
    expected_lists "$tree" "$work/lists"
    count "$tree" | cut -d' ' -f2 > "$work/lists.bytes"
    read -r n_all b_all < <(count "$tree")
    echo "== warm: $n_all files ($((b_all / 1048576)) MiB): $originals originals, $((n_all - originals)) duplicates; ext4 on $loop ($(cat /sys/block/${loop#/dev/}/loop/dio 2> /dev/null | sed 's|1|direct I/O|; s|0|buffered|') over $img); $reps interleaved rounds (median)"
    echo "load average before: $(load)"
    for r in $(seq "$reps"); do
        echo "-- round $r" >&2
        [ "$r" = 1 ] || restore
        rm -f "$w"/db*
        run sl-index "$bin index --db $w/db $tree" /dev/null
        n=$(sqlite3 "$w/db" 'select count(*) from images where blake3 is not null')
        [ "$n" = "$n_all" ] || echo "-- WRONG: the catalog has $n rows with a blake3, not $n_all" >&2
        run sl-act "$bin dupes --db $w/db --similar 0 --act move --to $moved --keep shortest-path --journal $w/journal" "$work/sl-act.out"
        checks[sl]=$(verdict "$tree" "$moved" move "$work/lists")
        echo "   check: ${checks[sl]}; $(tail -1 "$work/stderr")" >&2

        restore
        run fclones-group "cd $w && $fclones group $tree" "$w/groups.txt"
        run fclones-move "cd $w && $fclones move --priority $fprio $moved < $w/groups.txt" /dev/null
        checks[fclones]=$(verdict "$tree" "$moved" move "$work/lists")
        echo "   check: ${checks[fclones]}" >&2

        if [ -n "$rmlint" ]; then
            restore
            run rmlint "cd $w && $rmlint -T df -S d $tree" /dev/null
            run rmlint.sh "cd $w && sh $w/rmlint.sh -d" /dev/null
            checks[rmlint]=$(verdict "$tree" "$moved" remove "$work/lists")
            echo "   check: ${checks[rmlint]}" >&2
        fi
        if [ "$remove" = 1 ]; then
            restore
            (cd "$w" && "$fclones" group "$tree" > "$w/groups.txt" 2> /dev/null)
            run fclones-remove "cd $w && $fclones remove --priority $fprio < $w/groups.txt" /dev/null
            checks[fclones-remove]=$(verdict "$tree" "$moved" remove "$work/lists")
            echo "   check: ${checks[fclones-remove]}" >&2
        fi
    done
    echo "load average after:  $(load)"
    names=(sl-index sl-act sl-index+sl-act fclones-group fclones-move fclones-group+fclones-move)
    [ -z "$rmlint" ] || names+=(rmlint rmlint.sh rmlint+rmlint.sh)
    [ "$remove" = 0 ] || names+=(fclones-group+fclones-remove)
    table warm "${names[@]}"
    echo
    echo "checks (last round): seekless ${checks[sl]}; fclones ${checks[fclones]}${rmlint:+; rmlint ${checks[rmlint]}}${checks[fclones-remove]:+; fclones remove ${checks[fclones-remove]}}"
    echo
    echo "| warm ratio | wall | CPU | peak RSS |"
    echo "|---|---:|---:|---:|"
    for pair in "sl-act fclones-move" "sl-index+sl-act fclones-group+fclones-move" \
                ${rmlint:+"sl-index+sl-act rmlint+rmlint.sh"}; do
        read -r a b <<< "$pair"
        echo "| $a / $b | $(ratio "${tot_wall[$a]}" "${tot_wall[$b]}") | $(ratio "${tot_cpu[$a]}" "${tot_cpu[$b]}") | $(ratio "${tot_rss[$a]}" "${tot_rss[$b]}") |"
    done
    echo
    rm -rf "$tree" "$moved" "$w"
    fstrim "$mnt" 2> /dev/null || true
    umount "$mnt"
    losetup -d "$loop"
    loop=""
fi

# --- the emulated disk -----------------------------------------------------------------

if [ "$hdd" = 1 ]; then
    echo "-- emulated disk: stack up, tree written with the model off" >&2
    stack_up=1
    eval "$("$stack" up --fs ext4 --fs-seed 1 --size 4G --keep-model-off | sed -n 's/^mnt=/hmnt=/p')"
    htree=$hmnt/tree hmoved=$hmnt/moved
    mkdir -p "$htree/backup/old" "$hmoved"
    "$gen" "$htree/photos" "$hdd_originals" 1 100
    cp -a "$htree/photos" "$htree/backup/2023"
    cp -a "$htree/photos" "$htree/backup/old/disk2"
    sync
    expected_lists "$htree" "$work/hlists"
    count "$htree" | cut -d' ' -f2 > "$work/hlists.bytes"
    read -r hn hb < <(count "$htree")
    "$bin" index --db "$work/hdd.db" "$htree" 2> /dev/null
    # Puts moved files back (same inodes, same blocks): links them back, removes the moved names.
    put_back() {
        if [ -d "$hmoved$htree/backup" ]; then
            cp -al "$hmoved$htree/backup" "$htree/"
        fi
        rm -rf "$hmoved"; mkdir -p "$hmoved"
        sync
        local now
        now=$(count "$htree")
        [ "$now" = "$hn $hb" ] || { echo "-- put back: the tree has $now (files bytes), not $hn $hb" >&2; exit 1; }
    }
    disk_stats() {
        "$stack" stats | awk -F'[:,]' '/"bytes_read"/ {b = $2} /"seeks"/ {s = $2} /"writes"/ {w = $2} END {printf "%.0f %d %d\n", b / 1e6, s, w}'
    }
    cold() {
        "$stack" cold
        "$bin" --version > /dev/null; "$fclones" --version > /dev/null
        "$stack" reset
    }
    hstat() {
        local mb seeks writes
        read -r mb seeks writes < <(disk_stats)
        mbs[$1]+="$mb " seekss[$1]+="$seeks " writess[$1]+="$writes "
        echo "   $1: $mb MB read, $seeks seeks, $writes writes" >&2
    }
    "$stack" model on
    pause_damon_and_busy "${BUSY:-1}"
    echo "== emulated disk: $hn files ($((hb / 1048576)) MiB): $hdd_originals originals, $((hn - hdd_originals)) duplicates; hddsim 4 GiB, ext4; catalog on tmpfs; DAMON: ${damon_paused[*]:+paused (${damon_paused[*]})}${damon_paused[*]:-none on}; busy loops: ${BUSY:-1}; $hreps interleaved rounds (median)"
    echo "load average before: $(load)"
    for r in $(seq "$hreps"); do
        echo "-- round $r (emulated disk)" >&2
        rm -f "$work"/h.db*
        cold
        run hdd-sl-index "$bin index --db $work/h.db $htree" /dev/null
        hstat hdd-sl-index

        rm -f "$work"/a.db* "$work/h.journal"
        cp "$work/hdd.db" "$work/a.db"
        cold
        run hdd-sl-act "$bin dupes --db $work/a.db --similar 0 --act move --to $hmoved --keep shortest-path --journal $work/h.journal" /dev/null
        hstat hdd-sl-act
        checks[hdd-sl]=$(verdict "$htree" "$hmoved" move "$work/hlists")
        echo "   check: ${checks[hdd-sl]}; $(tail -1 "$work/stderr")" >&2
        "$stack" model off; put_back; "$stack" model on

        cold
        run hdd-fclones-group "cd $work && $fclones group $htree" "$work/hgroups.txt"
        hstat hdd-fclones-group
        "$stack" reset
        run hdd-fclones-move "cd $work && $fclones move --priority $fprio $hmoved < $work/hgroups.txt" /dev/null
        hstat hdd-fclones-move
        "$stack" reset
        run hdd-fclones-sync "sync -f $hmnt" /dev/null
        hstat hdd-fclones-sync
        checks[hdd-fclones]=$(verdict "$htree" "$hmoved" move "$work/hlists")
        echo "   check: ${checks[hdd-fclones]}" >&2
        "$stack" model off; put_back; "$stack" model on
    done
    echo "load average after:  $(load)"
    table hdd hdd-sl-index hdd-sl-act hdd-sl-index+hdd-sl-act hdd-fclones-group hdd-fclones-move hdd-fclones-sync hdd-fclones-group+hdd-fclones-move hdd-fclones-group+hdd-fclones-move+hdd-fclones-sync
    echo
    echo "checks (last round): seekless ${checks[hdd-sl]}; fclones ${checks[hdd-fclones]}"
    echo
    echo "| emulated disk ratio | wall | MB read | seeks |"
    echo "|---|---:|---:|---:|"
    for pair in "hdd-sl-act hdd-fclones-group+hdd-fclones-move" "hdd-sl-act hdd-fclones-group+hdd-fclones-move+hdd-fclones-sync" "hdd-sl-index+hdd-sl-act hdd-fclones-group+hdd-fclones-move"; do
        read -r a b <<< "$pair"
        echo "| $a / $b | $(ratio "${tot_wall[$a]}" "${tot_wall[$b]}") | $(ratio "${tot_mb[$a]}" "${tot_mb[$b]}") | $(ratio "${tot_seeks[$a]}" "${tot_seeks[$b]}") |"
    done
fi
echo
echo "# load average at end: $(load); $(date -u '+%Y-%m-%d %H:%M UTC')"
