#!/usr/bin/env bash
# Release artifacts (issue 34, item 1), each checked as it is made, written to
# target/dist/ (emptied first by a whole run):
#
#   seekless-V-x86_64-linux-static.tar.gz  the static Linux binary (glibc, static-pie,
#                                          stripped), with README.md
#   seekless-V-x86_64-windows.zip          seekless.exe (cross-built with MinGW) and README.md
#   seekless_V-1_amd64.deb                 /usr/bin/seekless, its man page and bash/zsh/fish
#                                          completions (made by the binary), copyright
#   seekless-V-*.whl                       the Python module, once crates/python/ exists
#   SHA256SUMS                             of all the above
#
# and `cargo package` of the published crates (target/release-package/package/*.crate, not copied to
# dist). Why each choice: docs/release.md.
#
#   ci/release.sh [STEP...]   steps: static deb windows wheel package sums (default: all,
#                             in that order, into an emptied target/dist; chosen steps add
#                             to what target/dist holds, and `sums` covers all of it)
#
# Needs (Debian 12, root for the .deb's install test and the chroot): the toolchain of
# ci/cross-check.sh (rustc-web cargo-web rust-web-src binutils-mingw-w64-x86-64
# gcc-mingw-w64-x86-64 wine64), file zip unzip b3sum dpkg-dev man-db, python3-venv for the
# wheel; heif-enc and sqlite3 for the HEIF check (skipped without them). Uses the network
# only for the wheel's maturin (PyPI), when it is not installed.
#
# Environment: WINEPREFIX (default target/cross/wineprefix, the one ci/cross-check.sh
# makes). Exit status 0 when every step and check passed.

set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
dist=$root/target/dist
work=$(mktemp -d /tmp/seekless-release.XXXXXX)
# The Windows build's own target directory, shared with ci/cross-check.sh (whose builds
# are dev builds: nothing is overwritten either way).
cross_target=$root/target/cross
export WINEPREFIX=${WINEPREFIX:-$cross_target/wineprefix}
. ci/wine.sh

# The largest static binary accepted (issue 34: ≤ 15 MB).
max_static_bytes=15000000
# The crates published to crates.io, in dependency order (faultfs and hddsim are not).
published=(seekless-sys seekless-core seekless-jobs seekless-catalog seekless)

timings=()
current=
deb_installed=0

finish() {
    local rc=$?
    wine_stop
    if [ "$deb_installed" = 1 ]; then
        dpkg -r seekless > /dev/null 2>&1 || true
    fi
    rm -rf "$work"
    echo
    echo "== release summary =="
    local t
    for t in "${timings[@]}"; do echo "  $t"; done
    if [ "$rc" = 0 ]; then
        echo "  => release artifacts built and checked in $dist"
    else
        echo "  => FAILED in step: $current"
    fi
}
trap finish EXIT

# Runs one step (set -e stays in force inside it), timing it for the summary.
step() {
    current=$1
    shift
    echo
    echo "== $current =="
    local start=$SECONDS
    "$@"
    timings+=("$((SECONDS - start)) s  $current")
}

fail() {
    echo "FAIL: $*" >&2
    return 1
}

# need COMMAND PACKAGE...: fails, naming the Debian packages, when COMMAND is missing.
need() {
    local cmd=$1
    shift
    command -v "$cmd" > /dev/null || fail "$cmd not found (apt-get install $*)"
}

# A few files in a subdirectory and a deeper one, names with spaces, an empty file and
# one larger than a read chunk: what the Windows binary and the static one hash.
make_corpus() {
    local dir=$1
    mkdir -p "$dir/sub dir/deeper"
    printf 'hello\n' > "$dir/a.txt"
    : > "$dir/empty"
    head -c 3000000 /dev/urandom > "$dir/big file.bin"
    seq 1 20000 > "$dir/sub dir/numbers one.txt"
    cp README.md "$dir/sub dir/deeper/README copy.md"
}

# Lines of "HASH  PATH" for every file under DIR, by the reference tool, sorted by path
# (run inside DIR, paths as `./NAME`, which is how seekless prints `hash .`).
reference_sums() {
    local tool=$1 dir=$2
    (cd "$dir" && find . -type f -print0 | sort -z | xargs -0 "$tool") | sort -k2
}

# --- the static Linux binary -------------------------------------------------------

# glibc linked statically (static-pie) on the host target, with rustup's toolchain: no
# build-std, glibc's malloc (musl's is slow under threads). What a static glibc cannot do
# the code avoids in such a build (cfg target_feature = "crt-static"): it never loads
# libheif (HEIF thumbnails fail soft, as without libheif) and looks users and groups up
# in /etc/passwd and /etc/group only (NSS modules are loaded with dlopen).
static_binary() {
    need file file
    need readelf binutils
    local target=x86_64-unknown-linux-gnu
    # --target keeps the flag off build scripts and proc macros.
    RUSTFLAGS="-C target-feature=+crt-static" \
        nice cargo build --release --locked -p seekless --bin seekless --target "$target"
    local bin=$root/target/$target/release/seekless
    # Outputs are taken whole before matching: `a | grep -q` can kill `a` (pipefail).
    local kind dynamic ldd_says
    kind=$(file -b "$bin")
    echo "file: $kind"
    [[ $kind =~ static-pie\ linked|statically\ linked ]] || fail "not static"
    [[ $kind == *", stripped"* ]] || fail "not stripped"
    dynamic=$(readelf -d "$bin")
    [[ $dynamic != *NEEDED* ]] || fail "needs shared libraries: $dynamic"
    ldd_says=$(ldd "$bin" 2>&1 || true)
    echo "ldd: $ldd_says"
    [[ $ldd_says =~ statically\ linked|not\ a\ dynamic\ executable ]] || fail "ldd: dynamic"
    local size
    size=$(stat -c %s "$bin")
    echo "size: $size bytes (limit $max_static_bytes)"
    [ "$size" -le "$max_static_bytes" ] || fail "$size bytes > $max_static_bytes"

    # No runtime dependency: it runs in an empty root holding nothing but itself and the
    # files it hashes, and its sums are the reference tools'.
    local jail=$work/jail
    mkdir -p "$jail"
    cp "$bin" "$jail/seekless"
    make_corpus "$jail/corpus"
    if [ "$(id -u)" = 0 ]; then
        chroot "$jail" /seekless --version
        chroot "$jail" /seekless hash --algo sha256 /corpus | sed 's#  /corpus/#  ./#' |
            sort -k2 > "$work/static.sha256"
    else
        echo "not root: no chroot; the binary runs in this system"
        (cd "$jail/corpus" && "$jail/seekless" hash --algo sha256 .) | sort -k2 > "$work/static.sha256"
    fi
    reference_sums sha256sum "$jail/corpus" > "$work/ref.sha256"
    diff -u "$work/ref.sha256" "$work/static.sha256" || fail "static binary's sha256 differ"
    echo "static binary in an empty chroot: sha256 of $(wc -l < "$work/ref.sha256") files = sha256sum's"
    static_heif_fails_soft "$bin"

    local name=seekless-$version-x86_64-linux-static
    mkdir -p "$work/$name"
    cp "$bin" README.md "$work/$name/"
    tar -C "$work" --owner=0 --group=0 --sort=name -czf "$dist/$name.tar.gz" "$name"
    tar -tzvf "$dist/$name.tar.gz"
}

# On this machine, where libheif is installed: the static binary's `index --thumbs` of a
# HEIC still ends well (exit 0) and records why it made no thumbnail, as on a machine
# without libheif (the PNG beside it gets its thumbnail).
static_heif_fails_soft() {
    local bin=$1 dir=$work/heif
    if ! command -v heif-enc > /dev/null || ! command -v sqlite3 > /dev/null; then
        echo "heif-enc or sqlite3 missing: the HEIF fail-soft check is skipped"
        return 0
    fi
    mkdir -p "$dir/photos"
    cp docs/dupes-contact-sheet.png "$dir/photos/sheet.png"
    heif-enc -q 30 -o "$dir/photos/sheet.heic" "$dir/photos/sheet.png" > /dev/null
    "$bin" index --db "$dir/catalog.db" --thumbs "$dir/photos"
    local rows
    rows=$(sqlite3 "$dir/catalog.db" \
        "SELECT images.path, thumbs.width IS NOT NULL, thumbs.error FROM thumbs JOIN images ON images.id = thumbs.image ORDER BY images.path")
    echo "$rows"
    [[ $rows == *"sheet.heic|0|no decoder for heif: this statically linked seekless cannot load libheif"* ]] ||
        fail "HEIC: no recorded error"
    [[ $rows == *"sheet.png|1|"* ]] || fail "PNG: no thumbnail"
}

# --- the .deb --------------------------------------------------------------------

# dpkg-deb --build of a staged tree rather than cargo-deb: nothing to download and compile
# in CI (cargo-deb takes minutes to build on a fresh machine), and the man page and
# completions come from the binary itself either way. The binary is the ordinary
# (dynamic) release build, which loads libheif and NSS modules; dpkg-shlibdeps says what
# it needs.
deb_package() {
    need dpkg-shlibdeps dpkg-dev
    need man man-db groff-base
    nice cargo build --release --locked -p seekless --bin seekless
    local bin=$root/target/release/seekless
    local stage=$work/deb
    local arch
    arch=$(dpkg --print-architecture)
    install -D -m 0755 "$bin" "$stage/usr/bin/seekless"
    mkdir -p "$stage/usr/share/man/man1" "$stage/usr/share/doc/seekless" \
        "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" \
        "$stage/usr/share/fish/vendor_completions.d" "$stage/DEBIAN"
    "$bin" man | gzip -9n > "$stage/usr/share/man/man1/seekless.1.gz"
    "$bin" completions bash > "$stage/usr/share/bash-completion/completions/seekless"
    "$bin" completions zsh > "$stage/usr/share/zsh/vendor-completions/_seekless"
    "$bin" completions fish > "$stage/usr/share/fish/vendor_completions.d/seekless.fish"
    gzip -9n < CHANGELOG.md > "$stage/usr/share/doc/seekless/changelog.gz"
    cat > "$stage/usr/share/doc/seekless/copyright" << EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: seekless

Files: *
Copyright: the seekless developers
License: MIT or Apache-2.0
 seekless is distributed under the terms of the MIT license or the Apache License,
 version 2.0, at your option. The Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0. The binary includes Rust crates (see
 Cargo.lock in the source) and SQLite (public domain), BLAKE3 (CC0 or Apache-2.0) and
 zstd (BSD) compiled in, under their own licenses.
EOF
    find "$stage/usr" -type d -exec chmod 0755 {} +
    find "$stage/usr/share" -type f -exec chmod 0644 {} +

    local depends
    depends=$(cd "$work" && mkdir -p debian && : > debian/control &&
        dpkg-shlibdeps -O -e deb/usr/bin/seekless 2> /dev/null | sed -n 's/^shlibs:Depends=//p')
    [ -n "$depends" ] || fail "dpkg-shlibdeps found no dependencies"
    cat > "$stage/DEBIAN/control" << EOF
Package: seekless
Version: $version-1
Architecture: $arch
Maintainer: seekless developers <seekless@localhost>
Installed-Size: $(du -sk "$stage/usr" | cut -f1)
Depends: $depends
Suggests: libheif1, ffmpeg
Section: utils
Priority: optional
Description: read many files off rotational disks in physical order
 seekless asks the operating system where each file's data lies, sorts the work
 by physical position per disk and reads in one sweep with the disk's queue kept
 full. It hashes, verifies, catalogs (photos: EXIF, thumbnails, duplicates),
 archives and copies trees this way.
EOF
    local deb=$dist/seekless_${version}-1_$arch.deb
    dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" > /dev/null
    dpkg-deb --info "$deb" | sed -n '/Package:/,$p'
    dpkg-deb --contents "$deb"
    deb_check "$deb"
}

# Installs the .deb, checks what it put where, and removes it again.
deb_check() {
    local deb=$1
    if [ "$(id -u)" != 0 ]; then
        echo "not root: the install test (dpkg -i / dpkg -r) is skipped"
        return 0
    fi
    if [ "$(dpkg-query -W -f='${Status}' seekless 2> /dev/null || true)" = "install ok installed" ]; then
        fail "a seekless package is already installed here; not replacing it"
    fi
    # A minimal image may exclude man pages from every package (path-exclude).
    if grep -rqs 'path-exclude=/usr/share/man' /etc/dpkg/dpkg.cfg.d/; then
        fail "dpkg is set to drop man pages here (/etc/dpkg/dpkg.cfg.d)"
    fi
    deb_installed=1
    dpkg -i "$deb"
    /usr/bin/seekless --version
    local f
    for f in /usr/bin/seekless /usr/share/man/man1/seekless.1.gz \
        /usr/share/bash-completion/completions/seekless \
        /usr/share/zsh/vendor-completions/_seekless \
        /usr/share/fish/vendor_completions.d/seekless.fish \
        /usr/share/doc/seekless/copyright; do
        [ -f "$f" ] || fail "$f not installed"
    done
    [ "$(man -w seekless)" = /usr/share/man/man1/seekless.1.gz ] || fail "man -w seekless: $(man -w seekless)"
    # The page renders and has every job's section.
    local page
    page=$(MANWIDTH=80 man seekless 2> /dev/null)
    [[ $page == *$'\nSEEKLESS HASH'* ]] || fail "man page has no SEEKLESS HASH section"
    bash -c 'source /usr/share/bash-completion/completions/seekless && complete -p seekless' ||
        fail "bash completion"
    # Each shell finds the completion where the package put it, as a user's shell would
    # (CI installs zsh and fish; elsewhere a missing shell is said and skipped).
    if command -v zsh > /dev/null; then
        zsh -n /usr/share/zsh/vendor-completions/_seekless || fail "zsh completion does not parse"
        # -D: no dump file (with -d FILE compinit replaces FILE by a rename: never a device).
        [ "$(zsh -fc 'autoload -U compinit; compinit -u -D; print -r -- ${_comps[seekless]}')" = _seekless ] ||
            fail "zsh does not find the seekless completion in its fpath"
    else
        echo "zsh not installed: its completion is not checked"
    fi
    if command -v fish > /dev/null; then
        fish -n /usr/share/fish/vendor_completions.d/seekless.fish || fail "fish completion does not parse"
        fish -c 'complete -C "seekless ha"' | grep -q '^hash'$'\t' ||
            fail "fish does not complete 'seekless ha' to hash"
    else
        echo "fish not installed: its completion is not checked"
    fi
    if command -v lintian > /dev/null; then lintian "$deb" || true; fi
    dpkg -r seekless
    deb_installed=0
    local left
    left=$(dpkg-deb --contents "$deb" | awk '{print substr($6, 2)}' | while read -r f; do
        [ -f "$f" ] && echo "$f"
    done || true)
    [ -z "$left" ] || fail "left after dpkg -r: $left"
    if [ "$(dpkg-query -W -f='${Status}' seekless 2> /dev/null || true)" = "install ok installed" ]; then
        fail "still installed after dpkg -r"
    fi
    echo "dpkg -i, man -w, completions (bash, and zsh and fish where installed), dpkg -r: OK"
}

# --- the Windows .zip ---------------------------------------------------------------

# Cross-built the way ci/cross-check.sh builds the tests: Debian's Rust with the standard
# library built from source, MinGW's linker; then run under Wine.
windows_zip() {
    need /usr/bin/cargo rustc-web cargo-web rust-web-src
    need x86_64-w64-mingw32-gcc gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64
    need "$wine_runner" wine64
    need zip zip
    need unzip unzip
    need b3sum b3sum
    local target=x86_64-pc-windows-gnu
    CARGO_TARGET_DIR=$cross_target \
        CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc \
        RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 \
        nice /usr/bin/cargo build --release --locked -p seekless --bin seekless \
        --target "$target" -Zbuild-std=std,panic_abort
    local exe=$cross_target/$target/release/seekless.exe
    # Only Windows' own DLLs (and bcryptprimitives, Windows 10's): one .exe is enough.
    local dlls
    dlls=$(x86_64-w64-mingw32-objdump -p "$exe" | sed -n 's/^\s*DLL Name: //p' | sort -u | tr '\n' ' ')
    echo "imports: $dlls"
    if [[ ${dlls,,} =~ libgcc|libstdc|libwinpthread|mingw ]]; then fail "needs MinGW DLLs"; fi

    local zip=$dist/seekless-$version-x86_64-windows.zip
    mkdir -p "$work/zip"
    cp "$exe" "$work/zip/seekless.exe"
    cp README.md "$work/zip/README.md"
    rm -f "$zip"
    (cd "$work/zip" && zip -q -X -9 "$zip" seekless.exe README.md)
    unzip -l "$zip"
    [ "$(unzip -Z1 "$zip" | grep -c '\.exe$')" = 1 ] || fail "the zip must hold one .exe"

    # The shipped .exe, taken out of the zip, under Wine.
    mkdir -p "$work/unzipped"
    unzip -q "$zip" -d "$work/unzipped"
    wine_prepare "$cross_target/shim"
    local win=$work/unzipped/seekless.exe corpus=$work/wincorpus
    make_corpus "$corpus"
    "$wine_runner" "$win" --version
    # Relative paths (`hash .` inside the corpus): the lines must be the Linux tools'
    # own, byte for byte (sorted): on Windows `hash` writes `/` for the separator, as b3sum
    # does there, not `\` (which it would have to escape as GNU escapes a backslash).
    local algo tool
    for algo in blake3 sha256; do
        tool=b3sum
        [ "$algo" = sha256 ] && tool=sha256sum
        (cd "$corpus" && "$wine_runner" "$win" hash --algo "$algo" .) | sort -k2 > "$work/win.$algo"
        reference_sums "$tool" "$corpus" > "$work/ref.$algo"
        diff -u "$work/ref.$algo" "$work/win.$algo" || fail "seekless.exe hash --algo $algo differs from $tool"
        echo "seekless.exe hash --algo $algo under Wine = $tool on Linux ($(wc -l < "$work/ref.$algo") files)"
    done
    # `order`: the same files (the order itself differs: Wine has no cluster map, so
    # Windows goes by file index), as the Linux build lists them.
    # `order` prints names as they are: `.\sub dir\x`, separators turned into `/`.
    (cd "$corpus" && "$wine_runner" "$win" order .) | tr '\\' / | sort > "$work/win.order"
    local linux_bin=$root/target/release/seekless
    [ -x "$linux_bin" ] || linux_bin=$root/target/x86_64-unknown-linux-gnu/release/seekless
    [ -x "$linux_bin" ] || nice cargo build --release --locked -p seekless --bin seekless
    (cd "$corpus" && "$linux_bin" order .) | sort > "$work/linux.order"
    diff -u "$work/linux.order" "$work/win.order" || fail "seekless.exe order lists other files than on Linux"
    echo "seekless.exe order under Wine lists the same $(wc -l < "$work/linux.order") files as on Linux"
    wine_stop
}

# --- the Python wheel (issue 34, item 2) --------------------------------------------

# Built with maturin when the Python module exists; until then this says so and passes.
python_wheel() {
    local manifest=crates/python/Cargo.toml
    if [ ! -f crates/python/pyproject.toml ]; then
        echo "NOT BUILT: crates/python/pyproject.toml does not exist (the Python module of"
        echo "issue 34 item 2 is not on this branch); this step builds its wheel once it is"
        timings+=("-    wheel: not built, no crates/python/pyproject.toml")
        return 0
    fi
    local maturin=()
    if command -v maturin > /dev/null; then
        maturin=(maturin)
    elif python3 -m maturin --version > /dev/null 2>&1; then
        maturin=(python3 -m maturin)
    else
        # From PyPI, into a virtual environment of this run (needs python3-venv).
        python3 -m venv "$work/venv" || fail "python3 -m venv (apt-get install python3-venv)"
        "$work/venv/bin/pip" install -q maturin==1.16.0
        maturin=("$work/venv/bin/maturin")
    fi
    nice "${maturin[@]}" build --release --locked -m "$manifest" --out "$dist"
    ls -l "$dist"/*.whl
    # The wheel as a user gets it: installed into a fresh venv (no network: it has no
    # dependencies), it reads a file's bytes and hashes it as Python does.
    python3 -m venv "$work/wheel-venv" || fail "python3 -m venv (apt-get install python3-venv)"
    "$work/wheel-venv/bin/pip" install -q --no-index "$dist"/seekless-*.whl
    "$work/wheel-venv/bin/python" - "$work/wheel-venv/bin/python" <<'PY' || fail "the installed wheel does not read as Python does"
import hashlib, sys
import seekless
path = sys.argv[1]
want = open(path, "rb").read()
[(p, data)] = list(seekless.read([path]))
[(_, digest)] = list(seekless.hash([path], algo="sha256"))
assert p == path and data == want, "bytes differ"
assert digest == hashlib.sha256(want).hexdigest(), "sha256 differs"
print(f"wheel: seekless.read and seekless.hash agree with Python on {path} ({len(want)} bytes)")
PY
}

# --- cargo package ------------------------------------------------------------------

# Each published crate packaged and verified (built from the packaged sources) against
# the others' packages, through the local overlay registry `cargo package` makes for a
# multi-package run: no registry holds them yet. Nothing is published.
cargo_package() {
    local args=() p
    for p in "${published[@]}"; do args+=(-p "$p"); done
    # --allow-dirty: a working tree with changes can be checked too (a CI clone has none).
    # The verifying builds are one-off dev builds: no debug info, no incremental state, and
    # dependencies unoptimised in all four (the root manifest optimises them in dev builds
    # for its tests, which would build them all again for its verification alone).
    # In a target directory of its own, from nothing: the crates keep their version
    # between runs, and cargo takes a registry crate of a version it has built as
    # unchanged, so a second run would verify against the first run's seekless-core.
    local dir=target/release-package
    rm -rf "$dir"
    # The same holds for the sources cargo unpacks from that overlay registry into
    # CARGO_HOME (registry/src/<overlay>/NAME-VERSION): it unpacks a crate only once per
    # version, so a machine that packaged an earlier commit would verify the later crates
    # against the earlier commit's seekless-core (stop 48's CI failed so). Only our own
    # crates' unpacked copies are removed; crates.io's are not ours to touch.
    local home=${CARGO_HOME:-$HOME/.cargo}
    for p in "${published[@]}"; do
        rm -rf "$home"/registry/src/*/"$p-$version"
    done
    CARGO_PROFILE_DEV_DEBUG=0 CARGO_INCREMENTAL=0 \
        nice cargo package --locked --allow-dirty "${args[@]}" --target-dir "$dir" \
        --config 'profile.dev.package."*".opt-level=0'
    for p in "${published[@]}"; do
        cargo package --locked --allow-dirty --list -p "$p" > "$work/list.$p" 2> /dev/null
        if grep -E '^(bench|tests/it|fuzz|target|ci|\.ci)/|\.png$' "$work/list.$p"; then
            fail "$p's package holds files it must not (above)"
        fi
        echo "$p-$version.crate: $(stat -c %s "$dir/package/$p-$version.crate") bytes," \
            "$(wc -l < "$work/list.$p") files"
    done
}

# --- SHA256SUMS -------------------------------------------------------------------

checksums() {
    (
        cd "$dist"
        rm -f SHA256SUMS
        find . -maxdepth 1 -type f -printf '%f\n' | sort > "$work/dist.list"
        [ -s "$work/dist.list" ] || fail "nothing in $dist"
        xargs -d '\n' sha256sum -- < "$work/dist.list" > SHA256SUMS
        sha256sum -c --strict SHA256SUMS
    )
    ls -l "$dist"
}

main() {
    local steps=("$@") s
    if [ "${#steps[@]}" = 0 ]; then
        # A whole run starts from an empty target/dist; chosen steps add to what is there.
        steps=(static deb windows wheel package sums)
        rm -rf "$dist"
    fi
    mkdir -p "$dist"
    started=$SECONDS
    for s in "${steps[@]}"; do
        case $s in
            static) step "static Linux binary (x86_64, glibc static-pie)" static_binary ;;
            deb) step ".deb (dpkg-deb; install, man, completions, remove)" deb_package ;;
            windows) step "Windows .zip (MinGW; hash and order under Wine)" windows_zip ;;
            wheel) step "Python wheel (maturin)" python_wheel ;;
            package) step "cargo package of ${published[*]}" cargo_package ;;
            sums) step "SHA256SUMS" checksums ;;
            *) fail "unknown step $s (static deb windows wheel package sums)" ;;
        esac
    done
    timings+=("$((SECONDS - started)) s  total")
}

# On one line: bash has read all of it before running it, so editing this file while it
# runs cannot change what it does.
main "$@"; exit
