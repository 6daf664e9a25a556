'use strict';
//  No broker ever reached: a request's timeout says what the connection
//  attempts saw (refused, or a handshake that failed), and a connection
//  closed at its handshake does not reject the requests waiting as
//  disconnected (none was sent on it). No actd: nothing listening, or a
//  ROUTER with CURVE of its own keys.

const { describe, it, afterEach } = require ('node:test');
const assert = require ('node:assert/strict');
const fs = require ('node:fs');
const os = require ('node:os');
const path = require ('node:path');
const zmq = require ('zeromq');
const { Client } = require ('..');
const { freePort } = require ('./actd');

//  Short: nothing will answer; long enough for libzmq's first attempts
//  (it retries a refused connection after 100 ms)
const WAIT_MS = 1500;
const REFUSED = '(refused: is actd listening there?)';
const HANDSHAKE = '(the handshake failed: are both ends on CURVE, with the broker\'s public key?)';

describe ('A client that never reached a broker', () => {
    const cleanups = [];

    afterEach (async () => {
        while (cleanups.length)
            await cleanups.pop () ();
    });

    //  The error of a PING to endpoint (a client with options)
    async function pingError (endpoint, options = {}) {
        const client = new Client ({ endpoint, timeoutMs: WAIT_MS, ...options });
        cleanups.push (() => client.close ());
        const start = Date.now ();
        const error = await client.ping ().then (() => null, (problem) => problem);
        assert.ok (Date.now () - start < WAIT_MS + 2000);
        assert.ok (error, 'PING answered');
        return error;
    }

    it ('says the connection was refused when a request times out', async () => {
        const endpoint = 'tcp://127.0.0.1:' + await freePort ();
        const error = await pingError (endpoint);
        assert.equal (error.code, 'request_timeout');
        assert.equal (error.message, `no reply to PING within ${WAIT_MS} ms: the request may or `
            + `may not have been carried out: no connection to ${endpoint} was ever made `
            + REFUSED);
    });

    it ('says the handshake failed with a broker of another CURVE key, '
        + 'and does not fail the request as disconnected', async () => {
        const server = zmq.curveKeyPair ();
        const router = new zmq.Router ({ curveServer: true, curveSecretKey: server.secretKey,
                                         curvePublicKey: server.publicKey });
        const port = await freePort ();
        const endpoint = 'tcp://127.0.0.1:' + port;
        await router.bind (endpoint);
        cleanups.push (() => router.close ());
        const mine = zmq.curveKeyPair ();
        const dir = fs.mkdtempSync (path.join (os.tmpdir (), 'actd-node-unreached-'));
        cleanups.push (() => fs.rmSync (dir, { recursive: true, force: true }));
        const cert = path.join (dir, 'client.key');
        fs.writeFileSync (cert, `curve\n    public-key = "${mine.publicKey}"\n`
                                + `    secret-key = "${mine.secretKey}"\n`);
        const error = await pingError (endpoint, { curveServer: zmq.curveKeyPair ().publicKey,
                                                   curveCert: cert });
        assert.equal (error.code, 'request_timeout');
        assert.equal (error.message, `no reply to PING within ${WAIT_MS} ms: the request may or `
            + `may not have been carried out: no connection to ${endpoint} was ever made `
            + HANDSHAKE);
    });
});
