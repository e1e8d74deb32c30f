#!/bin/sh
# test-real-runs.sh for claude alone: one suite per CLI, so that
# `make -j check` runs them side by side (all four in one took six
# minutes of the sanitizer stage).
REAL_RUNS_ONLY=claude exec sh "$(dirname "$0")/test-real-runs.sh"
