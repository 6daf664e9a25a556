#!/usr/bin/env node
//  An actd worker serving three activities:
//    upper:   {text} -> the text in upper case
//    echo:    the params, unchanged
//    weather: {city} -> branch 0 {city, sky: "sunny"} when the name has an
//             even length, else branch 1 {city, sky: "rainy"}
//
//  node examples/worker.js [--endpoint EP] [--capacity N] [--heartbeat-ms N]
//                          [--liveness N] [--name NAME]
//                          [--curve-server KEY --curve-cert FILE]
//
//  The endpoint defaults to $ACTD_WORKER_ENDPOINT, else tcp://127.0.0.1:5556;
//  CURVE's broker public key and this worker's certificate file to
//  $ACTD_SERVER_KEY and $ACTD_CERT.
'use strict';
const { parseArgs } = require ('node:util');
const { Worker, branch, ActivityError } = require ('actd');

//  A Z85 key may start with '-', which parseArgs takes for an option:
//  "--curve-server KEY" is read as "--curve-server=KEY"
const args = process.argv.slice (2).flatMap ((arg, i, all) =>
    all [i - 1] === '--curve-server'? []
    : arg === '--curve-server' && i + 1 < all.length? [arg + '=' + all [i + 1]]: [arg]);

const { values: options } = parseArgs ({ args, options: {
    endpoint: { type: 'string' },
    capacity: { type: 'string', default: '4' },
    'heartbeat-ms': { type: 'string', default: '1000' },
    liveness: { type: 'string', default: '3' },
    name: { type: 'string', default: 'example-node-worker' },
    'curve-server': { type: 'string' },
    'curve-cert': { type: 'string' }
} });

const worker = new Worker ({
    endpoints: options.endpoint,
    capacity: Number (options.capacity),
    heartbeatMs: Number (options ['heartbeat-ms']),
    liveness: Number (options.liveness),
    name: options.name,
    curveServer: options ['curve-server'],
    curveCert: options ['curve-cert']
});

worker.activity ('upper', async ({ text }) => {
    if (typeof text !== 'string')
        throw new ActivityError ('upper needs a string "text"',
                                 { code: 'bad_params', retryable: false });
    return text.toUpperCase ();
});

worker.activity ('echo', async (params) => params);

worker.activity ('weather', async ({ city }) => {
    if (typeof city !== 'string')
        throw new ActivityError ('weather needs a string "city"',
                                 { code: 'bad_params', retryable: false });
    return city.length % 2 === 0
         ? branch (0, { city, sky: 'sunny' })
         : branch (1, { city, sky: 'rainy' });
});

worker.on ('ready', ({ connections }) =>
    console.error (`worker ${worker.name}: READY sent to ${worker.endpoint} (#${connections})`));
worker.on ('disconnect', (reason) => console.error (`worker ${worker.name}: ${reason}`));
worker.on ('warning', (error) => console.error (`worker ${worker.name}: ${error.message}`));

process.on ('SIGINT', () => worker.stop ());
process.on ('SIGTERM', () => worker.stop ());

worker.run ().then (() => console.error (`worker ${worker.name}: stopped`));
