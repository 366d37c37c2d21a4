# Helpers shared by the benchmark scripts (sourced, not run).

# The median of the numbers on standard input, one per line.
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Seconds a shell command line takes, its output discarded.
elapsed() {
    local s e
    s=$(date +%s.%N)
    bash -c "$1" > /dev/null
    e=$(date +%s.%N)
    echo "$e - $s" | bc -l
}

# Builds the release binary and prints its path.
seekless_bin() {
    cargo build --release -q -p seekless
    echo "$PWD/target/release/seekless"
}
