'use strict';
//  A broker cut off from PostgreSQL past two thirds of its lease that knew
//  no live broker to name (one joined after its last read of the database)
//  answers ERROR moved naming none (docs/protocol.md section 12). The
//  client sends the request at once to the next broker it knows of, never
//  back to that one, as it would after a timeout; with no other broker, or
//  once MAX_HOPS moved replies were followed, it rejects with the moved
//  error. It rejected at once, so its requests never reached the broker
//  that could serve them. The client's links are faked: no broker runs.

const { describe, it, afterEach } = require ('node:test');
const assert = require ('node:assert/strict');
const { Client } = require ('..');
const { MAX_HOPS } = require ('../lib/client_requests');

const A = 'tcp://127.0.0.1:1';
const B = 'tcp://127.0.0.1:2';

//  A client given endpoints whose requests are recorded, not sent:
//  client.sent holds [endpoint, command, request id] of each
function recording (endpoints) {
    const client = new Client ({ endpoints, timeoutMs: 0 });
    client.sent = [];
    client._link = (endpoint) => ({
        up: true,
        send: async (frames) => {
            client.sent.push ([endpoint, String (frames [1]), String (frames [2])]);
        },
        close () {}
    });
    return client;
}

function reply (client, endpoint, ...frames) {
    client._message (endpoint, ['ACTC01', ...frames].map ((frame) => Buffer.from (frame)));
}

//  APPEND to ctx, whose owner the client last saw at A: sent to A; its
//  promise and request id
function appendAtA (client) {
    client._owners.set ('ctx', A);
    const appended = client.append ('ctx', { type: 'text' });
    assert.deepEqual (client.sent.map (([endpoint, command]) => [endpoint, command]),
                      [[A, 'APPEND']]);
    const id = client.sent [0][2];
    client.sent = [];
    return { appended, id };
}

describe ('moved naming no broker', () => {
    let clients = [];

    afterEach (() => {
        for (const client of clients)
            client.close ();
        clients = [];
    });

    it ('sends the request to the next broker at once', async () => {
        const client = recording ([A, B]);
        clients.push (client);
        const { appended, id } = appendAtA (client);
        reply (client, A, 'ERROR', id, 'moved', '');
        assert.deepEqual (client.sent, [[B, 'APPEND', id]]);
        reply (client, B, 'OK', id, JSON.stringify ({ seq: 2 }));
        assert.equal (await appended, 2);
        assert.equal (client._owners.get ('ctx'), B);
    });

    it ('sends a STATUS to the next broker', async () => {
        const client = recording ([A, B]);
        clients.push (client);
        client._accepted.set ('c-1', A);
        const status = client.status ('c-1');
        status.catch (() => {});        //  Rejected (closed) at the end
        const id = client.sent [0][2];
        assert.deepEqual (client.sent, [[A, 'STATUS', id]]);
        client.sent = [];
        reply (client, A, 'ERROR', id, 'moved');
        assert.deepEqual (client.sent, [[B, 'STATUS', id]]);
    });

    it ('rejects with the moved error when there is no other broker', async () => {
        const client = recording ([A]);
        clients.push (client);
        const { appended, id } = appendAtA (client);
        reply (client, A, 'ERROR', id, 'moved', '');
        assert.deepEqual (client.sent, []);
        await assert.rejects (appended, (error) => error.code === 'moved'
                              && /named no other broker/.test (error.message));
    });

    it ('follows moved back and forth MAX_HOPS times, no more', async () => {
        //  The other broker names the cut-off one (its lease has not run
        //  out yet), which names none
        const client = recording ([A, B]);
        clients.push (client);
        const { appended, id } = appendAtA (client);
        let at = A;
        for (let hop = 0; hop < MAX_HOPS; hop++) {
            reply (client, at, 'ERROR', id, 'moved', at === A? '': A);
            at = at === A? B: A;
            assert.deepEqual (client.sent, [[at, 'APPEND', id]], `hop ${hop}`);
            client.sent = [];
        }
        reply (client, at, 'ERROR', id, 'moved', '');
        assert.deepEqual (client.sent, []);
        await assert.rejects (appended, (error) => error.code === 'moved'
                              && /named no other broker/.test (error.message));
    });
});
