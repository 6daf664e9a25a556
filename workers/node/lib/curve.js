'use strict';
//  CURVE: the socket options of a client or worker that talks to a broker
//  with security/server_key set, as the C library's act_curve.c does.
//
//  curveServer is the broker's public key (Z85 text, 40 characters) and
//  curveCert this client's or worker's certificate file, as actctl's
//  --curve-server and --curve-cert (and Python's curve_server, curve_cert).
//  The file is what `actctl keygen` writes (CZMQ's zcert: ZPL text whose
//  "curve" section holds "public-key" and "secret-key"); like zcert_load,
//  curveCert may name the public file: FILE_secret is read first. Each
//  defaults to the environment's ACTD_SERVER_KEY and ACTD_CERT.

const fs = require ('node:fs');

const Z85_KEY = /^[0-9a-zA-Z.\-:+=^!/*?&<>()[\]{}@%$#]{40}$/;

//  The "curve" section's entries of a ZPL file's text
function s_curve_section (text) {
    const entries = {};
    let section = null;
    for (const line of text.split (/\r?\n/)) {
        const top = /^([^\s#=]+)/.exec (line);
        if (top) {
            section = top [1];
            continue;
        }
        //  Values are quoted: Z85 text may hold '#', ZPL's comment mark
        const entry = /^ {4}([^\s=]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|(\S*))/.exec (line);
        if (entry && section === 'curve')
            entries [entry [1]] = entry [2] ?? entry [3] ?? entry [4];
    }
    return entries;
}

//  { publicKey, secretKey } of a certificate file; throws when it cannot
//  be read or has no secret key
function readCert (file) {
    let text;
    for (const name of [file + '_secret', file]) {
        try {
            text = fs.readFileSync (name, 'utf8');
            break;
        }
        catch (error) {
            if (name === file)
                throw new Error (`cannot read certificate ${file}: ${error.message}`);
        }
    }
    const curve = s_curve_section (text);
    if (!Z85_KEY.test (curve ['public-key'] ?? '') || !Z85_KEY.test (curve ['secret-key'] ?? ''))
        throw new Error (`certificate ${file} has no CURVE public-key and secret-key`);
    return { publicKey: curve ['public-key'], secretKey: curve ['secret-key'] };
}

//  zeromq socket options for options.curveServer and options.curveCert
//  (else the environment's): {} for plain TCP when neither is set
function curveOptions (options) {
    const server = options.curveServer ?? (process.env.ACTD_SERVER_KEY || undefined);
    const cert = options.curveCert ?? (process.env.ACTD_CERT || undefined);
    if (server === undefined && cert === undefined)
        return {};
    //  Half of CURVE would silently talk in plain text
    if (server === undefined || cert === undefined)
        throw new TypeError ('curveServer and curveCert (or ACTD_SERVER_KEY and ACTD_CERT) '
                             + 'go together');
    if (!Z85_KEY.test (server))
        throw new TypeError ('curveServer is the broker\'s public key: 40 characters of Z85');
    const { publicKey, secretKey } = readCert (cert);
    return { curveServerKey: server, curvePublicKey: publicKey, curveSecretKey: secretKey };
}

module.exports = { curveOptions };
