'use strict';
//  Routing among several brokers sharing one store (the rule every actd
//  client library shares, so all of them send a context to the same broker
//  first).
//
//  The score of broker endpoint E for context C is FNV-1a, 64 bits, of the
//  UTF-8 bytes of E + "\n" + C, then MurmurHash3's 64-bit finalizer
//  (fmix64), as the C library computes it: FNV-1a alone barely mixes the
//  last bytes into the high bits, so contexts named alike ("run-1",
//  "run-2", ...) would mostly rank the brokers the same way. Requests about
//  C try the endpoints highest score first, ties broken by the smaller
//  endpoint.

const crypto = require ('node:crypto');

const MASK = (1n << 64n) - 1n;
const FNV_OFFSET = 14695981039346656037n;
const FNV_PRIME = 1099511628211n;

//  FNV-1a, 64 bits, of a Buffer: a BigInt
function fnv1a64 (bytes) {
    let hash = FNV_OFFSET;
    for (const byte of bytes)
        hash = ((hash ^ BigInt (byte)) * FNV_PRIME) & MASK;
    return hash;
}

//  MurmurHash3's 64-bit finalizer of a BigInt
function fmix64 (hash) {
    hash ^= hash >> 33n;
    hash = (hash * 0xff51afd7ed558ccdn) & MASK;
    hash ^= hash >> 33n;
    hash = (hash * 0xc4ceb9fe1a85ec53n) & MASK;
    return hash ^ (hash >> 33n);
}

//  The rendezvous score of endpoint for context (a BigInt)
function score (endpoint, context) {
    return fmix64 (fnv1a64 (Buffer.from (endpoint + '\n' + context, 'utf8')));
}

function s_compare (left, right) {
    return left < right? -1: left > right? 1: 0;
}

//  endpoints in the order requests about context try them
function rendezvous (endpoints, context) {
    return endpoints.map ((endpoint) => ({ endpoint, score: score (endpoint, context) }))
        .sort ((a, b) => s_compare (b.score, a.score)
                      || Buffer.compare (Buffer.from (a.endpoint), Buffer.from (b.endpoint)))
        .map ((entry) => entry.endpoint);
}

//  The endpoints of options.endpoints, else options.endpoint, else
//  fallback: an array of distinct strings, or a string that lists them
//  comma-separated (as actctl and $ACTD_ENDPOINT do)
function endpointList (options, fallback) {
    let listed = options.endpoints ?? options.endpoint ?? fallback;
    if (typeof listed === 'string')
        listed = listed.split (/[,\s]+/).filter ((endpoint) => endpoint.length);
    if (!Array.isArray (listed) || !listed.length)
        throw new TypeError ('endpoints is a non-empty array of endpoint strings, or one string');
    for (const endpoint of listed)
        if (typeof endpoint !== 'string' || !endpoint.length)
            throw new TypeError ('an endpoint is a non-empty string, not ' + String (endpoint));
    if (new Set (listed).size !== listed.length)
        throw new TypeError ('an endpoint is listed twice: ' + listed.join (', '));
    return [...listed];
}

function s_with_id (call) {
    if (call !== null && typeof call === 'object' && !Array.isArray (call)
    &&  call._id === undefined)
        return { ...call, _id: crypto.randomUUID () };
    return call;
}

//  A CALL's call, or a PLAN's calls, each given an _id (a random UUID)
//  when it has none
function withIds (body, plan) {
    if (plan)
        return Array.isArray (body)? body.map (s_with_id): body;
    return s_with_id (body);
}

//  An APPEND's arguments ([context, message], or with a key) given an
//  idempotency key (a random UUID) when they have none, so that sending it
//  again to another broker after a timeout does not append it twice (actd
//  answers the first _seq); a key given is kept
function withKey (args) {
    return args.length === 2? [...args, crypto.randomUUID ()]: args;
}

module.exports = { score, rendezvous, endpointList, withIds, withKey, fnv1a64, fmix64 };
