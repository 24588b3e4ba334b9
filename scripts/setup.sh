#!/bin/sh
# Sets JointLab up in a virtual environment of its own, so it works where the system Python refuses
# pip installs (PEP 668: Debian 12, Ubuntu 24.04):
#   1. the Debian packages Qt, OpenGL and the GUI tests need (install-system-deps.sh; also
#      python3-venv when this Python can not make a virtual environment),
#   2. the virtual environment .venv (or $JOINTLAB_VENV), made if missing and reused otherwise,
#      without the system's site-packages,
#   3. JointLab itself (editable) with its declared dependencies; with --test also the test extras.
# Usage: sh scripts/setup.sh [--test]
set -e
cd "$(dirname "$0")/.."
EXTRA=""
case "${1:-}" in
    --test) EXTRA="[test]" ;;
    "") ;;
    *) echo "setup: unknown option '$1' (expected --test or nothing)" >&2; exit 2 ;;
esac
PY="${PYTHON:-python3}"
if ! command -v "$PY" >/dev/null 2>&1; then
    echo "setup: $PY not found; install Python 3.11 or newer (Debian/Ubuntu: apt-get install python3)" >&2
    exit 1
fi
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup: JointLab needs Python >= 3.11; $PY is $("$PY" -c 'import sys; print(sys.version.split()[0])')" >&2
    exit 1
fi
sh scripts/install-system-deps.sh
VENV="${JOINTLAB_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: making the virtual environment $VENV"
    "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
echo "setup: installing JointLab$EXTRA and its dependencies into $VENV"
"$VENV/bin/python" -m pip install --quiet -e ".$EXTRA"
