# A Wine prefix that runs Rust programs built for x86_64-pc-windows-gnu (sourced, not
# run; used by ci/cross-check.sh and ci/release.sh). Why each piece: docs/platforms.md,
# "Running the cross checks". Needs the Debian packages wine64 and
# gcc-mingw-w64-x86-64.
#
# The caller exports WINEPREFIX (its own: the server that wine_stop ends is that
# prefix's alone), calls `wine_prepare SHIM_DIR`, and calls wine_stop on exit.

export WINEDEBUG=-all
export WINEARCH=win64
# Never pop up Wine's "install Mono/Gecko?" dialogs or try to download them.
export WINEDLLOVERRIDES="mscoree,mshtml="

# The runner for Windows programs.
wine_runner=/usr/lib/wine/wine64
wine_started=0

# Builds the bcryptprimitives.dll shim into SHIM_DIR (Wine 8.0 lacks the ProcessPrng
# export Rust's std imports) and puts it into $WINEPREFIX, making the prefix first.
wine_prepare() {
    local shim_dir=$1 ci_dir
    ci_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    mkdir -p "$shim_dir" &&
        x86_64-w64-mingw32-gcc -shared -O2 -Wall -o "$shim_dir/bcryptprimitives.dll" \
            "$ci_dir/bcryptprimitives.c" "$ci_dir/bcryptprimitives.def" -ladvapi32 || return 1
    wine_started=1
    if [ ! -f "$WINEPREFIX/system.reg" ]; then
        mkdir -p "$WINEPREFIX" &&
            "$wine_runner" wineboot --init > /dev/null 2>&1 || return 1
    fi
    local sys32=$WINEPREFIX/drive_c/windows/system32
    [ -d "$sys32" ] || { echo "no $sys32 after wineboot"; return 1; }
    cp "$shim_dir/bcryptprimitives.dll" "$sys32/bcryptprimitives.dll"
}

# Stops the Wine server of $WINEPREFIX, if wine_prepare started one.
wine_stop() {
    if [ "$wine_started" = 1 ]; then
        # Only our prefix's server: wineserver -k acts on $WINEPREFIX alone.
        if [ -x /usr/lib/wine/wineserver64 ]; then
            /usr/lib/wine/wineserver64 -k 2> /dev/null || true
        elif command -v wineserver > /dev/null 2>&1; then
            wineserver -k 2> /dev/null || true
        fi
        wine_started=0
    fi
}
