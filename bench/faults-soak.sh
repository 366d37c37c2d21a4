#!/usr/bin/env bash
# A long soak of the fault harness (docs/faults.md): every seed in [FROM, TO) is a
# scenario (a random tree, one job over faultfs, maybe a kill -9) checked against the
# invariants; every violation fails its chunk. Needs root and /dev/fuse. Chunks of CHUNK seeds (default 500) run one after
# the other, so a failing chunk does not hide the next; at the end every violating seed
# is printed, each one a regression test to add.
#
#   bench/faults-soak.sh FROM TO          e.g. bench/faults-soak.sh 1 100000
#   CHUNK=N; LOG=FILE (default /var/tmp/seekless-faults-soak.log)
set -euo pipefail
cd "$(dirname "$0")/.."
from=${1:?usage: bench/faults-soak.sh FROM TO}
to=${2:?usage: bench/faults-soak.sh FROM TO}
chunk=${CHUNK:-500}
log=${LOG:-/var/tmp/seekless-faults-soak.log}
: > "$log"
cargo test -q --test it --no-run
failed=0
for ((a = from; a < to; a += chunk)); do
    b=$((a + chunk < to ? a + chunk : to))
    echo "seeds $a..$b" >&2
    if ! SEEKLESS_FAULT_SEEDS="$a..$b" \
        cargo test -q --test it faults::seeded_faults_keep_every_invariant -- --nocapture \
        >> "$log" 2>&1; then
        failed=1
    fi
done
if ((failed)); then
    echo "violations (seed, job, what):" >&2
    grep '^seed [0-9]' "$log" | sort -t' ' -k2,2n -u >&2
    echo "full log: $log" >&2
    exit 1
fi
echo "every invariant held for seeds $from..$to (log: $log)" >&2
