#!/usr/bin/env bash
# Headless Chromium for the browser test (tests/project/test_ui_browser.py): Debian's `chromium` package.
# Idempotent; needs root and apt-get. Exit 0 when a chromium binary is present afterwards.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install_browser.sh: need root and apt-get to install chromium; install it yourself to run the browser test" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null; }
command -v chromium >/dev/null
