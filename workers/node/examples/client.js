#!/usr/bin/env node
//  An actd client: calls the example worker's activities in one context and
//  prints what the context holds afterwards.
//
//  node examples/client.js [--endpoint EP] [--context ID]
//                          [--curve-server KEY --curve-cert FILE]
//
//  The endpoint defaults to $ACTD_ENDPOINT, else tcp://127.0.0.1:5555;
//  CURVE's broker public key and this client's certificate file to
//  $ACTD_SERVER_KEY and $ACTD_CERT.
'use strict';
const { parseArgs } = require ('node:util');
const { Client } = require ('actd');

//  A Z85 key may start with '-', which parseArgs takes for an option:
//  "--curve-server KEY" is read as "--curve-server=KEY"
const args = process.argv.slice (2).flatMap ((arg, i, all) =>
    all [i - 1] === '--curve-server'? []
    : arg === '--curve-server' && i + 1 < all.length? [arg + '=' + all [i + 1]]: [arg]);

const { values: options } = parseArgs ({ args, options: {
    endpoint: { type: 'string' },
    context: { type: 'string', default: 'example-' + Date.now () },
    'curve-server': { type: 'string' },
    'curve-cert': { type: 'string' }
} });

async function main () {
    const client = new Client ({ endpoints: options.endpoint,
                                 curveServer: options ['curve-server'],
                                 curveCert: options ['curve-cert'] });
    const context = options.context;
    try {
        console.log ('ping: %s ms', (await client.ping ()).toFixed (2));

        //  Put the user's request into the context
        await client.append (context, { type: 'data', kind: 'request',
                                        data: { text: 'hello, world', city: 'Lisbon' } });

        //  One call; the text comes from the context by reference
        const upper = await client.call (context, {
            _tool: 'upper', _outputPath: '†state.shout', text: '†request.text' });
        console.log ('upper: %s -> %j', upper.status, upper.result);

        //  A plan: weather writes one of two alternatives; echo waits for
        //  the sunny one and is skipped when the sky is rainy
        const [weather, echo] = await client.plan (context, [
            { _tool: 'weather', _outputPath: '†forecast.sunny || †forecast.rainy',
              city: '†request.city' },
            { _tool: 'echo', _outputPath: '†state.outing', go: '†forecast.sunny' }
        ]);
        console.log ('weather: branch %d, wrote %j', weather.branch, weather.written);
        console.log ('echo: %s%s', echo.status, echo.error? ' (' + echo.error.code + ')': '');

        //  Read back
        console.log ('†state.shout = %j', await client.resolve (context, '†state.shout'));
        console.log ('view:\n%s', await client.view (context, 'text'));
        for await (const message of client.history (context))
            console.log ('#%d %s %s', message._seq, message.type, message.kind ?? '');
        console.log ('stats: %j', (await client.stats ()).calls);
    }
    finally {
        client.close ();
    }
}

main ().catch ((error) => {
    console.error ('error: %s%s', error.code? error.code + ': ': '', error.message);
    process.exitCode = 1;
});
