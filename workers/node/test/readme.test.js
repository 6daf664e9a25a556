'use strict';
//  Every fenced js or javascript block of this package's README.md and of
//  the project's README.md runs as written against a live actd, the only
//  change being the test broker's endpoints in place of the default ones:
//  in $ACTD_ENDPOINT and $ACTD_WORKER_ENDPOINT, and in the code for
//  tcp://127.0.0.1:5555 and :5556.
//
//  A block that cannot run on its own (a signature, brokers that do not
//  exist) is marked with <!-- snippet: fragment --> on the line before it:
//  it is compiled, not run, and counted. The others of one README start
//  together, each a `node` process of its own in a directory where
//  require('actd') finds this package: every one must exit 0 within
//  TIMEOUT_MS, except those that start a Worker (test/snippet-served.js
//  tells which), which must have served at least one call by the time the
//  others are done and are then stopped with SIGTERM.

const { describe, it, before, after } = require ('node:test');
const assert = require ('node:assert/strict');
const { spawn } = require ('node:child_process');
const fs = require ('node:fs');
const os = require ('node:os');
const path = require ('node:path');
const vm = require ('node:vm');
const { Actd, until, ROOT } = require ('./actd');

const PACKAGE = path.join (__dirname, '..');
const READMES = [path.join (PACKAGE, 'README.md'), path.join (ROOT, 'README.md')];
const TIMEOUT_MS = 60000;
const MARKER = /^<!--\s*snippet:\s*(\S+)\s*-->$/;

//  The js blocks of a Markdown file: [{ code, line, fragment }]
function snippets (file) {
    const lines = fs.readFileSync (file, 'utf8').split ('\n');
    const found = [];
    let markers = 0;
    for (let index = 0; index < lines.length; index++) {
        if (MARKER.test (lines [index].trim ()))
            markers++;
        const fence = /^\s*```\s*([\w-]*)/.exec (lines [index]);
        if (!fence)
            continue;
        let end = index + 1;
        while (end < lines.length && !/^\s*```\s*$/.test (lines [end]))
            end++;
        if (fence [1] === 'js' || fence [1] === 'javascript') {
            let above = index - 1;
            while (above >= 0 && !lines [above].trim ())
                above--;
            const marker = above >= 0? MARKER.exec (lines [above].trim ()): null;
            assert.ok (!marker || marker [1] === 'fragment',
                       `${file}:${above + 1}: unknown marker ${marker && marker [1]}`);
            found.push ({ code: lines.slice (index + 1, end).join ('\n') + '\n',
                          line: index + 1, fragment: Boolean (marker) });
        }
        index = end;
    }
    //  A marker away from a js block would mark nothing
    assert.equal (found.filter ((snippet) => snippet.fragment).length, markers,
                  file + ': a snippet marker that is not right before a js block');
    return found;
}

//  Start snippet's code as a node process of its own in dir
function start (snippet, dir, name, actd) {
    const code = snippet.code.replaceAll ('tcp://127.0.0.1:5555', actd.clientEndpoint)
                             .replaceAll ('tcp://127.0.0.1:5556', actd.workerEndpoint);
    const file = path.join (dir, `${name.replace (/\W/g, '_')}-${snippet.line}.js`);
    const log = file + '.log';
    fs.writeFileSync (file, code);
    fs.writeFileSync (log, '');
    const child = spawn (process.execPath, ['--require', path.join (__dirname, 'snippet-served.js'),
        file], { cwd: dir, env: { ...process.env, ACTD_ENDPOINT: actd.clientEndpoint,
                                  ACTD_WORKER_ENDPOINT: actd.workerEndpoint,
                                  ACTD_SNIPPET_LOG: log } });
    const run = { name: `${name}:${snippet.line}`, child, output: '', exit: null };
    child.stdout.on ('data', (data) => { run.output += data; });
    child.stderr.on ('data', (data) => { run.output += data; });
    run.exited = new Promise ((resolve) => child.once ('exit', (code, signal) => {
        run.exit = { code, signal };
        resolve ();
    }));
    run.events = () => fs.readFileSync (log, 'utf8').split ('\n').filter (Boolean);
    run.worker = () => run.events ().includes ('run');
    run.served = () => run.events ().filter ((event) => event.startsWith ('served ')).length;
    return run;
}

describe ('README snippets', () => {
    let actd, dir;

    before (async () => {
        //  The snippets' workers keep the default heartbeat (1000 ms, liveness 3)
        actd = await new Actd ({ heartbeatMs: 1000 }).start ();
        dir = fs.mkdtempSync (path.join (os.tmpdir (), 'actd-node-readme-'));
        fs.mkdirSync (path.join (dir, 'node_modules'));
        fs.symlinkSync (PACKAGE, path.join (dir, 'node_modules', 'actd'), 'dir');
    });

    after (async () => {
        fs.rmSync (dir, { recursive: true, force: true });
        await actd.finish ();
    });

    for (const readme of READMES) {
        const name = path.relative (ROOT, readme);
        it (`${name}: every js snippet runs or is marked a fragment`, async (t) => {
            const found = snippets (readme);
            const fragments = found.filter ((snippet) => snippet.fragment);
            for (const fragment of fragments)
                new vm.Script (fragment.code, { filename: `${name}:${fragment.line}` });
            const runs = found.filter ((snippet) => !snippet.fragment)
                .map ((snippet) => start (snippet, dir, name, actd));
            assert.ok (runs.length > 0, name + ' has no snippet to run');
            try {
                await until (() => runs.every ((run) => run.exit || run.worker ()),
                             'the snippets that are not workers to end', TIMEOUT_MS);
                await until (() => runs.every ((run) => !run.worker () || run.served ()),
                             'each worker snippet to serve a call', TIMEOUT_MS);
            }
            finally {
                for (const run of runs)
                    if (!run.exit)
                        run.child.kill ('SIGTERM');
                await Promise.all (runs.map ((run) => run.exited));
            }
            for (const run of runs) {
                const { code, signal } = run.exit;
                //  A worker snippet may leave SIGTERM to its default: ending
                const stopped = run.worker () && signal === 'SIGTERM';
                assert.ok (code === 0 || stopped,
                           `${run.name} ended ${code ?? signal}:\n${run.output}`);
            }
            const workers = runs.filter ((run) => run.worker ());
            t.diagnostic (`${name}: ${runs.length} snippets ran (${workers.length} workers, `
                + `calls served: ${workers.map ((run) => run.served ()).join (', ')}), `
                + `${fragments.length} fragments compiled only`);
        });
    }
});
