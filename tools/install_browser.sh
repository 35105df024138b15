#!/usr/bin/env bash
# Make sure Debian's Chromium is at /usr/bin/chromium: the browser tests (tests/browser/) drive it
# with Python playwright. `playwright install` downloads browsers from a CDN, which is often not
# reachable; Debian's package comes from the ordinary apt mirror. Idempotent: does nothing if present.
set -euo pipefail
browser=/usr/bin/chromium

emoji_font=/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf  # so that ✅ ❌ ⏳ of check() show in screenshots

if [ -x "$browser" ]; then
  echo "install_browser: $browser is already installed ($("$browser" --version 2>/dev/null || echo 'version unknown'))"
  if [ ! -f "$emoji_font" ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    # optional: without it the screenshots show boxes for emoji; never a reason to fail
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-color-emoji >/dev/null 2>&1 \
      || echo "install_browser: (could not install fonts-noto-color-emoji; emoji show as boxes in screenshots)"
  fi
  exit 0
fi

if [ "$(id -u)" = "0" ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "install_browser: ERROR: $browser is missing and this user is not root and has no sudo;" >&2
  echo "install_browser: ask an administrator to run: apt-get update && apt-get install -y chromium" >&2
  exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_browser: ERROR: $browser is missing and there is no apt-get (not a Debian/Ubuntu system);" >&2
  echo "install_browser: install Chromium so that it is at $browser, or link it there" >&2
  exit 1
fi

echo "install_browser: $browser is missing: installing Debian's chromium with apt-get ${sudo[*]:+(via sudo)}"
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get update -qq; then
  echo "install_browser: ERROR: apt-get update failed (no network to the Debian mirror?)" >&2
  exit 1
fi
if ! "${sudo[@]}" apt-get install -y -qq chromium fonts-noto-color-emoji; then
  echo "install_browser: ERROR: apt-get install chromium failed" >&2
  exit 1
fi
if [ ! -x "$browser" ]; then
  echo "install_browser: ERROR: apt-get installed chromium but $browser is still missing" >&2
  exit 1
fi
echo "install_browser: installed $("$browser" --version 2>/dev/null || echo chromium)"
