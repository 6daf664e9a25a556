'use strict';
//  The README's install works in a fresh project: `npm install
//  --install-links workers/node` copies the package in with zeromq (a plain
//  `npm install DIR` would only link to this directory), and the copy
//  reaches a live actd. npm takes zeromq from its cache when it can (it is
//  there after run-tests.sh's npm ci).

const { it, before, after } = require ('node:test');
const assert = require ('node:assert/strict');
const fs = require ('node:fs');
const os = require ('node:os');
const path = require ('node:path');
const { Actd, runProgram } = require ('./actd');

const PACKAGE = path.join (__dirname, '..');

let actd, dir;

before (async () => {
    actd = await new Actd ().start ();
    dir = fs.mkdtempSync (path.join (os.tmpdir (), 'actd-node-install-'));
});

after (async () => {
    fs.rmSync (dir, { recursive: true, force: true });
    await actd.finish ();
});

it ('npm install --install-links copies the package into a fresh project', async () => {
    //  As from a shell, not from inside `npm test`
    const env = Object.fromEntries (Object.entries (process.env)
        .filter (([name]) => !name.toLowerCase ().startsWith ('npm_')));
    fs.writeFileSync (path.join (dir, 'package.json'),
                      JSON.stringify ({ name: 'probe', version: '1.0.0', private: true }));
    await runProgram ('npm', ['install', '--install-links', '--prefer-offline', '--no-audit',
                              '--no-fund', PACKAGE], { cwd: dir, env, timeout: 300000 });
    const installed = path.join (dir, 'node_modules', 'actd');
    assert.equal (fs.lstatSync (installed).isSymbolicLink (), false);
    assert.deepEqual (fs.readdirSync (installed).sort (),
                      ['LICENSE', 'README.md', 'bin', 'examples', 'index.d.ts', 'index.js',
                       'lib', 'package.json']);
    //  The MCP server is on the project's PATH (npx actd-mcp)
    assert.ok (fs.existsSync (path.join (dir, 'node_modules', '.bin', 'actd-mcp')));
    const help = await runProgram (path.join (dir, 'node_modules', '.bin', 'actd-mcp'), ['--help'],
                                   { cwd: dir, env, timeout: 60000 });
    assert.match (help, /^usage: actd-mcp/);
    const probe = 'const { Client } = require ("actd");'
                + 'console.log (require.resolve ("actd"));'
                + 'const client = new Client (process.argv [1]);'
                + 'client.ping ().then (() => console.log ("pong"), (error) => {'
                + '    console.error (error); process.exitCode = 1; })'
                + '.finally (() => client.close ());';
    const stdout = await runProgram (process.execPath, ['-e', probe, actd.clientEndpoint],
                                     { cwd: dir, env, timeout: 60000 });
    assert.deepEqual (stdout.split ('\n'), [path.join (fs.realpathSync (dir), 'node_modules',
                                                       'actd', 'index.js'), 'pong', '']);
});
