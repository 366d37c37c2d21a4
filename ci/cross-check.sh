#!/usr/bin/env bash
# Cross-platform checks on a Linux machine (Debian 12, root): the seekless package is
# built for x86_64-pc-windows-gnu and all its tests run under Wine (the library's and the
# binary's unit tests, the portable modules of the integration tests in tests/it, and the
# doc tests); every target of it (tests included) is type-checked for x86_64-apple-darwin
# and aarch64-apple-darwin.
#
# Why this recipe (see docs/platforms.md, "Running the cross checks"):
# rustup cannot download targets here, so Debian's rustc-web/cargo-web/rust-web-src
# (Rust 1.96, in /usr/bin) build std from source with -Zbuild-std (RUSTC_BOOTSTRAP=1).
# Wine 8.0 lacks bcryptprimitives.dll, which Rust's std imports for ProcessPrng, so a
# tiny DLL built from ci/bcryptprimitives.c goes into the Wine prefix. Cargo's runner
# (wine64) starts each test binary; the integration tests then start seekless.exe
# themselves, and being Windows processes under Wine they need no runner for it.
#
# Environment: CARGO_TARGET_DIR (default target/cross), WINEPREFIX (default
# $CARGO_TARGET_DIR/wineprefix). Exit status is non-zero if any step failed.

set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target/cross}
# The standard library is built three times from source: skip debug info and incremental
# state, which these one-off builds never use, to keep a fresh run short.
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_TEST_DEBUG=0 CARGO_INCREMENTAL=0
export WINEPREFIX=${WINEPREFIX:-$CARGO_TARGET_DIR/wineprefix}
# The Wine prefix's setup, shared with ci/release.sh: wine_prepare, wine_stop.
. ci/wine.sh

packages=(rustc-web cargo-web rust-web-src binutils-mingw-w64-x86-64 gcc-mingw-w64-x86-64 wine64)

summary=()
failed=0

print_summary() {
    echo
    echo "== cross-check summary =="
    local line
    for line in "${summary[@]}"; do
        echo "  $line"
    done
    if [ "$failed" = 0 ]; then
        echo "  => all cross-platform checks passed"
    else
        echo "  => FAILED"
    fi
}

finish() {
    wine_stop
    print_summary
}
trap finish EXIT

# Runs one named step, timing it and recording PASS/FAIL for the summary.
step() {
    local name=$1
    shift
    echo
    echo "== $name =="
    local start=$SECONDS
    if "$@"; then
        summary+=("PASS  $name ($((SECONDS - start)) s)")
        return 0
    else
        summary+=("FAIL  $name ($((SECONDS - start)) s)")
        failed=1
        return 1
    fi
}

install_packages() {
    local missing=() p
    for p in "${packages[@]}"; do
        if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
            missing+=("$p")
        fi
    done
    if [ "${#missing[@]}" = 0 ]; then
        echo "already installed: ${packages[*]}"
        return 0
    fi
    echo "installing: ${missing[*]}"
    local sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
            "${missing[@]}"
}

# The crates of seekless (the fault harness and the disk emulator are Linux FUSE programs).
packages_of_seekless=(-p seekless -p seekless-sys -p seekless-core -p seekless-jobs -p seekless-catalog)

# Debian's toolchain, not rustup's (which is first on PATH and has no cross std).
cross_cargo() {
    # The project's Cargo.toml optimises dependencies in dev builds (its native tests hash
    # gigabytes); with -Zbuild-std that would also optimise std itself. The tests that
    # run here hash kilobytes, so build everything unoptimised.
    RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 \
        /usr/bin/cargo "$@" -Zbuild-std=std,panic_abort \
        --config 'profile.dev.package."*".opt-level=0'
}

prepare_wine() {
    wine_prepare "$CARGO_TARGET_DIR/shim"
}

windows_tests() (
    # blake3's portable Rust code instead of its C and assembly: one less C build.
    export CARGO_FEATURE_PURE=1
    export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
    export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=$wine_runner
    # Every test target of the four crates: lib and bin unit tests, tests/it (its
    # Linux-only modules are compiled out), and the doc tests (Cargo runs them for the
    # target, through the same runner, since 1.89).
    cross_cargo test "${packages_of_seekless[@]}" --target x86_64-pc-windows-gnu
)

macos_check() (
    # blake3's build script compiles C and assembly with the target's C compiler, and
    # there is no macOS C compiler here. Its "pure" mode (portable Rust only) needs none;
    # the build script reads the feature from this variable. Type-checking is unaffected:
    # blake3's Rust code does not depend on the feature.
    export CARGO_FEATURE_PURE=1
    # Both targets in one invocation: host build scripts and proc macros build once.
    local targets=()
    for t in "$@"; do targets+=(--target "$t"); done
    # SQLite's C source (the default `bundled-sqlite` feature) cannot be compiled without a
    # macOS C compiler either; without the feature the build script only names the
    # system library, which a type-check never links. The Rust code checked is the same.
    cross_cargo check "${packages_of_seekless[@]}" --all-targets --no-default-features "${targets[@]}"
)

started=$SECONDS
step "install toolchain and Wine (${packages[*]})" install_packages || exit 1
step "Wine prefix with bcryptprimitives.dll shim" prepare_wine &&
    step "x86_64-pc-windows-gnu: cargo test of the seekless crates (unit, tests/it, doc) under Wine" \
        windows_tests
step "x86_64-apple-darwin + aarch64-apple-darwin: cargo check of the seekless crates --all-targets" \
    macos_check x86_64-apple-darwin aarch64-apple-darwin
summary+=("total $((SECONDS - started)) s")
exit "$failed"
