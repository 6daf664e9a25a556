#!/usr/bin/env node
//  The Node.js worker of test_languages.py: the actd package of
//  workers/node, run as a process of its own. Serves:
//    node_weather: {city} -> branch 0 {city, sky: "sunny", lang: "node"}
//                  when the name has an even length, else branch 1
//                  {city, sky: "rainy", lang: "node"}
//    node_fail:    {city} -> ActivityError code "no_forecast", not retryable,
//                  with the detail {city}
//
//  node node_worker.js --endpoint EP [--heartbeat-ms N] [--name NAME]
'use strict';
const path = require ('node:path');
const { parseArgs } = require ('node:util');
const { Worker, branch, ActivityError } = require (
    path.join (__dirname, '..', '..', '..', 'workers', 'node'));

const { values: options } = parseArgs ({ options: {
    endpoint: { type: 'string' },
    'heartbeat-ms': { type: 'string', default: '1000' },
    name: { type: 'string', default: 'lang-node-worker' }
} });

const worker = new Worker ({
    endpoint: options.endpoint,
    capacity: 2,
    heartbeatMs: Number (options ['heartbeat-ms']),
    liveness: 3,
    name: options.name
});

worker.activity ('node_weather', async ({ city }) =>
    city.length % 2 === 0
        ? branch (0, { city, sky: 'sunny', lang: 'node' })
        : branch (1, { city, sky: 'rainy', lang: 'node' }));

worker.activity ('node_fail', async ({ city }) => {
    throw new ActivityError ('no forecast for ' + city,
                             { code: 'no_forecast', retryable: false, city });
});

worker.on ('ready', ({ connections }) =>
    console.error (`node worker ${worker.name}: READY #${connections}`));
worker.on ('disconnect', (reason) => console.error (`node worker ${worker.name}: ${reason}`));

process.on ('SIGTERM', () => worker.stop ());
process.on ('SIGINT', () => worker.stop ());

worker.run ().then (() => console.error (`node worker ${worker.name}: stopped`));
