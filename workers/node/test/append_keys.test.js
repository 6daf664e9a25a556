'use strict';
//  An APPEND without a key, from a client that may send it again (several
//  brokers known, or a moved reply sending it on), is given one: a random
//  UUID chosen once per append () and kept across every resend, so a retry
//  at another broker after a timeout is the same APPEND, which actd stores
//  once (PROTOCOL.md section 2). A key given is kept; with one broker and
//  no resend possible nothing is added (keys are stored with the context
//  for good).
//
//  Scripted brokers record the APPEND frames; a relay in front of a real
//  actd shows the outcome: the first APPEND reaches actd but its reply is
//  lost, the client sends it again to actd itself, and the context holds
//  the message once.

const { describe, it, afterEach } = require ('node:test');
const assert = require ('node:assert/strict');
const { Client } = require ('..');
const { rendezvous } = require ('../lib/route');
const { Actd, ScriptedBroker, lossyRelay, collect } = require ('./actd');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const MESSAGE = { type: 'data', kind: 'k', data: { n: 1 } };
const REQUEST_TIMEOUT_MS = 500;

//  Answer an APPEND with OK {"seq":1}, nothing else
function okSeq (frames) {
    return String (frames [1]) === 'APPEND'? ['ACTC01', 'OK', frames [2], '{"seq":1}']: null;
}

//  The APPEND requests broker received, each as its frames from the context on
function appends (broker) {
    return broker.received.filter ((frames) => frames [1] === 'APPEND')
                          .map ((frames) => frames.slice (3));
}

//  A context id whose rendezvous order puts endpoint first
function contextFirstAt (endpoints, endpoint, prefix) {
    let number = 0;
    while (rendezvous (endpoints, prefix + '-' + number) [0] !== endpoint)
        number++;
    return prefix + '-' + number;
}

describe ('APPEND keys, with scripted brokers', () => {
    let closing = [];

    afterEach (() => {
        for (const item of closing)
            item.close ();
        closing = [];
    });

    async function brokers (...answers) {
        const made = [];
        for (const answer of answers)
            made.push (await new ScriptedBroker ().start (answer));
        closing.push (...made);
        return made;
    }

    //  append (options) to a broker that never answers, then (after
    //  requestTimeoutMs) to one that answers: the frames each got
    async function silentThenLive (options) {
        const [silent, live] = await brokers (null, okSeq);
        const endpoints = [silent.endpoint, live.endpoint];
        const context = contextFirstAt (endpoints, silent.endpoint, 'node-retried');
        const client = new Client ({ endpoints, requestTimeoutMs: REQUEST_TIMEOUT_MS });
        closing.push (client);
        assert.equal (await client.append (context, MESSAGE, options), 1);
        //  Once to each at least (more should the live one be slow)
        assert.ok (appends (silent).length && appends (live).length,
                   JSON.stringify ([silent.received, live.received]));
        return [...appends (silent), ...appends (live)];
    }

    it ('an APPEND sent again after a timeout keeps the key it was given', async () => {
        const [first, ...again] = await silentThenLive ();
        assert.equal (first.length, 3, JSON.stringify (first));
        assert.match (first [2], UUID);
        assert.deepEqual (again, again.map (() => first));
        assert.deepEqual (JSON.parse (first [1]), MESSAGE);
    });

    it ('a key given is kept', async () => {
        const [first, ...again] = await silentThenLive ({ key: 'mine' });
        assert.deepEqual (first.slice (2), ['mine']);
        assert.deepEqual (again, again.map (() => first));
    });

    it ('each append gets a key of its own', async () => {
        const [one, other] = await brokers (okSeq, okSeq);
        const client = new Client ({ endpoints: [one.endpoint, other.endpoint] });
        closing.push (client);
        await client.append ('ctx', MESSAGE);
        await client.append ('ctx', MESSAGE);
        const keys = [...appends (one), ...appends (other)].map ((frames) => frames [2]);
        assert.equal (keys.length, 2);
        assert.notEqual (keys [0], keys [1]);
    });

    it ('a client given one broker adds no key', async () => {
        const [live] = await brokers (okSeq);
        const client = new Client ({ endpoint: live.endpoint });
        closing.push (client);
        assert.equal (await client.append ('ctx', MESSAGE), 1);
        assert.deepEqual (appends (live).map ((frames) => frames.length), [2]);
    });

    it ('an APPEND sent on after moved gets a key', async () => {
        //  The moved broker stored nothing, but the owner may store the
        //  APPEND and fall silent, and the client send it on again
        const [owner] = await brokers (okSeq);
        const [first] = await brokers ((frames) =>
            ['ACTC01', 'ERROR', frames [2], 'moved', owner.endpoint]);
        const client = new Client ({ endpoint: first.endpoint });
        closing.push (client);
        assert.equal (await client.append ('ctx', MESSAGE), 1);
        const [toFirst] = appends (first);
        const [toOwner] = appends (owner);
        assert.equal (toFirst.length, 2);                   //  One broker known: none
        assert.deepEqual (toOwner.slice (0, 2), toFirst);
        assert.match (toOwner [2], UUID);
    });
});

describe ('APPEND keys, with one actd behind a relay', () => {
    it ('an APPEND retried after a lost reply is stored once', async () => {
        const actd = await new Actd ().start ();
        const relay = await lossyRelay (actd.clientEndpoint);
        const endpoints = [relay.endpoint, actd.clientEndpoint];
        const context = contextFirstAt (endpoints, relay.endpoint, 'node-once');
        const client = new Client ({ endpoints, requestTimeoutMs: 1000 });
        try {
            assert.equal (await client.append (context, MESSAGE), 1);
            assert.ok (appends (relay).length);             //  It reached actd first
            const history = await collect (client.history (context));
            assert.deepEqual (history.map ((m) => m._seq), [1]);
        }
        finally {
            client.close ();
            relay.close ();
            await actd.finish ();
        }
    });
});
