//  util.js - small DOM and formatting helpers shared by the views.

//  h('div.a.b#id', {title: 'x', onclick: fn}, child, 'text', [children])
//  builds an element; null and false children are skipped.
export function h (spec, attrs, ...children) {
    const [head, id] = spec.split ('#');
    const [tag, ...classes] = head.split ('.');
    const node = document.createElement (tag || 'div');
    if (classes.length)
        node.className = classes.join (' ');
    if (id)
        node.id = id;
    if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray (attrs))) {
        children.unshift (attrs);
        attrs = null;
    }
    for (const [key, value] of Object.entries (attrs || {})) {
        if (value === undefined || value === null || value === false)
            continue;
        if (key.startsWith ('on'))
            node.addEventListener (key.slice (2), value);
        else if (key === 'dataset')
            Object.assign (node.dataset, value);
        else if (key in node && key !== 'list' && key !== 'type')
            node [key] = value;
        else
            node.setAttribute (key, value === true ? '' : value);
    }
    append (node, children);
    return node;
}

function append (node, children) {
    for (const child of children) {
        if (child === null || child === undefined || child === false)
            continue;
        if (Array.isArray (child))
            append (node, child);
        else
            node.append (child instanceof Node ? child : String (child));
    }
}

const SVG = 'http://www.w3.org/2000/svg';

//  An SVG element with attributes
export function svg (tag, attrs, ...children) {
    const node = document.createElementNS (SVG, tag);
    for (const [key, value] of Object.entries (attrs || {}))
        if (value !== undefined && value !== null)
            node.setAttribute (key, value);
    for (const child of children.flat ())
        if (child !== null && child !== undefined)
            node.append (child instanceof Node ? child : String (child));
    return node;
}

//  Replace the children of node
export function replace (node, ...children) {
    node.replaceChildren ();
    append (node, children);
    return node;
}

//  The units of number (), largest first: each from its scale up
const UNITS = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e4, 'k', 1e3]];

//  1234567 -> "1.23M", 999500 -> "1.00M", 0.5 -> "0.50". The unit is
//  chosen after rounding: a value that rounds up to 1000 of one unit is
//  shown in the next (999500 is not "1.00e+3k")
export function number (value, digits = 3) {
    if (value === undefined || value === null || Number.isNaN (value))
        return '–';
    const abs = Math.abs (value);
    const at = UNITS.findIndex (([from]) => abs >= from);
    if (at < 0 && Number.isInteger (value))
        return String (value);
    if (at < 0)
        return abs >= 100 ? value.toFixed (0) : abs >= 10 ? value.toFixed (1) : value.toFixed (2);
    const [from, unit, scale = from] = UNITS [at];
    const text = (value / scale).toPrecision (digits);
    if (Math.abs (Number (text)) < 1000)
        return text + unit;
    if (at === 0)                       //  Past 999T: as an exponent
        return value.toPrecision (digits);
    const [bigger, next] = UNITS [at - 1];
    return (value / bigger).toPrecision (digits) + next;
}

//  A rate per second, "–" when not known yet
export function rate (value) {
    if (value === undefined || value === null || Number.isNaN (value))
        return '–';
    if (value === 0)
        return '0';
    return value < 0.1 ? value.toFixed (2) : number (value);
}

//  Milliseconds to "850 ms", "1.2 s", "3m 05s", "2h 10m", "4d 3h"
export function duration (ms) {
    if (ms === undefined || ms === null || Number.isNaN (ms))
        return '–';
    if (ms < 10)
        return ms.toFixed (1) + ' ms';
    if (ms < 1000)
        return Math.round (ms) + ' ms';
    const s = ms / 1000;
    if (s < 60)
        return s.toFixed (s < 10 ? 1 : 0) + ' s';
    const m = Math.floor (s / 60);
    if (m < 60)
        return `${m}m ${String (Math.floor (s % 60)).padStart (2, '0')}s`;
    const hours = Math.floor (m / 60);
    if (hours < 48)
        return `${hours}h ${String (m % 60).padStart (2, '0')}m`;
    return `${Math.floor (hours / 24)}d ${hours % 24}h`;
}

//  An ISO date to "12s ago" (and the full date as a title)
export function ago (iso, now = Date.now ()) {
    const time = Date.parse (iso);
    if (Number.isNaN (time))
        return iso || '–';
    return duration (Math.max (0, now - time)) + ' ago';
}

//  "2026-11-22T13:04:28.206Z" -> "13:04:28.206"
export function clock (iso) {
    if (typeof iso !== 'string')
        return '';
    const match = /T(\d\d:\d\d:\d\d(?:\.\d+)?)/.exec (iso);
    return match ? match [1] : iso;
}

//  JSON.parse, but an integer literal beyond 2^53 keeps the server's
//  digits (SEMANTICS.md section 1: it stays that integer): it becomes a
//  JSON.rawJSON value, which JSON.stringify, hence json (), writes back
//  as it came. A browser without JSON.parse source text access rounds it,
//  as JSON.parse alone does.
export function parseJson (text) {
    return typeof JSON.rawJSON === 'function' ? JSON.parse (text, exactInteger) : JSON.parse (text);
}

function exactInteger (key, value, context) {
    if (typeof value === 'number' && !Number.isSafeInteger (value)
        && /^-?[0-9]+$/.test (context?.source ?? ''))
        return JSON.rawJSON (context.source);
    return value;
}

//  JSON for reading: compact when short, indented otherwise
export function json (value, width = 80) {
    const flat = JSON.stringify (value);
    if (flat === undefined)
        return 'undefined';
    return flat.length <= width ? flat : JSON.stringify (value, null, 2);
}

//  Run fn at most once per wait ms, the last call winning
export function debounce (fn, wait) {
    let timer = null;
    return (...args) => {
        clearTimeout (timer);
        timer = setTimeout (() => fn (...args), wait);
    };
}

//  The state of a call as a CSS class suffix
export function stateClass (state) {
    return 'st-' + String (state || 'unknown').replace (/[^a-z_]/g, '');
}
