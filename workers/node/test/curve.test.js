'use strict';
//  CURVE: a Client and a Worker reach an actd whose sockets use CURVE, with
//  keys made by `actctl keygen` (as tests/integration/test_security.py
//  starts it): alice's key is allowed for clients, w1's for workers,
//  mallory's for neither.

const { describe, it, before, after } = require ('node:test');
const assert = require ('node:assert/strict');
const { execFileSync, spawn } = require ('node:child_process');
const fs = require ('node:fs');
const os = require ('node:os');
const path = require ('node:path');
const { Client, Worker } = require ('..');
const { Actd, until, runProgram, sibling } = require ('./actd');

const EXAMPLES = path.join (__dirname, '..', 'examples');

//  actctl keygen NAME into dir: the public key
function keygen (name, dir) {
    const output = execFileSync (sibling ('actctl'), ['keygen', name, '--dir', dir],
                                 { encoding: 'utf8' });
    return /^public key (\S{40})$/m.exec (output) [1];
}

describe ('CURVE', () => {
    let dir, actd, client, curveServer, keys;

    before (async () => {
        dir = fs.mkdtempSync (path.join (os.tmpdir (), 'actd-node-curve-'));
        for (const sub of ['clients', 'workers'])
            fs.mkdirSync (path.join (dir, sub));
        curveServer = keygen ('server', dir);
        keys = { alice: keygen ('alice', path.join (dir, 'clients')),
                 w1: keygen ('w1', path.join (dir, 'workers')),
                 mallory: keygen ('mallory', dir) };
        const config = path.join (dir, 'actd.cfg');
        fs.writeFileSync (config, 'security\n'
            + `    server_key = ${path.join (dir, 'server.key_secret')}\n`
            + `    client_keys = ${path.join (dir, 'clients')}\n`
            + `    worker_keys = ${path.join (dir, 'workers')}\n`);
        actd = await new Actd ({ args: ['--config', config], clientOptions: {
            curveServer, curveCert: path.join (dir, 'clients', 'alice.key_secret') } }).start ();
        client = actd.client ();
    });

    after (async () => {
        client.close ();
        await actd.finish ();
        fs.rmSync (dir, { recursive: true, force: true });
    });

    it ('a Worker and a Client with allowed keys serve and make calls', async () => {
        const worker = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200,
            name: 'curve-node', curveServer,
            curveCert: path.join (dir, 'workers', 'w1.key_secret') });
        worker.activity ('upper', async ({ text }) => text.toUpperCase ());
        const running = worker.run ();
        try {
            await until (async () => (await client.stats ()).workers.length === 1, 'the worker');
            const outcome = await client.call ('curve', { _tool: 'upper', text: 'curve',
                                                          _outputPath: '†state.up' });
            assert.equal (outcome.status, 'ok');
            assert.equal (await client.resolve ('curve', '†state.up'), 'CURVE');
            assert.match (actd.log (), new RegExp ('CURVE on: server public key '
                                                   + curveServer.replace (/\W/g, '\\$&')));
        }
        finally {
            await worker.stop ();
            await running;
        }
    });

    it ('the examples take a key flag that starts with a dash (Z85 has one)', () => {
        //  parseArgs took "--curve-server -jB..." for a missing value (a CI
        //  run's generated key began with '-'): the examples now get past
        //  the flags and fail on the missing certificate
        const key = '-jB{F3GDg#7Tm2a?/j$yqEmhmO#eou9r]3EqELwr';
        for (const program of ['client.js', 'worker.js']) {
            let error = null;
            try {
                execFileSync (process.execPath, [path.join (EXAMPLES, program), '--endpoint',
                    'tcp://127.0.0.1:1', '--curve-server', key, '--curve-cert', '/nonexistent'],
                    { stdio: 'pipe', timeout: 20000 });
            }
            catch (caught) {
                error = String (caught.stderr);
            }
            assert.ok (error, program + ' started with no certificate');
            assert.match (error, /cannot read certificate \/nonexistent/, program);
            assert.doesNotMatch (error, /ambiguous/, program);
        }
    });

    it ('the examples take endpoints and keys from the environment, or keys as flags', async () => {
        //  ACTD_CERT names w1's public file: its _secret is read, as zcert_load does
        const worker = spawn (process.execPath, [path.join (EXAMPLES, 'worker.js'),
            '--heartbeat-ms', '200'], { stdio: 'ignore', env: { ...process.env,
            ACTD_WORKER_ENDPOINT: actd.workerEndpoint, ACTD_SERVER_KEY: curveServer,
            ACTD_CERT: path.join (dir, 'workers', 'w1.key') } });
        const exited = new Promise ((resolve) => worker.once ('exit', resolve));
        try {
            await until (async () => (await client.stats ()).workers.length === 1,
                         'the example worker');
            const cert = path.join (dir, 'clients', 'alice.key_secret');
            const program = path.join (EXAMPLES, 'client.js');
            const env = { ...process.env, ACTD_ENDPOINT: actd.clientEndpoint };
            const output = await runProgram (process.execPath, [program, '--context',
                'curve-example'], { env: { ...env, ACTD_SERVER_KEY: curveServer, ACTD_CERT: cert } });
            assert.match (output, /^upper: ok -> "HELLO, WORLD"$/m);
            const flagged = await runProgram (process.execPath, [program, '--context',
                'curve-flags', '--curve-server', curveServer, '--curve-cert', cert], { env });
            assert.match (flagged, /^upper: ok -> "HELLO, WORLD"$/m);
        }
        finally {
            worker.kill ('SIGTERM');
        }
        assert.equal (await exited, 0);
    });

    it ('a client whose key is not allowed is answered ERROR unauthorized', async () => {
        const refused = actd.client ({ curveCert: path.join (dir, 'mallory.key_secret') });
        try {
            await assert.rejects (refused.ping (), (error) => {
                assert.equal (error.code, 'unauthorized');
                assert.equal (error.message, 'this client\'s CURVE key is not allowed');
                return true;
            });
        }
        finally {
            refused.close ();
        }
        const plain = actd.client ({ curveServer: undefined, curveCert: undefined,
                                     timeoutMs: 1500 });
        await assert.rejects (plain.ping (), { code: 'request_timeout' });
        plain.close ();
    });

    it ('a worker whose key is refused warns, gets no task and stops', async () => {
        const worker = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200,
            curveServer, curveCert: path.join (dir, 'mallory.key_secret') });
        worker.activity ('upper', async ({ text }) => text.toUpperCase ());
        const warnings = [];
        worker.on ('warning', (error) => warnings.push (error.message));
        const running = worker.run ();
        await until (() => warnings.length, 'a warning');
        assert.equal (warnings [0], `the broker at ${actd.workerEndpoint} refused this `
                                    + 'worker\'s CURVE key');
        assert.match (actd.log (), new RegExp ('CURVE: worker refused from .*: key '
                                               + keys.mallory.replace (/\W/g, '\\$&')));
        assert.deepEqual ((await client.stats ()).workers, []);
        await worker.stop ();
        await running;

        //  The example worker with a client's key says so, and stops on SIGTERM
        const example = spawn (process.execPath, [path.join (EXAMPLES, 'worker.js'),
            '--endpoint', actd.workerEndpoint, '--heartbeat-ms', '200'], { env: { ...process.env,
            ACTD_SERVER_KEY: curveServer, ACTD_CERT: path.join (dir, 'clients', 'alice.key') } });
        let stderr = '';
        example.stderr.on ('data', (data) => { stderr += data; });
        const exited = new Promise ((resolve) => example.once ('exit', resolve));
        await until (() => /refused this worker's CURVE key/.test (stderr), 'the example\'s warning');
        example.kill ('SIGTERM');
        assert.equal (await exited, 0, stderr);
        assert.deepEqual ((await client.stats ()).workers, []);
    });

    it ('curveServer and curveCert go together, and must be readable keys', () => {
        const curveCert = path.join (dir, 'clients', 'alice.key_secret');
        assert.throws (() => new Client ({ curveServer }), /curveServer and curveCert/);
        assert.throws (() => new Worker ({ curveCert }), /curveServer and curveCert/);
        assert.throws (() => new Client ({ curveServer: 'short', curveCert }),
                       /40 characters of Z85/);
        assert.throws (() => new Worker ({ curveServer, curveCert: path.join (dir, 'none') }),
                       /cannot read certificate/);
        assert.throws (() => new Client ({ curveServer, curveCert: path.join (dir, 'actd.cfg') }),
                       /has no CURVE public-key and secret-key/);
        process.env.ACTD_SERVER_KEY = curveServer;
        try {
            assert.throws (() => new Client (), /ACTD_SERVER_KEY and ACTD_CERT/);
        }
        finally {
            delete process.env.ACTD_SERVER_KEY;
        }
    });
});
