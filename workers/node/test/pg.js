'use strict';
//  A private PostgreSQL server for tests, as tests/integration/pg.py does it:
//  Debian's postgresql binaries, a temporary data directory, a free port,
//  trust authentication on loopback. Started once per test process (on
//  first use), stopped when the process exits, or, when it is killed (the
//  test runner kills a file's process whose test timed out), by a watchdog
//  shell that waits for it to be gone. PostgreSQL refuses to run as root:
//  then the server runs as the "postgres" system user (runuser).

const { execFileSync, spawn } = require ('node:child_process');
const crypto = require ('node:crypto');
const fs = require ('node:fs');
const os = require ('node:os');
const path = require ('node:path');
const { freePort } = require ('./actd');

const ROOT = '/usr/lib/postgresql';

//  The newest installed version's program name
function s_bin (name) {
    const versions = fs.existsSync (ROOT)? fs.readdirSync (ROOT)
        .filter ((version) => fs.existsSync (path.join (ROOT, version, 'bin', name)))
        .sort ((a, b) => Number.parseFloat (a) - Number.parseFloat (b)): [];
    if (!versions.length)
        throw new Error (`PostgreSQL's ${name} is not installed (Debian package postgresql; `
                         + 'scripts/deps.sh test installs it)');
    return path.join (ROOT, versions [versions.length - 1], 'bin', name);
}

let server = null;

async function s_start () {
    const dir = fs.mkdtempSync (path.join (os.tmpdir (), 'actd-pg-'));
    const data = path.join (dir, 'data');
    const port = await freePort ();
    const user = process.getuid () === 0? 'postgres': null;
    if (user) {
        const id = (flag) => Number (execFileSync ('id', [flag, user], { encoding: 'utf8' }));
        fs.chownSync (dir, id ('-u'), id ('-g'));
    }
    const as = (command) => user? ['runuser', '-u', user, '--', ...command]: command;
    const run = (command) => {
        command = as (command);
        try {
            return execFileSync (command [0], command.slice (1),
                                 { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
        }
        catch (error) {
            throw new Error (`${command.join (' ')} failed:\n${error.stdout}${error.stderr}`);
        }
    };
    run ([s_bin ('initdb'), '-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8',
          '--no-sync']);
    const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off `
                  + '-c max_connections=200 -c shared_buffers=64MB';
    run ([s_bin ('pg_ctl'), '-D', data, '-o', options, '-w', '-t', '60',
          '-l', path.join (dir, 'server.log'), 'start']);
    const stop = as ([s_bin ('pg_ctl'), '-D', data, '-m', 'immediate', '-w', 'stop']);
    const quote = (word) => "'" + word.replace (/'/g, "'\\''") + "'";
    const watchdog = spawn ('sh', ['-c', `while kill -0 ${process.pid} 2>/dev/null; `
        + `do sleep 1; done; ${stop.map (quote).join (' ')} >/dev/null 2>&1; `
        + `rm -rf ${quote (dir)}`], { detached: true, stdio: 'ignore' });
    watchdog.unref ();
    process.on ('exit', () => {
        try {
            execFileSync (stop [0], stop.slice (1), { stdio: 'ignore' });
        }
        catch (error) {
            //  Already stopped
        }
        fs.rmSync (dir, { recursive: true, force: true });
    });
    return { port, run };
}

//  A fresh, empty database on the test process's server: its URL
async function database () {
    if (!server)
        server = s_start ();
    const { port, run } = await server;
    const name = 'actd_' + crypto.randomBytes (6).toString ('hex');
    run ([s_bin ('createdb'), '-h', '127.0.0.1', '-p', String (port), '-U', 'postgres', name]);
    return `postgresql://postgres@127.0.0.1:${port}/${name}`;
}

module.exports = { database };
