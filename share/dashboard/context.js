//  context.js - one context: a timeline of its messages (HISTORY, then
//  the event stream) and of its calls' changes of state (the stream's
//  call events), each output with the call that wrote it and its method;
//  the merged view as the model sees it; the plan as a graph of calls.
//  Everything after the first load comes through SSE, without a reload.

import { api, eventsUrl, statusOf } from './api.js';
import { Plan, drawPlan } from './plan.js';
import { h, svg, replace, number, clock, json, parseJson, debounce, stateClass } from './util.js';

const HISTORY_PAGE = 500;
const HISTORY_MAX = 5000;       //  Older messages are not loaded
const TIMELINE_MAX = 3000;      //  Entries kept in the DOM
const STATUS_FETCH_MAX = 200;   //  Calls of the history whose STATUS is read
const LIVE = new Set (['waiting', 'queued', 'running']);
//  How long a stream stays open before the page calls it live (stream)
const LIVE_AFTER_MS = 500;
//  The codes of an event: error that ends a stream for now, not for good:
//  EventSource reconnects by itself (docs/http.md, Server-Sent Events)
const AWAY = new Set (['busy', 'timeout', 'disconnected', 'unreachable', 'unavailable']);

//  The parameters of a submitted call, its "_" keys left out
function params (call) {
    const result = {};
    for (const [key, value] of Object.entries (call || {}))
        if (!key.startsWith ('_'))
            result [key] = value;
    return result;
}

function clipText (text, length) {
    return text.length > length ? text.slice (0, length - 1) + '…' : text;
}

//  What a message is about, metadata left out
function body (message) {
    if (message.type === 'data')
        return message.data;
    if (message.type === 'error')
        return message.error;
    const rest = {};
    for (const [key, value] of Object.entries (message))
        if (!key.startsWith ('_') && key !== 'type')
            rest [key] = value;
    return Object.keys (rest).length === 1 && typeof Object.values (rest) [0] === 'string'
         ? Object.values (rest) [0] : rest;
}

export function mountContext (root, { id, setStatus }) {
    const plan = new Plan ();
    const seqs = new Set ();            //  Message seqs shown
    let lastSeq = 0;
    let source = null;                  //  The EventSource
    let stopped = false;
    let selected = null;                //  Call id shown in the detail panel
    let filter = 'all';
    const statusWanted = new Set ();    //  Call ids whose STATUS is to be read

    //  ---- the page's frame ----------------------------------------------
    const live = h ('span.pill#stream', 'connecting…');
    const counts = h ('span.counts');
    const timeline = h ('div.timeline#timeline');
    const planSvg = svg ('svg', { id: 'plan', class: 'plan' });
    const planInfo = h ('span.hint');
    const viewText = h ('pre.view#view', '…');
    const viewInfo = h ('span.hint');
    const detail = h ('div.detail#call-detail', h ('p.hint', 'Click a call (in the graph or the timeline) to see it here.'));
    const banner = h ('div.error-banner', { hidden: true });
    const filters = h ('span.filters', ['all', 'messages', 'calls'].map ((name) =>
        h ('button' + (name === filter ? '.on' : ''), { type: 'button', dataset: { filter: name },
            onclick: (event) => {
                filter = name;
                for (const b of filters.children)
                    b.classList.toggle ('on', b === event.currentTarget);
                timeline.dataset.filter = name;
            } }, name)));
    timeline.dataset.filter = filter;

    root.append (
        h ('div.context-head',
           h ('a.back', { href: '#/contexts' }, '← contexts'),
           h ('h1.ctx-id', { title: id }, id), live, counts),
        banner,
        h ('div.context-grid',
           h ('section.panel.timeline-panel',
              h ('header', h ('h2', 'Timeline'), h ('span.hint', 'newest first'), filters),
              timeline),
           h ('div.side',
              h ('section.panel.plan-panel',
                 h ('header', h ('h2', 'Plan'), planInfo,
                    h ('span.legend.states', ['waiting', 'queued', 'running', 'ok', 'error', 'skipped']
                        .map ((s) => h ('span.badge.' + stateClass (s), s)))),
                 h ('div.plan-box', planSvg)),
              h ('section.panel.detail-panel', h ('header', h ('h2', 'Call')), detail),
              h ('section.panel.view-panel',
                 h ('header', h ('h2', 'View'), h ('span.hint', 'as the model sees it'), viewInfo),
                 viewText))));

    //  ---- timeline entries ----------------------------------------------
    function prepend (entry) {
        timeline.prepend (entry);
        while (timeline.childElementCount > TIMELINE_MAX)
            timeline.lastElementChild.remove ();
    }

    function callLink (callId, tool) {
        return h ('a.call-link', { href: '#', dataset: { call: callId },
                                   onclick: (event) => { event.preventDefault (); select (callId); } },
                  `#${callId}${tool ? ' ' + tool : ''}`);
    }

    function messageEntry (message) {
        const seq = message._seq;
        const origin = message._call
            ? h ('div.origin',
                 h ('span.arrow', '←'), callLink (message._callId, message._call._tool),
                 h ('code.params', { title: JSON.stringify (params (message._call), null, 2) },
                   clipText (JSON.stringify (params (message._call)), 140)),
                 message._outputMethod ? h ('span.method', { title: '_outputMethod' }, message._outputMethod) : null,
                 message._outputPath ? h ('code.target', { title: '_outputPath' }, '→ ' + message._outputPath) : null)
            : null;
        const value = body (message);
        const text = typeof value === 'string' ? value : json (value, 100);
        return h ('div.entry.msg.type-' + String (message.type).replace (/\W/g, '_'),
                  { dataset: { seq: String (seq) } },
            h ('div.line',
               h ('span.seq', '#' + seq),
               h ('span.time', { title: message._date || '' }, clock (message._date)),
               h ('span.type', message.type),
               message.type === 'data' ? h ('span.kind', message.kind || 'data') : null,
               message._instance ? h ('span.instance', '@' + message._instance) : null,
               message.description ? h ('span.desc', clipText (String (message.description), 80)) : null),
            origin,
            h ('pre.data' + (text.split ('\n').length > 8 ? '.long' : ''),
               { onclick: (event) => event.currentTarget.classList.toggle ('open') }, text));
    }

    function callEntry (status) {
        const error = status.outcome?.error;
        return h ('div.entry.call.' + stateClass (status.state), { dataset: { call: String (status.call_id) } },
            h ('div.line',
               h ('span.seq', 'call'),
               h ('span.time', clock (new Date ().toISOString ())),
               h ('span.badge.' + stateClass (status.state), status.state),
               callLink (String (status.call_id), status.tool),
               status.attempts ? h ('span.attempts', `attempt ${status.attempts}`) : null,
               status.waiting_on?.length ? h ('span.waiting', 'waits for ' + status.waiting_on.join (', ')) : null,
               status.progress !== undefined ? h ('code.progress', clipText (JSON.stringify (status.progress), 80)) : null,
               error ? h ('span.err', `${error.code}: ${clipText (String (error.message ?? ''), 120)}`) : null));
    }

    //  ---- incoming ------------------------------------------------------
    function addMessage (message) {
        const seq = message._seq;
        if (typeof seq !== 'number' || seqs.has (seq))
            return;
        seqs.add (seq);
        lastSeq = Math.max (lastSeq, seq);
        prepend (messageEntry (message));
        if (message._callId !== undefined) {
            const call = plan.submitted (message._callId, message._call);
            if (!call.state) {
                statusWanted.add (call.id);
                if (statusWanted.size > STATUS_FETCH_MAX)     //  The latest are read
                    statusWanted.delete (statusWanted.values ().next ().value);
            }
        }
    }

    function addCall (status) {
        plan.status (status);
        statusWanted.delete (String (status.call_id));
        prepend (callEntry (status));
    }

    //  ---- the side panels -----------------------------------------------
    const redrawPlan = debounce (() => {
        const { nodes, edges } = drawPlan (plan, planSvg, { selected, onSelect: select });
        planInfo.textContent = nodes ? `${nodes} calls · ${edges} edges` : 'no call seen yet';
        planSvg.dataset.nodes = nodes;
        planSvg.dataset.edges = edges;
        renderCounts ();
        renderDetail ();
    }, 50);

    function renderCounts () {
        const calls = [...plan.calls.values ()];
        const running = calls.filter ((c) => LIVE.has (c.state)).length;
        counts.textContent = `${number (seqs.size)} messages · last seq ${lastSeq} · `
            + `${calls.length} calls (${running} live)`;
    }

    function renderDetail () {
        if (!selected || !plan.calls.has (selected))
            return;
        const call = plan.calls.get (selected);
        const rows = [
            ['call', call.id], ['tool', call.tool || '?'],
            ['state', h ('span.badge.' + stateClass (call.state), call.state || '?')],
            ['attempts', String (call.attempts)],
            ['output path', call.outputPath ? h ('code', call.outputPath) : 'none (fire-and-forget)'],
            ['reads', call.readTexts.size ? h ('code', [...call.readTexts].join ('  ')) : '–'],
            call.progress !== undefined ? ['progress', h ('code', JSON.stringify (call.progress))] : null,
            call.outcome?.written ? ['written', h ('code', call.outcome.written.join ('  ') || '–')] : null,
            call.outcome?.error ? ['error', h ('span.err', `${call.outcome.error.code}: ${call.outcome.error.message ?? ''}`)] : null,
            call.params ? ['call', h ('pre.data.open', JSON.stringify (call.params, null, 2))] : null
        ].filter (Boolean);
        replace (detail,
            h ('table.kv', rows.map (([k, v]) => h ('tr', h ('th', k), h ('td', v)))),
            LIVE.has (call.state)
                ? h ('button.danger', { type: 'button', onclick: () => cancel (call.id) }, 'Cancel call')
                : null);
    }

    async function cancel (callId) {
        if (!window.confirm (`Cancel call ${callId}?`))
            return;
        try {
            await api.cancel (callId);
        }
        catch (problem) {
            showBanner (`Cancel of call ${callId} failed: ${problem.message}`);
        }
    }

    function select (callId) {
        selected = String (callId);
        redrawPlan ();
        if (!plan.calls.get (selected)?.state)
            statusWanted.add (selected);
        readStatuses ();
    }

    //  The banner says the history could not be read (actd away when the
    //  page opened): the stream, which starts where the history stopped,
    //  brings it once actd is back, and the banner goes then
    let historyMissing = false;

    function showBanner (text) {
        banner.hidden = !text;
        banner.textContent = text || '';
    }

    const refreshView = debounce (async () => {
        try {
            const text = await api.viewText (id);
            viewText.textContent = text || '(empty)';
            viewInfo.textContent = `at seq ${lastSeq}`;
            viewText.dataset.seq = String (lastSeq);
        }
        catch (problem) {
            viewText.textContent = problem.status === 404 ? '(no such context yet)' : '';
            viewInfo.textContent = problem.status === 404 ? '' : problem.message;
        }
    }, 150);

    //  STATUS of calls met in outputs but not seen live, a few at a time
    let reading = false;
    async function readStatuses () {
        if (reading)
            return;
        reading = true;
        try {
            while (statusWanted.size && !stopped) {
                const [callId] = statusWanted;
                statusWanted.delete (callId);
                try {
                    plan.status (await api.status (callId));
                }
                catch {
                    //  Gone (deleted, or another broker's): drawn as unknown
                }
                redrawPlan ();
            }
        }
        finally {
            reading = false;
        }
    }

    //  ---- loading and streaming -----------------------------------------
    async function loadHistory () {
        let from = 1;
        try {
            const page = await api.contexts (id, null, 1);
            const entry = page.contexts.find ((c) => c.context === id);
            if (entry && entry.last_seq > HISTORY_MAX)
                from = entry.last_seq - HISTORY_MAX + 1;
        }
        catch {
            //  Not listed: read the history from 1
        }
        for (;;) {
            let messages;
            try {
                messages = await api.history (id, from, HISTORY_PAGE);
            }
            catch (problem) {
                if (problem.status === 404) {
                    showBanner ('');
                    timeline.append (h ('p.hint.empty-note', 'No message yet: waiting for the first.'));
                    return;
                }
                throw problem;
            }
            messages.forEach (addMessage);
            if (messages.length < HISTORY_PAGE || stopped)
                return;
            from = messages [messages.length - 1]._seq + 1;
        }
    }

    function stream () {
        source = new EventSource (eventsUrl (id, lastSeq + 1));
        //  A stream is called live once it has stayed open LIVE_AFTER_MS or
        //  brought a message: one that actd-http ends at once (actd away:
        //  retry, event: error) opens first, and the pill flickered "live"
        //  between each "reconnecting…"
        let opening = null;
        const showLive = () => {
            clearTimeout (opening);
            opening = null;
            live.textContent = 'live';
            live.className = 'pill live';
            setStatus ('live', 'streaming ' + id);
        };
        source.addEventListener ('open', () => {
            clearTimeout (opening);
            opening = setTimeout (showLive, LIVE_AFTER_MS);
        });
        source.addEventListener ('message', (event) => {
            if (opening)
                showLive ();
            const { message } = parseJson (event.data);
            timeline.querySelector ('.empty-note')?.remove ();
            if (historyMissing) {
                historyMissing = false;
                showBanner ('');
            }
            addMessage (message);
            redrawPlan ();
            refreshView ();
            readStatuses ();
        });
        source.addEventListener ('call', (event) => {
            addCall (parseJson (event.data).call);
            redrawPlan ();
        });
        source.addEventListener ('deleted', () => {
            showBanner ('This context was deleted.');
            live.textContent = 'deleted';
            live.className = 'pill down';
            source.close ();
        });
        source.addEventListener ('error', (event) => {
            clearTimeout (opening);
            opening = null;
            if (stopped)
                return;
            if (event.data) {           //  actd refused the watch (event: error)
                let refusal = {};
                try {
                    refusal = JSON.parse (event.data);
                }
                catch {
                    refusal = { message: event.data };
                }
                const error = refusal.error || refusal;
                if (AWAY.has (error.code)) {
                    //  The page read slower than events came (busy), actd
                    //  is full (max_watches), stopping or down (busy,
                    //  timeout, unreachable), the connection to it dropped
                    //  (disconnected), or actd-http is being restarted
                    //  (unavailable): the stream ends, EventSource comes
                    //  back after retry, from the last event it took
                    //  (Last-Event-ID)
                    live.textContent = 'reconnecting…';
                    live.className = 'pill warn';
                    if (error.code !== 'busy')
                        setStatus ('down', `actd: ${error.message || error.code}`);
                    return;
                }
                showBanner (`actd refused to stream this context: ${error.code || ''} ${error.message || ''}`);
                live.textContent = 'refused';
                live.className = 'pill down';
                source.close ();
                return;
            }
            const closed = source.readyState === EventSource.CLOSED;
            live.textContent = closed ? 'stream closed' : 'reconnecting…';
            live.className = 'pill ' + (closed ? 'down' : 'warn');
            if (closed)
                setStatus ('down', 'the event stream was refused');
        });
    }

    (async () => {
        try {
            await loadHistory ();
        }
        catch (problem) {
            showBanner (`Cannot read the history: ${problem.message}`);
            historyMissing = true;
            setStatus (statusOf (problem), problem.message);
        }
        if (stopped)
            return;
        redrawPlan ();
        refreshView ();
        readStatuses ();
        stream ();
    }) ();

    return () => {
        stopped = true;
        source?.close ();
    };
}
