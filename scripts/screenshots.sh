#!/bin/sh
# The README's screenshots of the plots (reference 11): runs the plots'
# integration tests (tests/integration/test_plots.py), which render each
# SVG they read from a real mount with headless Chromium and check the PNG,
# with JOBFS_SCREENSHOTS=docs/img so that they keep those PNGs there.
set -eu
cd "$(dirname "$0")/.."
JOBFS_SCREENSHOTS="$(pwd)/docs/img" JOBFS_CHROMIUM_REQUIRED=1 \
	python3 tests/integration/run.py -k plots. -v
