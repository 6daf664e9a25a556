'use strict';
//  A client given one endpoint, told moved to an owner that does not answer
//  (killed, its lease not yet run out), sends the request back to another
//  broker after the several-endpoints default of requestTimeoutMs (5000),
//  as the C library does after a third of its timeout, rather than waiting
//  the whole of timeoutMs for the dead one; unless requestTimeoutMs was
//  given, 0 included. A CALL without an _id that it sends on to the owner
//  gets a random one (the moved broker stored nothing), so that sending it
//  back cannot run it twice. A watch whose broker dropped goes on at the
//  other at once, and one moved to an owner not connected goes on at
//  another after requestTimeoutMs. The client's request routing is driven by hand (its
//  links faked, its clock.now on a clock the test moves), then once against
//  scripted brokers in real time.

const { describe, it, afterEach } = require ('node:test');
const assert = require ('node:assert/strict');
const { Client } = require ('..');
const { ScriptedBroker } = require ('./actd');
const clock = require ('../lib/clock');

const A = 'tcp://127.0.0.1:1';
const B = 'tcp://127.0.0.1:2';
const STATUS = { call_id: 'c-1', context: 'ctx', state: 'queued', attempts: 0 };
const CALL = { _tool: 't', x: 1, note: '\u2020' };
const UUID = /^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$/;
const realNow = Date.now;
const realClock = clock.now;

//  A client given endpoint A whose requests are recorded, not sent:
//  client.sent holds [endpoint, command, request id] of each, client.frames
//  [endpoint, frames as strings]
function recording (options = {}) {
    const client = new Client ({ endpoint: A, timeoutMs: 0, ...options });
    client.sent = [];
    client.frames = [];
    client._link = (endpoint) => ({
        up: true,
        send: async (frames) => {
            client.sent.push ([endpoint, String (frames [1]), String (frames [2])]);
            client.frames.push ([endpoint, frames.map (String)]);
        },
        close () {}
    });
    return client;
}

function reply (client, endpoint, ...frames) {
    client._message (endpoint, ['ACTC01', ...frames].map ((frame) => Buffer.from (frame)));
}

//  STATUS of call c-1, sent to A, answered moved to B: its promise and
//  request id (the request is then at B)
function statusMoved (client) {
    const status = client.status ('c-1');
    assert.deepEqual (client.sent.map (([endpoint, command]) => [endpoint, command]),
                      [[A, 'STATUS']]);
    const id = client.sent [0][2];
    reply (client, A, 'ERROR', id, 'moved', B);
    assert.deepEqual (client.sent.slice (1), [[B, 'STATUS', id]]);
    assert.deepEqual (client.endpoints, [A, B]);
    client.sent = [];
    return { status, id };
}

describe ('moved to an owner that does not answer', () => {
    let now = 0;
    let clients = [];

    function fakeClock () {
        now = 1e9;
        clock.now = () => now;
    }

    afterEach (() => {
        clock.now = realClock;
        for (const client of clients)
            client.close ();
        clients = [];
    });

    it ('goes back to the other broker after 5000 ms by default with one endpoint', async () => {
        fakeClock ();
        const client = recording ();
        clients.push (client);
        assert.equal (client.requestTimeoutMs, 0);
        const { status, id } = statusMoved (client);
        assert.equal (client.requestTimeoutMs, 5000);
        now += 4500;
        client._scan ();
        assert.deepEqual (client.sent, []);
        now += 1000;
        client._scan ();
        assert.deepEqual (client.sent, [[A, 'STATUS', id]]);
        //  A, the survivor, took the context over by then: its answer settles it
        reply (client, A, 'VALUE', id, JSON.stringify (STATUS));
        assert.equal ((await status).state, 'queued');
    });

    it ('keeps requestTimeoutMs 0 when it was given', async () => {
        fakeClock ();
        const client = recording ({ requestTimeoutMs: 0 });
        clients.push (client);
        const { status } = statusMoved (client);
        status.catch (() => {});        //  Rejected (closed) at the end
        assert.equal (client.requestTimeoutMs, 0);
        now += 1000000;
        client._scan ();
        assert.deepEqual (client.sent, []);
    });

    it ('keeps a requestTimeoutMs that was given', async () => {
        fakeClock ();
        const client = recording ({ requestTimeoutMs: 30000 });
        clients.push (client);
        const { status, id } = statusMoved (client);
        status.catch (() => {});
        assert.equal (client.requestTimeoutMs, 30000);
        now += 10000;
        client._scan ();
        assert.deepEqual (client.sent, []);
        now += 21000;
        client._scan ();
        assert.deepEqual (client.sent, [[A, 'STATUS', id]]);
    });

    //  command with body, sent to A, answered moved to B: its promise,
    //  request id and the frames sent [to A, to B]
    function submitMoved (client, command, body) {
        const submitted = command === 'CALL'? client.submit ('ctx', body)
                                            : client.submitPlan ('ctx', body);
        submitted.catch (() => {});     //  Rejected (closed) at the end
        const id = client.sent [0][2];
        reply (client, A, 'ERROR', id, 'moved', B);
        assert.deepEqual (client.frames.map (([endpoint]) => endpoint), [A, B]);
        const frames = client.frames.map (([, frames]) => frames);
        client.sent = [];
        client.frames = [];
        return { submitted, id, frames };
    }

    it ('gives a CALL it sends on to the owner an _id, kept when it is sent back', async () => {
        fakeClock ();
        const client = recording ();
        clients.push (client);
        const { submitted, id, frames: [toA, toB] } = submitMoved (client, 'CALL', CALL);
        const first = JSON.parse (toA [4]);
        const second = JSON.parse (toB [4]);
        assert.deepEqual (first, CALL);                 //  One broker known: none
        assert.match (second._id, UUID);
        delete second._id;
        assert.deepEqual (second, CALL);
        assert.deepEqual (toB.slice (0, 4), toA.slice (0, 4));
        //  The owner silent: sent back to A, the same call (its _id)
        now += 5500;
        client._scan ();
        assert.deepEqual (client.frames, [[A, toB]]);
        reply (client, A, 'ACCEPTED', id, '7');
        assert.equal ((await submitted).callId, '7');
    });

    it ('keeps an _id given, and sends a PLAN on as it was', async () => {
        fakeClock ();
        const client = recording ();
        clients.push (client);
        const given = submitMoved (client, 'CALL', { ...CALL, _id: 'mine' });
        assert.deepEqual (given.frames [1], given.frames [0]);
        const other = recording ();     //  ctx's owner not known yet
        clients.push (other);
        const plan = submitMoved (other, 'PLAN', [CALL]);
        assert.deepEqual (plan.frames [1], plan.frames [0]);
    });

    it ('gives a CALL an _id when sent on, against scripted brokers', async () => {
        const calls = [];
        const owner = await new ScriptedBroker ().start ((frames) => {
            if (String (frames [1]) !== 'CALL')
                return null;
            calls.push (JSON.parse (frames [4]));
            return ['ACTC01', 'ACCEPTED', frames [2], '7'];
        });
        const first = await new ScriptedBroker ().start ((frames) => {
            if (String (frames [1]) !== 'CALL')
                return null;
            calls.push (JSON.parse (frames [4]));
            return ['ACTC01', 'ERROR', frames [2], 'moved', owner.endpoint];
        });
        const client = new Client ({ endpoint: first.endpoint, timeoutMs: 5000 });
        try {
            assert.equal (await client.call ('ctx', CALL, { wait: false }), '7');
            assert.equal (calls.length, 2, JSON.stringify (calls));
            assert.deepEqual (calls [0], CALL);         //  One broker known: none
            assert.match (calls [1]._id, UUID);         //  Sent on to the owner
            const { _id, ...rest } = calls [1];
            assert.deepEqual (rest, calls [0]);
            //  Two brokers known now: a later call, straight to the owner
            //  (which may go silent), gets an _id of its own too
            assert.equal (await client.call ('ctx', CALL, { wait: false }), '7');
            assert.equal (calls.length, 3, JSON.stringify (calls));
            assert.match (calls [2]._id, UUID);
            assert.notEqual (calls [2]._id, calls [1]._id);
        }
        finally {
            client.close ();
            first.close ();
            owner.close ();
        }
    });

    it ('gets its answer from the live broker within 5 s, against scripted brokers', async () => {
        const dead = await new ScriptedBroker ().start ();     //  Says nothing
        const live = await new ScriptedBroker ().start ();
        let statuses = 0;
        live.answer = (frames) => ++statuses === 1
            ? ['ACTC01', 'ERROR', frames [2], 'moved', dead.endpoint]
            : ['ACTC01', 'VALUE', frames [2], JSON.stringify (STATUS)];
        const client = new Client ({ endpoint: live.endpoint, timeoutMs: 15000 });
        try {
            const started = realNow ();
            assert.equal ((await client.status ('c-1')).state, 'queued');
            assert.ok (realNow () - started < 10000, `answered after ${realNow () - started} ms`);
            assert.equal (client.requestTimeoutMs, 5000);
            assert.deepEqual (client.endpoints, [live.endpoint, dead.endpoint]);
            assert.deepEqual (dead.commands (), ['STATUS']);
            assert.deepEqual (live.commands (), ['STATUS', 'STATUS']);
        }
        finally {
            client.close ();
            dead.close ();
            live.close ();
        }
    });

    //  A watch of ctx at A, given endpoints A and B, its first event
    //  taken: its iterator, and the request id of its WATCH
    async function watching (client) {
        client._owners.set ('ctx', A);
        const events = client.watch ('ctx');
        const first = events.next ();
        assert.deepEqual (client.sent.map (([endpoint, command]) => [endpoint, command]),
                          [[A, 'WATCH']]);
        const id = client.sent [0][2];
        reply (client, A, 'EVENT', id, '{"seq": 1}');
        assert.deepEqual ((await first).value, { seq: 1 });
        client.sent = [];
        return { events, id };
    }

    //  Let the watch's iterator run its turn
    const settle = () => new Promise ((resolve) => setImmediate (resolve));

    it ('watches at the other broker at once when the watch\'s broker dropped', async () => {
        fakeClock ();
        const client = recording ({ endpoints: [A, B] });
        clients.push (client);
        const { events } = await watching (client);
        const next = events.next ();
        next.catch (() => {});          //  Rejected (closed) at the end
        client._disconnected (A);
        await settle ();
        assert.deepEqual (client.sent.map (([endpoint, command]) => [endpoint, command]),
                          [[A, 'UNWATCH'], [B, 'WATCH']]);
    });

    it ('watches at another broker when moved to an owner not connected', async () => {
        fakeClock ();
        const client = recording ({ endpoints: [A, B] });
        clients.push (client);
        const { events } = await watching (client);
        const next = events.next ();
        next.catch (() => {});
        client._disconnected (A);
        await settle ();
        const id = client.sent [1][2];
        client.sent = [];
        //  B answers moved to A, the dead owner, its lease not yet out
        reply (client, B, 'ERROR', id, 'moved', A);
        assert.deepEqual (client.sent, [[A, 'WATCH', id]]);
        client.sent = [];
        //  The UNWATCH of the first WATCH is given up after 2000 ms (a
        //  timer on the real clock, which this test does not move)
        for (const [key, request] of client._pending)
            if (request.command === 'UNWATCH')
                client._pending.delete (key);
        now += 4500;
        client._scan ();
        await settle ();
        assert.deepEqual (client.sent, []);
        now += 1000;
        client._scan ();
        await settle ();
        assert.deepEqual (client.sent.map (([endpoint, command]) => [endpoint, command]),
                          [[A, 'UNWATCH'], [B, 'WATCH']]);
        //  Its events come from B, from the message after the last given
        const again = client.sent [1][2];
        assert.deepEqual (client.frames.at (-1) [1].slice (3), ['ctx', '2', 'messages']);
        reply (client, B, 'EVENT', again, '{"seq": 2}');
        assert.deepEqual ((await next).value, { seq: 2 });
    });
});
