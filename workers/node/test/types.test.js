'use strict';
//  The hand-written declarations (index.d.ts) type-check a typed use of the
//  whole public API: tsc --noEmit on test/types/usage.ts.

const { it } = require ('node:test');
const assert = require ('node:assert/strict');
const { spawnSync } = require ('node:child_process');
const path = require ('node:path');

it ('index.d.ts accepts a typed use of the whole API (tsc --noEmit)', () => {
    const tsc = require.resolve ('typescript/bin/tsc');
    const run = spawnSync (process.execPath, [tsc, '--noEmit', '-p', path.join (__dirname, 'types')],
                           { encoding: 'utf8', cwd: path.join (__dirname, '..') });
    assert.equal (run.status, 0, 'tsc failed:\n' + run.stdout + run.stderr);
});
