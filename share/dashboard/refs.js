//  refs.js - references (†kind.path) in call parameters and output paths,
//  enough to draw which call feeds which (SEMANTICS.md sections 2 and 7).

const DAGGER = '\u2020';
const KIND = /^[A-Za-z_][A-Za-z0-9_-]*/;
const KEY = /^[^.[\]"|&<>*\u2020\s]+/;

//  Every reference in one expression text: [{kind, path: [segments]}].
//  As actd reads parameters, a string is an expression only when it
//  starts with † (and †† starts a literal)
export function referencesIn (text) {
    const found = [];
    if (typeof text !== 'string' || !text.startsWith (DAGGER) || text.startsWith (DAGGER + DAGGER))
        return found;
    let at = text.indexOf (DAGGER);
    while (at >= 0) {
        const parsed = parseAt (text, at + 1);
        if (parsed) {
            found.push (parsed.ref);
            at = text.indexOf (DAGGER, parsed.end);
        }
        else
            at = text.indexOf (DAGGER, at + 1);
    }
    return found;
}

//  One reference whose kind starts at index start
function parseAt (text, start) {
    const kind = KIND.exec (text.slice (start));
    if (!kind)
        return null;
    const path = [];
    let at = start + kind [0].length;
    for (;;) {
        const rest = text.slice (at);
        if (rest.startsWith ('.')) {
            const key = KEY.exec (rest.slice (1));
            if (!key)
                break;
            path.push (key [0]);
            at += 1 + key [0].length;
        }
        else if (rest.startsWith ('["')) {
            const close = /^\["((?:[^"\\]|\\.)*)"\]/.exec (rest);
            if (!close)
                break;
            try {
                path.push (JSON.parse ('"' + close [1] + '"'));
            }
            catch {
                break;
            }
            at += close [0].length;
        }
        else if (rest.startsWith ('[')) {
            const index = /^\[(\d+)\]/.exec (rest);
            if (!index)
                break;
            path.push (index [1]);
            at += index [0].length;
        }
        else
            break;
    }
    return { ref: { kind: kind [0], path }, end: at };
}

//  Whether a producer's target can write what reference reads: same kind,
//  one path a prefix of the other, "-" in the target matching anything
export function feeds (target, reference) {
    if (target.kind !== reference.kind)
        return false;
    const length = Math.min (target.path.length, reference.path.length);
    for (let i = 0; i < length; i++)
        if (target.path [i] !== '-' && target.path [i] !== reference.path [i])
            return false;
    return true;
}

//  A reference as text again: †kind.a.b
export function refText (ref) {
    return DAGGER + ref.kind + ref.path.map ((segment) => '.' + segment).join ('');
}
