'use strict';
//  call () and plan () with wait, for a call without _outputPath to a tool
//  that prescribes one (PROTOCOL.md section 2.1, "outputPath": {"const":
//  path}): the client learns the path from TOOLS (kept PRESCRIBED_MS per
//  activity), sends the call with it and resolves with the outcome;
//  against a real actd and a real worker.

const { describe, it, before, after } = require ('node:test');
const assert = require ('node:assert/strict');
const { Worker } = require ('..');
const { PRESCRIBED_MS } = require ('../lib/client');
const clock = require ('../lib/clock');
const { Actd, until } = require ('./actd');

//  The commands client sends from now on, in order (its _request, which
//  every request goes through, is wrapped)
function countRequests (client) {
    const sent = [];
    const request = client._request;
    client._request = function (command, ...rest) {
        sent.push (command);
        return request.call (this, command, ...rest);
    };
    return sent;
}

describe ('prescribed output paths', () => {
    let actd, client, worker;

    before (async () => {
        actd = await new Actd ().start ();
        client = actd.client ();
        worker = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200, liveness: 3,
                               name: 'prescribed-node' });
        worker.activity ('summarize', ({ text }) => 'summary of ' + text,
                         { outputPath: { const: '†state.summary' } });
        worker.activity ('note', ({ text }) => text ?? '');
        worker.run ();
        await until (async () => (await client.stats ()).workers.some (
            (w) => w.name === 'prescribed-node'), 'prescribed-node in STATS');
    });

    after (async () => {
        await worker.stop ();
        client.close ();
        await actd.finish ();
    });

    it ('call () waits for the outcome of a prescribed path, asking TOOLS once a period', async () => {
        const mine = actd.client ();
        try {
            const sent = countRequests (mine);
            const given = { _tool: 'summarize', text: 'x' };
            const outcome = await mine.call ('n-presc', given);
            assert.equal (typeof outcome, 'object');
            assert.equal (outcome.status, 'ok');
            assert.deepEqual (outcome.written, ['†state.summary']);
            assert.equal (outcome.result, 'summary of x');
            assert.deepEqual (given, { _tool: 'summarize', text: 'x' });   //  Not changed
            assert.deepEqual (sent, ['TOOLS', 'CALL']);
            //  Within the period: no second TOOLS
            const again = await mine.call ('n-presc', { _tool: 'summarize', text: 'y' });
            assert.deepEqual (again.written, ['†state.summary']);
            assert.equal (await mine.resolve ('n-presc', '†state.summary'), 'summary of y');
            assert.deepEqual (sent.filter ((c) => c === 'TOOLS').length, 1);
            //  Without wait, or with _outputPath given: no TOOLS, as before
            const id = await mine.call ('n-presc', { _tool: 'summarize', text: 'z' }, { wait: false });
            assert.equal (typeof id, 'string');
            assert.deepEqual ((await mine.wait (id)).written, ['†state.summary']);
            const given2 = await mine.call ('n-presc', { _tool: 'summarize', text: 'w',
                                                         _outputPath: '†state.summary' });
            assert.equal (given2.status, 'ok');
            assert.equal (sent.filter ((c) => c === 'TOOLS').length, 1);
            //  A tool without prescription: fire-and-forget, the call id
            const noteId = await mine.call ('n-presc', { _tool: 'note', text: 'n' });
            assert.equal (typeof noteId, 'string');
            assert.equal ((await mine.wait (noteId)).status, 'ok');
            await mine.call ('n-presc', { _tool: 'note', text: 'n' });
            assert.equal (sent.filter ((c) => c === 'TOOLS').length, 2);
            //  Once the period has passed, TOOLS is asked again
            mine._prescriptions.get ('summarize').until = clock.now () - 1;
            await mine.call ('n-presc', { _tool: 'summarize', text: 'v' });
            assert.equal (sent.filter ((c) => c === 'TOOLS').length, 3);
            assert.equal (PRESCRIBED_MS, 2000);
        }
        finally {
            mine.close ();
        }
    });

    it ('plan () gives each call its prescribed path', async () => {
        const mine = actd.client ();
        try {
            const sent = countRequests (mine);
            const results = await mine.plan ('n-presc-plan', [{ _tool: 'summarize', text: 'a' },
                                                             { _tool: 'note', text: 'b' },
                                                             { _tool: 'summarize', text: 'c' }]);
            assert.deepEqual (results [0].written, ['†state.summary']);
            assert.equal (typeof results [1], 'string');
            assert.equal (results [2].result, 'summary of c');
            assert.deepEqual (sent, ['TOOLS', 'TOOLS', 'PLAN']);
            const ids = await mine.plan ('n-presc-plan', [{ _tool: 'summarize', text: 'd' }],
                                         { wait: false });
            assert.equal (typeof ids [0], 'string');
            assert.equal (sent.filter ((c) => c === 'TOOLS').length, 2);
        }
        finally {
            mine.close ();
        }
    });
});
