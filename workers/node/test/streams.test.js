'use strict';
//  Streams and the lifecycle of contexts (PROTOCOL.md 1.1) against a real
//  actd: watch (), wait (), contexts (), delete (), append's key.

const { describe, it, before, after } = require ('node:test');
const assert = require ('node:assert/strict');
const fs = require ('node:fs');
const path = require ('node:path');
const { Worker, ActdError, NotFoundError } = require ('..');
const { Actd, until, gate, held } = require ('./actd');

const note = (n) => ({ type: 'data', kind: 'note', data: { n } });

//  The next count events of iterator (an async iterator being consumed)
async function take (iterator, count) {
    const events = [];
    while (events.length < count) {
        const { value, done } = await iterator.next ();
        assert.ok (!done, 'the watch ended after ' + JSON.stringify (events));
        events.push (value);
    }
    return events;
}

describe ('Streams', () => {
    let actd, client, other, worker;
    const hold = { gate: gate () };

    before (async () => {
        actd = await new Actd ().start ();
        client = actd.client ();
        other = actd.client ();
        worker = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200, capacity: 8,
                               name: 'streams-worker' });
        worker.activity ('upper', async ({ text }) => text.toUpperCase ());
        worker.activity ('held', held (hold));
        worker.run ();
        await until (async () => (await client.stats ()).workers.length === 1, 'the worker');
    });

    after (async () => {
        hold.gate.open ();
        await worker.stop ();
        client.close ();
        other.close ();
        await actd.finish ();
    });

    it ('watch () gives the backlog from 1, then live messages, in order', async () => {
        for (let n = 1; n <= 3; n++)
            await client.append ('s-watch', note (n));
        const watch = client.watch ('s-watch');
        const backlog = await take (watch, 3);
        for (let n = 4; n <= 5; n++)
            await other.append ('s-watch', note (n));
        const live = await take (watch, 2);
        await watch.return ();
        const events = [...backlog, ...live];
        assert.deepEqual (events.map ((event) => event.seq), [1, 2, 3, 4, 5]);
        assert.deepEqual (events.map ((event) => event.message.data.n), [1, 2, 3, 4, 5]);
        assert.deepEqual (events.map ((event) => event.message._seq), [1, 2, 3, 4, 5]);
    });

    it ('watch () with calls gives each change of state of a call', async () => {
        const watch = client.watch ('s-calls', { fromSeq: 0, calls: true });
        const first = watch.next ();    //  WATCH goes out before the CALL
        const outcome = await client.call ('s-calls', { _tool: 'upper', _outputPath: '†s.x',
                                                        text: 'a' });
        const events = [(await first).value];
        while (!events.some ((event) => event.call && event.call.state === 'ok'))
            events.push (...await take (watch, 1));
        await watch.return ();
        const calls = events.filter ((event) => event.call).map ((event) => event.call);
        assert.ok (calls.every ((call) => call.call_id === outcome.call_id));
        assert.deepEqual (calls [calls.length - 1].outcome, outcome);
        const messages = events.filter ((event) => event.seq);
        assert.deepEqual (messages.map ((event) => event.message._callId), [outcome.call_id]);
    });

    it ('leaving the loop ends the watch; the client goes on', async () => {
        await client.append ('s-break', note (1));
        for await (const event of client.watch ('s-break')) {
            assert.equal (event.seq, 1);
            break;
        }
        assert.equal (await client.append ('s-break', note (2)), 2);
        assert.equal (typeof await client.ping (), 'number');
    });

    it ('wait () of a call another client submitted: from a watch', async () => {
        const { callId } = await other.submit ('s-wait', { _tool: 'held', _outputPath: '†s.w' });
        await assert.rejects (client.wait (callId, { timeout: 300 }),
                              (error) => error instanceof ActdError && error.code === 'timeout');
        const waited = client.wait (callId);
        const mine = other.wait (callId);       //  Its DONE
        await until (async () => (await client.status (callId)).state === 'running', 'running');
        hold.gate.open ();
        const outcome = await waited;
        assert.equal (outcome.call_id, callId);
        assert.equal (outcome.status, 'ok');
        assert.equal (outcome.result, 'released');
        assert.deepEqual (await mine, outcome);
        assert.deepEqual (await client.wait (callId), outcome);     //  Ended: from STATUS
        await assert.rejects (client.wait ('999999'), NotFoundError);
    });

    it ('contexts () pages over 250 contexts with a prefix', async () => {
        const names = Array.from ({ length: 250 }, (_, n) => 'pg-' + String (n).padStart (3, '0'));
        await Promise.all (names.map ((name) => client.append (name, note (1))));
        await client.append ('ph-other', note (1));
        const listed = [];
        for await (const entry of client.contexts ({ prefix: 'pg-', limit: 100 }))
            listed.push (entry);
        assert.deepEqual (listed.map ((entry) => entry.context), names);
        for (const entry of listed) {
            assert.equal (entry.messages, 1);
            assert.equal (entry.last_seq, 1);
            assert.equal (entry.pending, 0);
            assert.equal (typeof entry.updated, 'string');
        }
    });

    it ('delete () cancels the calls, ends the watches and removes the context', async () => {
        await client.append ('s-del', note (1));
        hold.gate = gate ();
        const { callId, done } = await client.submit ('s-del', { _tool: 'held',
                                                                 _outputPath: '†s.d' });
        const watch = client.watch ('s-del');
        assert.equal ((await take (watch, 1)) [0].seq, 1);
        assert.deepEqual (await other.delete ('s-del'), { messages: 1, cancelled: 1 });
        assert.equal ((await done).status, 'cancelled');
        const rest = [];
        for await (const event of watch)
            rest.push (event);
        assert.deepEqual (rest, [{ deleted: true }]);
        await assert.rejects (client.status (callId), NotFoundError);
        await assert.rejects (client.delete ('s-del'), NotFoundError);
        assert.equal (await client.append ('s-del', note (2)), 1);
    });

    it ('append () twice with one key appends once', async () => {
        const first = await client.append ('s-key', note (1), { key: 'k-1' });
        const again = await other.append ('s-key', note (2), { key: 'k-1' });
        const next = await client.append ('s-key', note (3), { key: 'k-2' });
        assert.equal (again, first);
        assert.equal (next, first + 1);
        const seen = [];
        for await (const message of client.history ('s-key'))
            seen.push (message.data.n);
        assert.deepEqual (seen, [1, 3]);
    });
});

describe ('Streams across broker restarts and limits', () => {
    let actd, client;

    after (async () => {
        client.close ();
        await actd.finish ();
    });

    it ('watch () resumes after actd is killed and started again, without duplicates or gaps', async () => {
        actd = await new Actd ().start ();
        client = actd.client ();
        for (let n = 1; n <= 3; n++)
            await client.append ('s-restart', note (n));
        const watch = client.watch ('s-restart');
        const events = await take (watch, 2);   //  The third may be on its way
        await actd.kill ();
        await actd.start ();
        for (let n = 4; n <= 6; n++)
            await client.append ('s-restart', note (n));
        events.push (...await take (watch, 4));
        await actd.kill ();
        await actd.start ();
        await client.append ('s-restart', note (7));
        events.push (...await take (watch, 1));
        await watch.return ();
        assert.deepEqual (events.map ((event) => event.seq), [1, 2, 3, 4, 5, 6, 7]);
        assert.deepEqual (events.map ((event) => event.message.data.n), [1, 2, 3, 4, 5, 6, 7]);
    });

    it ('leaving a watch sends UNWATCH: with max_watches 1 the next watch is not busy', async () => {
        await actd.stopClean ();
        const config = path.join (actd.dir, 'actd.cfg');
        fs.writeFileSync (config, 'server\n    max_watches = 1\n');
        actd.args = ['--config', config];
        await actd.start ();
        await client.append ('s-one', note (1));
        const watch = client.watch ('s-one');
        await take (watch, 1);
        await assert.rejects (client.watch ('s-one').next (),
                              (error) => error instanceof ActdError && error.code === 'busy');
        await watch.return ();
        for (let round = 0; round < 3; round++)
            for await (const event of client.watch ('s-one')) {
                assert.equal (event.seq, 1);
                break;
            }
    });
});

//  close () with watches open that nobody ended sends UNWATCH for them
//  (docs/protocol.md section 2.6): actd learns that a socket closed only
//  when it sends to it, so before, each held its slot of max_watches until
//  its context's next event. And close () stays quick when actd is gone.
describe ('close () with watches open', () => {
    const WATCHES = 3;
    let actd;

    //  WATCHES watches of context by client, each past its first event
    async function opened (client, context) {
        const watches = [];
        for (let n = 0; n < WATCHES; n++)
            watches.push (client.watch (context));
        for (const watch of watches)
            assert.equal ((await watch.next ()).value.seq, 1);
        return watches;
    }

    before (async () => {
        actd = new Actd ();
        const config = path.join (actd.dir, 'actd.cfg');
        fs.writeFileSync (config, `server\n    max_watches = ${WATCHES}\n`);
        actd.args = ['--config', config];
        await actd.start ();
    });

    after (async () => {
        await actd.finish ();
    });

    it ('sends UNWATCH for them: a new client may open max_watches watches at once', async () => {
        const client = actd.client ();
        await client.append ('c-close', note (1));
        await opened (client, 'c-close');
        await client.close ();
        //  No event came to the context: only the UNWATCHes freed the slots
        const other = actd.client ();
        try {
            for (const watch of await opened (other, 'c-close'))
                await watch.return ();
        }
        finally {
            await other.close ();
        }
    });

    it ('returns within 2 s when actd is gone', async () => {
        const gone = await new Actd ().start ();
        try {
            const client = gone.client ();
            await client.append ('c-gone', note (1));
            await opened (client, 'c-gone');
            await gone.kill ();
            const start = Date.now ();
            await client.close ();
            assert.ok (Date.now () - start < 2000, `close () took ${Date.now () - start} ms`);
        }
        finally {
            gone.cleanup ();
        }
    });
});
