//  overview.js - workers and activities, live: /v1/stats polled every
//  second, rates from successive polls, latency percentiles from the
//  STATS histograms (latency_ms) over the last minute.

import { api, statusOf } from './api.js';
import { h, svg, replace, number, rate, duration } from './util.js';

const POLL_MS = 1000;
const KEEP = 180;               //  Polls kept: three minutes at 1/s
const WINDOW_MS = 60000;        //  Percentiles and sparklines over this

//  The q-quantile of a cumulative histogram {le, counts, count}, linear
//  inside a bucket as Prometheus' histogram_quantile; null when empty
export function quantile (histogram, q) {
    if (!histogram || !histogram.count)
        return null;
    const { le, counts, count } = histogram;
    const rank = q * count;
    for (let i = 0; i < counts.length; i++) {
        if (counts [i] >= rank) {
            if (le [i] === '+Inf')
                return i > 0 ? Number (le [i - 1]) : null;
            const upper = Number (le [i]);
            const lower = i > 0 ? Number (le [i - 1]) : 0;
            const below = i > 0 ? counts [i - 1] : 0;
            const inBucket = counts [i] - below;
            return inBucket > 0 ? lower + (upper - lower) * (rank - below) / inBucket : upper;
        }
    }
    return null;
}

//  newer - older, bucket by bucket (a histogram of what happened between)
function since (newer, older) {
    if (!newer)
        return null;
    if (!older || older.counts?.length !== newer.counts?.length || older.count > newer.count)
        return newer;
    return { le: newer.le, counts: newer.counts.map ((c, i) => c - older.counts [i]),
             count: newer.count - older.count, sum: newer.sum - older.sum };
}

//  Per-second rate of the value get() reads, between two polls
function perSecond (newer, older, get) {
    if (!newer || !older)
        return null;
    const dt = (newer.at - older.at) / 1000;
    const a = get (newer.stats);
    const b = get (older.stats);
    if (!(dt > 0) || typeof a !== 'number' || typeof b !== 'number' || a < b)
        return null;
    return (a - b) / dt;
}

//  A small line chart of values (null: a gap), drawn into a new <svg>
function sparkline (values, { width = 90, height = 18, max } = {}) {
    const top = Math.max (max ?? 0, ...values.filter ((v) => v !== null), 1e-9);
    const step = width / Math.max (1, values.length - 1);
    let d = '';
    values.forEach ((value, i) => {
        if (value === null)
            return;
        const x = (i * step).toFixed (1);
        const y = (height - 1 - (value / top) * (height - 2)).toFixed (1);
        d += (d && values [i - 1] !== null ? ' L ' : ' M ') + x + ' ' + y;
    });
    return svg ('svg', { class: 'spark', width, height, viewBox: `0 0 ${width} ${height}` },
                svg ('path', { d: d || 'M 0 0' }));
}

//  The area chart of calls accepted and ended per second
function throughputChart (series, width, height) {
    const top = Math.max (1, ...series.flatMap ((s) => s.values.filter ((v) => v !== null)));
    const step = width / Math.max (1, KEEP - 1);
    const offset = KEEP - series [0].values.length;
    const paths = series.map ((s) => {
        let d = '';
        s.values.forEach ((value, i) => {
            if (value === null)
                return;
            const x = ((offset + i) * step).toFixed (1);
            const y = (height - (value / top) * (height - 14)).toFixed (1);
            d += (d ? ' L ' : 'M ') + x + ' ' + y;
        });
        return svg ('path', { class: 'series ' + s.className, d: d || 'M 0 0' });
    });
    return svg ('svg', { class: 'chart', viewBox: `0 0 ${width} ${height}`,
                         preserveAspectRatio: 'none', width: '100%', height },
                svg ('line', { class: 'grid', x1: 0, x2: width, y1: 14, y2: 14 }),
                svg ('text', { class: 'axis', x: 2, y: 11 }, number (top) + '/s'),
                ...paths);
}

function card (label, value, detail, className) {
    return h ('div.card' + (className ? '.' + className : ''), h ('div.label', label),
              h ('div.value', value), detail ? h ('div.detail', detail) : null);
}

//  Latency cells: over the last minute, or (greyed) since actd started
//  when nothing ended in the last minute
function latencyCells (latency, old) {
    const pick = (name, q) => {
        const recent = since (latency?.[name], old?.[name]);
        const value = quantile (recent, q);
        return value !== null ? { value, lifetime: false }
                              : { value: quantile (latency?.[name], q), lifetime: true };
    };
    const cell = (field, { value, lifetime }) => value === null
        ? h ('td.num', { dataset: { field } }, '–')
        : h ('td.num' + (lifetime ? '.lifetime' : ''),
             { dataset: { field },
               title: lifetime ? 'since actd started (nothing in the last minute)' : 'last minute' },
             duration (value));
    return [cell ('queue-p50', pick ('queue', 0.5)), cell ('run-p50', pick ('run', 0.5)),
            cell ('run-p95', pick ('run', 0.95)), cell ('total-p50', pick ('total', 0.5)),
            cell ('total-p95', pick ('total', 0.95)), cell ('total-p99', pick ('total', 0.99))];
}

export function mountOverview (root, { setStatus }) {
    const polls = [];           //  {at, stats}, oldest first
    let timer = null;
    let stopped = false;
    let controller = null;

    const cards = h ('section.cards', { id: 'totals' });
    const chart = h ('section.panel.chart-panel',
                     h ('header', h ('h2', 'Throughput'),
                        h ('span.legend', h ('i.accepted'), 'accepted/s ', h ('i.ended'), 'ended/s ',
                           h ('i.failed'), 'failed/s')),
                     h ('div.chart-box'));
    const activities = h ('tbody');
    const workers = h ('tbody');
    const error = h ('div.error-banner', { hidden: true });
    root.append (error, cards, chart,
        h ('section.panel',
           h ('header', h ('h2', 'Activities'),
              h ('span.hint', 'rates per second from the last polls; latencies over the last minute')),
           h ('table.grid#activities',
              h ('thead', h ('tr', h ('th', 'activity'), h ('th.num', 'workers'), h ('th.num', 'queued'),
                             h ('th.num', 'running'), h ('th.num', 'done'), h ('th.num', 'done/s'),
                             h ('th', 'last minute'), h ('th.num', 'ok'), h ('th.num', 'failed'),
                             h ('th.num', 'queue p50'), h ('th.num', 'run p50'), h ('th.num', 'run p95'),
                             h ('th.num', 'total p50'), h ('th.num', 'p95'), h ('th.num', 'p99'))),
              activities)),
        h ('section.panel',
           h ('header', h ('h2', 'Workers')),
           h ('table.grid#workers',
              h ('thead', h ('tr', h ('th', 'name'), h ('th', 'lang'), h ('th', 'activities'),
                             h ('th.num', 'running'), h ('th.num', 'capacity'), h ('th', 'load'))),
              workers)));

    function render () {
        const now = polls [polls.length - 1];
        const previous = polls [polls.length - 2];
        const old = polls.find ((poll) => now.at - poll.at <= WINDOW_MS) || polls [0];
        const stats = now.stats;
        const calls = stats.calls || {};
        const ended = (s) => ['ok', 'error', 'timeout', 'skipped', 'cancelled']
            .reduce ((sum, key) => sum + (s.calls?.[key] || 0), 0);
        const failed = (s) => (s.calls?.error || 0) + (s.calls?.timeout || 0);
        const store = stats.store || {};
        document.title = `actd · ${calls.running ?? 0} running · ${calls.queued ?? 0} queued`;
        const commitsPerSecond = perSecond (now, previous, (s) => s.store?.commits);
        const writesPerCommit = (() => {
            const commits = (store.commits ?? 0) - (old.stats.store?.commits ?? 0);
            const writes = (store.writes ?? 0) - (old.stats.store?.writes ?? 0);
            return commits > 0 ? writes / commits : null;
        }) ();
        const commitP95 = quantile (since (store.commit_ms, old.stats.store?.commit_ms), 0.95);
        replace (cards,
            card ('uptime', duration (stats.uptime_ms)),
            card ('contexts', number (stats.contexts), `${number (stats.deleted ?? 0)} deleted`),
            card ('messages', number (stats.messages),
                  rate (perSecond (now, previous, (s) => s.messages)) + '/s'),
            card ('calls', number (calls.accepted),
                  rate (perSecond (now, previous, (s) => s.calls?.accepted)) + '/s accepted'),
            card ('live', `${calls.waiting ?? 0} · ${calls.queued ?? 0} · ${calls.running ?? 0}`,
                  'wait · queue · run'),
            card ('ok', number (calls.ok), null, 'good'),
            card ('error', number (calls.error), `${number (calls.timeout)} timeout`,
                  calls.error || calls.timeout ? 'bad' : ''),
            card ('skipped', number (calls.skipped), `${number (calls.cancelled)} cancelled`),
            card ('store', store.backend || '–',
                  [rate (commitsPerSecond) + ' commits/s',
                   writesPerCommit !== null ? number (writesPerCommit) + ' writes/commit' : null,
                   commitP95 !== null ? 'p95 ' + duration (commitP95) : null]
                      .filter (Boolean).join (' · ')));

        //  Throughput over the polls kept
        const series = [
            { className: 'accepted', values: polls.map ((p, i) => i ? perSecond (p, polls [i - 1], (s) => s.calls?.accepted) : null) },
            { className: 'ended', values: polls.map ((p, i) => i ? perSecond (p, polls [i - 1], ended) : null) },
            { className: 'failed', values: polls.map ((p, i) => i ? perSecond (p, polls [i - 1], failed) : null) }
        ];
        replace (chart.querySelector ('.chart-box'), throughputChart (series, 900, 90));

        const names = Object.keys (stats.activities || {}).sort ();
        replace (activities, names.length ? names.map ((name) => {
            const a = stats.activities [name];
            const get = (s) => s.activities?.[name]?.done;
            const window = polls.filter ((p) => now.at - p.at <= WINDOW_MS);
            const spark = window.map ((p, i) => i ? perSecond (p, window [i - 1], get) : null);
            const outcomes = a.outcomes;
            const failedCount = outcomes ? (outcomes.error || 0) + (outcomes.timeout || 0) : null;
            return h ('tr', { dataset: { activity: name } },
                h ('td.name', name),
                h ('td.num' + (a.workers ? '' : '.warn'), String (a.workers ?? 0)),
                h ('td.num', { dataset: { field: 'queued' } }, String (a.queued ?? 0)),
                h ('td.num', { dataset: { field: 'running' } }, String (a.running ?? 0)),
                h ('td.num', { dataset: { field: 'done' } }, String (a.done ?? 0)),
                h ('td.num', rate (perSecond (now, previous, get))),
                h ('td', sparkline (spark)),
                h ('td.num', outcomes ? number (outcomes.ok ?? 0) : '–'),
                h ('td.num' + (failedCount ? '.bad' : ''), outcomes ? number (failedCount) : '–'),
                ...latencyCells (a.latency_ms, old.stats.activities?.[name]?.latency_ms));
        }) : h ('tr', h ('td.empty', { colSpan: 15 }, 'No activity yet: start a worker, or submit a call.')));

        const list = stats.workers || [];
        replace (workers, list.length ? list.map ((w) => {
            const load = w.capacity ? Math.min (1, w.running / w.capacity) : 0;
            return h ('tr', { dataset: { worker: w.name } },
                h ('td.name', w.name || '(unnamed)'),
                h ('td', w.lang || '–'),
                h ('td', (w.activities || []).join (', ')),
                h ('td.num', String (w.running ?? 0)),
                h ('td.num', String (w.capacity ?? 0)),
                h ('td', h ('div.meter', { title: `${Math.round (load * 100)}% of capacity` },
                            h ('div', { style: `width:${(load * 100).toFixed (0)}%` }))));
        }) : h ('tr', h ('td.empty', { colSpan: 6 }, 'No worker connected.')));
    }

    async function poll () {
        if (stopped)
            return;
        controller = new AbortController ();
        const started = Date.now ();
        let wait = POLL_MS;
        try {
            const stats = await api.stats (controller.signal);
            polls.push ({ at: Date.now (), stats });
            if (polls.length > KEEP)
                polls.shift ();
            error.hidden = true;
            setStatus ('live', 'actd answers');
            render ();
        }
        catch (problem) {
            if (problem.name === 'AbortError')
                return;
            error.hidden = false;
            error.textContent = problem.status === 403
                ? `This token may not read /v1/stats (${problem.message}): the contexts of its tenant are under Contexts.`
                : `Cannot read /v1/stats: ${problem.message}`;
            setStatus (statusOf (problem), problem.message);
            //  Refused: ask again now and then (a token may be given);
            //  unreachable: every few seconds
            wait = problem.status === 401 || problem.status === 403 ? 30000 : 3000;
        }
        if (!stopped)
            timer = setTimeout (poll, Math.max (0, wait - (Date.now () - started)));
    }
    poll ();
    return () => {
        stopped = true;
        clearTimeout (timer);
        controller?.abort ();
    };
}
