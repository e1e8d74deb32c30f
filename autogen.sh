#!/bin/sh
# Regenerate the build system from a fresh clone.
set -e
cd "$(dirname "$0")"
autoreconf -fi
