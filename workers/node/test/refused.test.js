'use strict';
//  A broker that refuses the worker's READY (docs/protocol.md section 3.8:
//  a DISCONNECT that answers READY itself), against a scripted ROUTER: the
//  worker waits before it connects again, 100 ms doubling up to 5 s, says
//  why each time, and a connection the broker keeps starts the wait again.
//  And READY's bounds (section 3.2), checked before any socket opens.

const { describe, it, afterEach } = require ('node:test');
const assert = require ('node:assert/strict');
const { Worker } = require ('..');
const { Actd, ScriptedBroker, until, sleep } = require ('./actd');

const REFUSAL = ['ACTW01', 'DISCONNECT', 'capacity: not taken here'];
const REFUSED = /^the broker refused READY \(capacity: not taken here\); connecting again in (\d+) ms$/;

describe ('A broker that refuses READY', () => {
    let broker, worker;

    afterEach (async () => {
        if (worker)
            await worker.stop ();
        worker = null;
        if (broker)
            broker.close ();
        broker = null;
    });

    //  A scripted broker; answer (n) gives the reply to the nth READY (1
    //  first); readies holds when each came
    async function refusing (answer = () => REFUSAL) {
        const readies = [];
        broker = await new ScriptedBroker ().start ((frames) => {
            if (String (frames [1]) !== 'READY')
                return null;
            readies.push (Date.now ());
            return answer (readies.length);
        });
        return readies;
    }

    //  A worker of the broker, with its 'disconnect' reasons and warnings
    function serve (options = {}) {
        worker = new Worker ({ endpoint: broker.endpoint, name: 'refused', ...options });
        worker.activity ('a', () => 1);
        const reasons = [], warnings = [];
        worker.on ('disconnect', (reason, endpoint) => {
            assert.equal (endpoint, broker.endpoint);
            reasons.push (reason);
        });
        worker.on ('warning', (error) => warnings.push (error.message));
        return { reasons, warnings, done: worker.run () };
    }

    it ('sends READY again after a wait that doubles, a handful in 2.5 s, not hundreds', async () => {
        const readies = await refusing ();
        const { reasons, warnings } = serve ();
        await sleep (2500);
        const count = readies.length;
        //  READYs at 0, 100, 300, 700 and 1500 ms; the old library sent one
        //  at once for each DISCONNECT, thousands a second
        assert.ok (count >= 3 && count <= 10, 'READYs in 2.5 s: ' + count);
        assert.deepEqual (broker.commands ().filter ((command) => command !== 'READY'), []);
        //  Each refusal says why, and how long the worker waits
        const waits = reasons.map ((reason) => Number ((REFUSED.exec (reason) || []) [1]));
        assert.deepEqual (waits, [100, 200, 400, 800, 1600, 3200].slice (0, reasons.length),
                          'reasons: ' + reasons.join (' | '));
        assert.ok (reasons.length >= count - 1, `${reasons.length} reasons, ${count} READYs`);
        const gaps = readies.slice (1).map ((at, n) => at - readies [n]);
        for (const [n, gap] of gaps.entries ())
            assert.ok (gap >= 95 * 2 ** n, 'gaps ' + gaps);
        assert.deepEqual (warnings, []);
    });

    it ('waits 5 s at most', async () => {
        await refusing ();
        //  As after six refusals in a row (100 ... 3200 ms), without the 6 s
        worker = new Worker ({ endpoint: broker.endpoint, name: 'refused' });
        worker.activity ('a', () => 1);
        worker._connections [0].pause = 3200;
        const reasons = [];
        worker.on ('disconnect', (reason) => reasons.push (reason));
        worker.run ();
        await until (() => reasons.length, 'the refusal');
        assert.match (reasons [0], /connecting again in 5000 ms$/);
        assert.equal (broker.commands ().length, 1);
    });

    it ('connects again at once after a connection the broker kept, and the next refusal waits 100 ms', async () => {
        //  The 4th READY is taken (a HEARTBEAT comes), then that connection
        //  is dropped; every other READY is refused
        const readies = await refusing ((n) => n === 4
            ? [['ACTW01', 'HEARTBEAT'], ['ACTW01', 'DISCONNECT', 'go away']]: REFUSAL);
        const { reasons, warnings } = serve ();
        await until (() => readies.length >= 6, 'six READYs', 10000);
        const gaps = readies.slice (1, 6).map ((at, n) => at - readies [n]);
        assert.deepEqual (reasons.slice (0, 5).map ((reason) => (REFUSED.exec (reason) || [, reason]) [1]),
                          ['100', '200', '400', 'the broker sent DISCONNECT: go away', '100']);
        //  The reasons say at once, then 100 ms again (not 800 and 1600);
        //  the gaps are only checked from below: a loaded machine makes
        //  any of them longer
        assert.ok (gaps [0] >= 95 && gaps [1] >= 195 && gaps [2] >= 395, 'gaps ' + gaps);
        assert.ok (gaps [4] >= 95, 'gaps ' + gaps);
        assert.deepEqual (warnings, []);
    });

    it ('stops cleanly when a \'disconnect\' listener stops the worker', async () => {
        const readies = await refusing ();
        worker = new Worker ({ endpoint: broker.endpoint, name: 'refused' });
        worker.activity ('a', () => 1);
        const warnings = [];
        worker.on ('warning', (error) => warnings.push (error.message));
        worker.on ('disconnect', () => worker.stop ());
        await worker.run ();
        await sleep (300);
        assert.equal (readies.length, 1);
        assert.deepEqual (warnings, []);
    });
});

describe ('actd refusing READY', () => {
    it ('gets READY again after a growing wait, the reason naming the schema keyword', async () => {
        const actd = await new Actd ().start ();
        const worker = new Worker ({ endpoint: actd.workerEndpoint, name: 'refused-by-actd',
                                     heartbeatMs: 200, liveness: 3 });
        try {
            worker.activity ('strict', () => 1,
                             { params: { type: 'object', unevaluatedProperties: false } });
            const reasons = [];
            worker.on ('disconnect', (reason) => reasons.push (reason));
            worker.run ();
            await sleep (2000);
            //  READYs at 0, 100, 300, 700 and 1500 ms
            assert.ok (worker.connections >= 3 && worker.connections <= 8,
                       'READYs in 2 s: ' + worker.connections);
            assert.ok (reasons.length >= 3, 'reasons: ' + reasons.join (' | '));
            for (const [n, reason] of reasons.entries ())
                assert.match (reason, new RegExp ('^the broker refused READY \\(.*unevaluatedProperties.*\\);'
                                                  + ' connecting again in ' + 100 * 2 ** n + ' ms$'));
            const client = actd.client ();
            try {
                assert.deepEqual ((await client.stats ()).workers, []);
            }
            finally {
                client.close ();
            }
        }
        finally {
            await worker.stop ();
            await actd.finish ();
        }
    });
});

describe ('READY\'s bounds', () => {
    it ('throws a TypeError at once for a capacity outside 1..100000', () => {
        for (const capacity of [100001, 1e9, 0, 1.5, '4'])
            assert.throws (() => new Worker ({ endpoint: 'tcp://127.0.0.1:1', capacity }),
                           { name: 'TypeError', message: 'capacity is an integer from 1 to 100000' },
                           'capacity ' + capacity);
        assert.equal (new Worker ({ endpoint: 'tcp://127.0.0.1:1', capacity: 100000 }).capacity, 100000);
    });

    it ('throws a TypeError at once for a name longer than 256 bytes', () => {
        for (const name of ['n'.repeat (257), 'é'.repeat (129), 42])
            assert.throws (() => new Worker ({ endpoint: 'tcp://127.0.0.1:1', name }),
                           { name: 'TypeError',
                             message: 'a worker\'s name is a string of up to 256 bytes' },
                           'name ' + name);
        for (const name of ['n'.repeat (256), 'é'.repeat (128)])
            assert.equal (new Worker ({ endpoint: 'tcp://127.0.0.1:1', name }).name, name);
    });

    it ('throws a TypeError at once for an activity name outside 1..256 bytes', () => {
        const worker = new Worker ({ endpoint: 'tcp://127.0.0.1:1' });
        for (const name of ['a'.repeat (257), 'é'.repeat (129), '', 7])
            assert.throws (() => worker.activity (name, () => 1),
                           { name: 'TypeError',
                             message: 'an activity name is a string of 1 to 256 bytes' },
                           'activity ' + name);
        worker.activity ('a'.repeat (256), () => 1).activity ('é'.repeat (128), () => 2);
        assert.deepEqual (worker.activities, ['a'.repeat (256), 'é'.repeat (128)]);
    });
});
