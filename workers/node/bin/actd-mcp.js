#!/usr/bin/env node
'use strict';
//  actd-mcp: an MCP server whose tools are actd's workers (lib/mcp.js).
//  Usage: actd-mcp [--endpoint EP] [--context ID] [--confine] [--poll-ms MS]
//                  [--http PORT [--host 127.0.0.1] [--session-idle-ms MS]
//                  [--max-sessions N]]
//  Without --http it speaks MCP on stdin/stdout (what an MCP client's
//  "command" starts); logs go to stderr. It serves at once, before actd
//  answers (tools/list_changed follows when it does).

const { parseArgs } = require ('node:util');
const { ActdMcp } = require ('../lib/mcp');

const USAGE = `usage: actd-mcp [options]
  --endpoint EP    actd's client endpoint ($ACTD_ENDPOINT, else tcp://127.0.0.1:5555)
  --context ID     run every tool call in context ID (default: mcp/<session id>,
                   one context per MCP session; a call's _context argument wins)
  --confine        a session reaches only its context (ID, or mcp/<session id>):
                   a _context argument or resource naming another is refused
  --poll-ms MS     how often to ask actd for its tools (1000)
  --http PORT      serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio
  --host HOST      the loopback address to listen on (127.0.0.1; or ::1)
  --session-idle-ms MS
                   close an HTTP session idle this long (1800000: 30 minutes; 0: never)
  --max-sessions N refuse a new HTTP session (503) while N are open (1000)
  --quiet          log nothing to stderr
CURVE: $ACTD_SERVER_KEY and $ACTD_CERT, as for the other actd clients.
`;

async function main () {
    let values;
    try {
        ({ values } = parseArgs ({ options: {
            endpoint: { type: 'string' }, context: { type: 'string' },
            confine: { type: 'boolean' }, 'poll-ms': { type: 'string' },
            http: { type: 'string' }, host: { type: 'string' },
            'session-idle-ms': { type: 'string' }, 'max-sessions': { type: 'string' },
            quiet: { type: 'boolean' }, help: { type: 'boolean' }
        } }));
    } catch (error) {
        process.stderr.write (`actd-mcp: ${error.message}\n${USAGE}`);
        process.exit (2);
    }
    if (values.help) {
        process.stdout.write (USAGE);
        return;
    }
    const pollMs = values ['poll-ms'] === undefined? 1000: Number (values ['poll-ms']);
    const port = values.http === undefined? null: Number (values.http);
    const idleMs = values ['session-idle-ms'] === undefined? undefined
                 : Number (values ['session-idle-ms']);
    const maxSessions = values ['max-sessions'] === undefined? undefined
                      : Number (values ['max-sessions']);
    if (!(pollMs > 0) || (port !== null && !(Number.isInteger (port) && port >= 0 && port < 65536))
    ||  !(idleMs === undefined || idleMs >= 0)
    ||  !(maxSessions === undefined || (Number.isInteger (maxSessions) && maxSessions > 0))) {
        process.stderr.write (`actd-mcp: --poll-ms is a positive number, --http a port, `
            + `--session-idle-ms a number >= 0, --max-sessions an integer > 0\n${USAGE}`);
        process.exit (2);
    }
    const log = values.quiet? () => {}: (line) => process.stderr.write (`actd-mcp: ${line}\n`);
    const mcp = new ActdMcp ({ endpoint: values.endpoint, context: values.context,
                               confine: values.confine, pollMs, sessionIdleMs: idleMs,
                               maxSessions, log });
    //  Served at once: an actd not up yet does not hold initialize (its
    //  tools follow with notifications/tools/list_changed)
    mcp.start ();
    let stopping = null;
    const stop = () => (stopping ??= mcp.close ().then (() => process.exit (0)));
    process.on ('SIGINT', stop);
    process.on ('SIGTERM', stop);
    if (port === null) {
        const session = await mcp.connectStdio ();
        session.onclose = stop;
        process.stdin.on ('end', stop);
        log (`serving MCP on stdio (context ${session.defaultContext ()})`);
    } else {
        const listening = await mcp.listenHttp (port, values.host ?? '127.0.0.1');
        log (`serving MCP at http://${values.host ?? '127.0.0.1'}:${listening}/mcp`);
    }
}

main ().catch ((error) => {
    process.stderr.write (`actd-mcp: ${error.message}\n`);
    process.exit (1);
});
