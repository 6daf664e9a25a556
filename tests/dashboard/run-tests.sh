#!/bin/sh
#  The dashboard test (ctest: dashboard). Installs puppeteer-core with
#  `npm ci` only when node_modules is missing or older than
#  package-lock.json (or package.json), then runs test_dashboard.js against
#  $ACTD_BIN and $ACTD_HTTP_BIN in Debian's /usr/bin/chromium. Fails, never
#  skips, when Node.js or Chromium is missing.
set -eu
case $0 in */*) cd "${0%/*}" ;; esac

fail () {
    echo "tests/dashboard: FAIL: $*" >&2
    exit 1
}

command -v node >/dev/null 2>&1 \
    || fail "node is not installed; the dashboard test needs Node.js 20 or later (apt-get install nodejs npm)"
command -v npm >/dev/null 2>&1 \
    || fail "npm is not installed; it installs puppeteer-core (apt-get install npm)"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || fail "node $(node --version) is too old; Node.js 20 or later is needed"
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] \
    || fail "${CHROMIUM:-/usr/bin/chromium} is not installed (apt-get install chromium)"

stamp=node_modules/.package-lock.json     #  Written by npm at each install
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ package.json -nt "$stamp" ]; then
    npm ci --no-audit --no-fund
fi

exec node test_dashboard.js
