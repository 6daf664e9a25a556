#!/bin/sh
#  Tests of the Node.js package (ctest: workers_node). Installs the npm
#  dependencies with `npm ci` only when node_modules is missing or older than
#  package-lock.json (or package.json), then runs `npm test` (node --test)
#  against the actd named by $ACTD_BIN. Fails, never skips, without Node.js.
#  With --install-only it stops after the install (ctest: node_modules, the
#  fixture every test that runs the Node package waits for, so that none
#  reads node_modules while npm ci rewrites it).
set -eu
case $0 in */*) cd "${0%/*}" ;; esac

fail () {
    echo "workers/node: FAIL: $*" >&2
    exit 1
}

command -v node >/dev/null 2>&1 \
    || fail "node is not installed; the Node.js package needs Node.js 20 or later (e.g. apt-get install nodejs npm)"
command -v npm >/dev/null 2>&1 \
    || fail "npm is not installed; it is needed to install the package's dependencies (e.g. apt-get install npm)"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || fail "node $(node --version) is too old; Node.js 20 or later is needed"

stamp=node_modules/.package-lock.json     #  Written by npm at each install
if [ ! -f package-lock.json ]; then
    npm install --no-audit --no-fund
elif [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ package.json -nt "$stamp" ]; then
    npm ci --no-audit --no-fund
fi

[ "${1:-}" = --install-only ] && exit 0
exec npm test
