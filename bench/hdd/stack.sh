#!/usr/bin/env bash
# Emulated-HDD stack: hddsim (FUSE, disk model) -> loop device -> filesystem.
#
#   stack.sh up [--fs ext4|xfs|btrfs] [--size 4G] [--fs-seed S] [--keep-model-off] [hddsim args...]
#   stack.sh cold          # umount, sync, drop caches, mount again
#   stack.sh down          # undo everything `up` did; safe to repeat
#   stack.sh stats         # JSON stats from hddsim's control file
#   stack.sh model on|off  # switch the disk model (off = no delays)
#   stack.sh reset         # zero hddsim's stats
#   stack.sh sched sptf|fcfs
#   stack.sh mark LABEL    # separator line in hddsim's --trace file
#   stack.sh env           # print STACK_DIR, LOOP, MNT, FUSE_MNT, PID as shell assignments
#
# State lives in $STACK_DIR (default /dev/shm/seekless-hdd): the backing image, the FUSE
# mountpoint, the filesystem mountpoint ($STACK_DIR/mnt), and the recorded hddsim PID and
# loop device. `down` touches only what is recorded there. Use from a script as:
#
#   trap 'bench/hdd/stack.sh down' EXIT
#   bench/hdd/stack.sh up --fs ext4 --size 4G
#
# The model is off while mkfs runs and on when `up` returns (unless --keep-model-off).
#
# Reproducible layout: mkfs gets a UUID (and on ext4 a directory hash seed) derived from
# --fs-seed (default 1), so the same corpus lands on the same blocks every time. ext4 picks
# the block group of a top-level directory by hashing its name with that seed, and its
# hash order is directory order, so with a random seed directory order's time varied by
# a third between runs of one corpus. `--fs-seed random` lets mkfs choose.
#
# ext4 is mounted with no_prefetch_block_bitmaps: the benchmark remounts before every
# run, and the block-bitmap prefetch a mount starts in the background would otherwise
# land in the middle of the timed run (a few seeks of 10-20 ms), which a filesystem that
# stays mounted does not do.
set -euo pipefail

STACK_DIR=${STACK_DIR:-/dev/shm/seekless-hdd}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
HDDSIM_TARGET=${HDDSIM_TARGET:-${CARGO_TARGET_DIR:-$REPO/target}}
HDDSIM=${HDDSIM:-$HDDSIM_TARGET/release/hddsim}
READ_AHEAD_KB=${READ_AHEAD_KB:-128}

FUSE_MNT=$STACK_DIR/fuse
MNT=$STACK_DIR/mnt
IMAGE=$STACK_DIR/backing.img

die() { echo "stack.sh: $*" >&2; exit 1; }
log() { echo "stack.sh: $*" >&2; }

need_root() { [[ $(id -u) -eq 0 ]] || die "must run as root (loop devices, mount, drop_caches)"; }

state() { [[ -f $STACK_DIR/$1 ]] && cat "$STACK_DIR/$1" || true; }

control() {
    [[ -e $FUSE_MNT/control ]] || die "no hddsim control file at $FUSE_MNT (is the stack up?)"
    printf '%s\n' "$*" > "$FUSE_MNT/control"
}

# The loop device's queue settings: the kernel resets read_ahead_kb when rotational or
# max_sectors_kb is written and at mkfs, so set those first, then read_ahead_kb, after
# every mount. max_sectors_kb outlives a detach: a limit someone set on this loop device
# before would otherwise cap our requests (and what one readahead(2) call reads).
tune_loop() {
    local loop=$1 q=/sys/block/${1#/dev/}/queue
    echo 1 > "$q/rotational"
    cat "$q/max_hw_sectors_kb" > "$q/max_sectors_kb"
    echo "$READ_AHEAD_KB" > "$q/read_ahead_kb"
}

mount_fs() {
    local loop fs
    loop=$(state loop); fs=$(state fs)
    mkdir -p "$MNT"
    local opts=noatime
    [[ $fs == ext4 ]] && opts+=,no_prefetch_block_bitmaps
    mount -t "$fs" -o "$opts" "$loop" "$MNT"
    tune_loop "$loop"
}

# A UUID that depends only on the seed and the purpose (uuid or hash).
fs_uuid() {
    local h
    h=$(printf 'seekless-hdd %s %s' "$1" "$2" | sha256sum | cut -c1-32)
    echo "${h:0:8}-${h:8:4}-4${h:13:3}-8${h:17:3}-${h:20:12}"
}

is_mounted() { mountpoint -q "$1" 2>/dev/null; }

cmd_up() {
    need_root
    local fs=ext4 size=4G keep_off=0 fs_seed=1
    local -a sim_args=()
    while [[ $# -gt 0 ]]; do
        case $1 in
            --fs) fs=$2; shift 2 ;;
            --fs=*) fs=${1#*=}; shift ;;
            --size) size=$2; shift 2 ;;
            --size=*) size=${1#*=}; shift ;;
            --fs-seed) fs_seed=$2; shift 2 ;;
            --fs-seed=*) fs_seed=${1#*=}; shift ;;
            --keep-model-off) keep_off=1; shift ;;
            *) sim_args+=("$1"); shift ;;
        esac
    done
    case $fs in ext4|xfs|btrfs) ;; *) die "unsupported --fs $fs (ext4, xfs, btrfs)";; esac
    [[ -e $STACK_DIR/pid || -e $STACK_DIR/loop ]] && die "a stack is already up in $STACK_DIR (run down first)"

    if [[ ! -x $HDDSIM ]]; then
        log "building hddsim into $HDDSIM_TARGET"
        (cd "$REPO" && CARGO_TARGET_DIR=$HDDSIM_TARGET cargo build --release -p hddsim) >&2
    fi

    mkdir -p "$STACK_DIR" "$FUSE_MNT"
    echo "$fs" > "$STACK_DIR/fs"
    rm -f "$IMAGE"

    # Model off while the filesystem is made; the caller's args may say otherwise later.
    "$HDDSIM" --image "$IMAGE" --size "$size" --model-off "${sim_args[@]}" "$FUSE_MNT" \
        > "$STACK_DIR/hddsim.log" 2>&1 &
    echo $! > "$STACK_DIR/pid"

    local i
    for i in $(seq 100); do
        [[ -e $FUSE_MNT/disk.img ]] && break
        kill -0 "$(state pid)" 2>/dev/null || { cat "$STACK_DIR/hddsim.log" >&2; die "hddsim exited"; }
        sleep 0.1
    done
    [[ -e $FUSE_MNT/disk.img ]] || die "hddsim did not mount $FUSE_MNT/disk.img"

    local loop
    loop=$(losetup -f --show --direct-io=on "$FUSE_MNT/disk.img")
    echo "$loop" > "$STACK_DIR/loop"
    # diskseq changes whenever a loop device is re-bound: `down` detaches the device only
    # if it is still the binding we made (loop devices are shared by the whole kernel).
    cat "/sys/block/${loop#/dev/}/diskseq" > "$STACK_DIR/diskseq"
    tune_loop "$loop"

    local uuid="" ext4_seed=""
    if [[ $fs_seed != random ]]; then
        uuid=$(fs_uuid "$fs_seed" uuid)
        ext4_seed=,hash_seed=$(fs_uuid "$fs_seed" hash)
    fi
    case $fs in
        ext4) mkfs.ext4 -q -F ${uuid:+-U "$uuid"} -E "lazy_itable_init=0,lazy_journal_init=0$ext4_seed" "$loop" ;;
        xfs) mkfs.xfs -q -f ${uuid:+-m uuid="$uuid"} "$loop" ;;
        btrfs) mkfs.btrfs -q -f ${uuid:+-U "$uuid"} "$loop" ;;
    esac >&2
    mount_fs
    echo "$MNT" > "$STACK_DIR/mounted"

    [[ $keep_off -eq 1 ]] || control on
    control reset
    echo "loop=$loop"
    echo "mnt=$MNT"
    echo "control=$FUSE_MNT/control"
}

cmd_cold() {
    need_root
    local loop
    loop=$(state loop)
    [[ -n $loop && -n $(state mounted) ]] || die "stack is not up"
    if is_mounted "$MNT"; then umount "$MNT"; fi
    sync
    echo 3 > /proc/sys/vm/drop_caches
    mount_fs
}

cmd_down() {
    need_root
    local loop pid
    loop=$(state loop); pid=$(state pid)
    # Whatever is mounted on our own mountpoint is ours.
    if is_mounted "$MNT"; then
        umount "$MNT" || umount -l "$MNT" || log "could not unmount $MNT"
    fi
    if [[ -n $loop ]]; then
        local seq
        seq=$(cat "/sys/block/${loop#/dev/}/diskseq" 2>/dev/null || true)
        if [[ -n $seq && $seq == "$(state diskseq)" ]] && losetup "$loop" >/dev/null 2>&1; then
            losetup -d "$loop" || log "could not detach $loop"
            for _ in $(seq 50); do
                [[ $(cat "/sys/block/${loop#/dev/}/diskseq" 2>/dev/null) == "$seq" ]] &&
                    losetup "$loop" >/dev/null 2>&1 || break
                sleep 0.1
            done
        fi
        rm -f "$STACK_DIR/loop" "$STACK_DIR/diskseq"
    fi
    if [[ -n $pid ]]; then
        # Only our hddsim: check the PID still runs hddsim before signalling it.
        if kill -0 "$pid" 2>/dev/null && [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == *hddsim* ]]; then
            kill -TERM "$pid"
            for _ in $(seq 100); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            if kill -0 "$pid" 2>/dev/null; then
                log "hddsim $pid did not stop; killing it"
                kill -KILL "$pid" 2>/dev/null || true
            fi
        fi
        rm -f "$STACK_DIR/pid"
    fi
    # A killed hddsim leaves a dead FUSE mount behind.
    if is_mounted "$FUSE_MNT" || grep -qF " $FUSE_MNT " /proc/mounts; then
        umount "$FUSE_MNT" 2>/dev/null || umount -l "$FUSE_MNT" 2>/dev/null || log "could not unmount $FUSE_MNT"
    fi
    rm -f "$IMAGE" "$STACK_DIR/fs" "$STACK_DIR/mounted" "$STACK_DIR/hddsim.log"
    rmdir "$MNT" "$FUSE_MNT" 2>/dev/null || true
    rmdir "$STACK_DIR" 2>/dev/null || true
}

cmd_env() {
    echo "STACK_DIR=$STACK_DIR"
    echo "LOOP=$(state loop)"
    echo "MNT=$MNT"
    echo "FUSE_MNT=$FUSE_MNT"
    echo "PID=$(state pid)"
}

main() {
    local cmd=${1:-}
    [[ $# -gt 0 ]] && shift
    case $cmd in
        up) cmd_up "$@" ;;
        cold) cmd_cold ;;
        down) cmd_down ;;
        stats) need_root; [[ -e $FUSE_MNT/control ]] || die "stack is not up"; cat "$FUSE_MNT/control" ;;
        model)
            need_root
            case ${1:-} in on|off) control "$1" ;; *) die "usage: model on|off" ;; esac ;;
        reset) need_root; control reset ;;
        sched)
            need_root
            case ${1:-} in sptf|fcfs) control "$1" ;; *) die "usage: sched sptf|fcfs" ;; esac ;;
        mark) need_root; control "trace-mark ${*:-mark}" ;;
        env) cmd_env ;;
        *)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
            exit 2 ;;
    esac
}

main "$@"
