#!/usr/bin/env bash
# The browser the ui's browser test drives: Debian's chromium and its chromedriver, apt-installed when missing
# (never a browser build downloaded by a test tool). Prints the two paths; fails loudly when it cannot install them.
set -euo pipefail
LOG_NAME=browser
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_debian_packages chromium chromium-driver
for tool in chromium chromedriver; do
  command -v "${tool}" >/dev/null || die "${tool} is not on PATH after installing chromium and chromium-driver"
done
command -v chromium
command -v chromedriver
