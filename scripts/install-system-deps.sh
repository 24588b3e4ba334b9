#!/bin/sh
# Installs the Debian packages JointLab needs that a bare machine lacks: Xvfb (tests run a real
# window on a virtual screen) and the X11/OpenGL libraries the Qt 6 wheels load. Skips what is
# already installed; needs root or sudo only when something is missing.
set -e
PKGS="xvfb xauth libgl1 libegl1 libgl1-mesa-dri libglu1-mesa libxkbcommon0 libxkbcommon-x11-0 \
libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0 libxcb-render-util0 \
libxcb-shape0 libxcb-xinerama0 libxcb-xkb1 libxcb-xfixes0 libxrender1 libxi6 libdbus-1-3 \
libfontconfig1 libfreetype6"
# a Python that can not make a virtual environment (Debian's python3 without python3-venv)
PY="${PYTHON:-python3}"
if command -v "$PY" >/dev/null 2>&1 && ! "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    VER="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    PKGS="$PKGS python3-venv python$VER-venv"
fi
EXTRA="$(dirname "$0")/../app/SYSTEM_PACKAGES.txt"
if [ -f "$EXTRA" ]; then
    PKGS="$PKGS $(grep -v '^#' "$EXTRA" | tr '\n' ' ')"
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-system-deps: no apt-get here; install the equivalents of: $PKGS" >&2
    exit 0
fi
MISSING=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || MISSING="$MISSING $p"
done
if [ -z "$MISSING" ]; then
    exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-system-deps: installing$MISSING"
# another apt (unattended upgrades, a second setup) may hold dpkg's lock: wait for it (up to 10 min)
LOCK="-o DPkg::Lock::Timeout=600"
$SUDO apt-get $LOCK update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get $LOCK install -y -qq --no-install-recommends $MISSING >/dev/null
