//  contexts.js - the tenant's contexts, searchable by prefix
//  (/v1/contexts, a page at a time through "next").

import { api, statusOf } from './api.js';
import { h, replace, number, ago, debounce } from './util.js';

const PAGE = 100;
const REFRESH_MS = 5000;        //  The first page is read again this often

export function contextHref (id) {
    return '#/c/' + encodeURIComponent (id);
}

export function mountContexts (root, { query, setStatus, navigate }) {
    let prefix = query.get ('prefix') || '';
    let rows = [];              //  Contexts listed so far
    let next = null;            //  "after" of the next page, or null
    let pages = 0;
    let generation = 0;         //  Answers of an older search are dropped
    let timer = null;

    const input = h ('input#prefix', { type: 'search', placeholder: 'context id prefix…',
                                       value: prefix, autocomplete: 'off', spellcheck: false });
    const body = h ('tbody');
    const more = h ('button.more', { type: 'button', hidden: true, onclick: () => load (false) },
                    'Load more');
    const summary = h ('span.hint');
    const error = h ('div.error-banner', { hidden: true });
    root.append (
        h ('section.panel',
           h ('header', h ('h2', 'Contexts'), input, summary),
           error,
           h ('table.grid#contexts',
              h ('thead', h ('tr', h ('th', 'context'), h ('th.num', 'messages'), h ('th.num', 'last seq'),
                             h ('th.num', 'pending calls'), h ('th', 'updated'))),
              body),
           more));

    function render () {
        const now = Date.now ();
        replace (body, rows.length ? rows.map ((c) =>
            h ('tr.link', { dataset: { context: c.context }, onclick: () => navigate (contextHref (c.context)) },
               h ('td.name', h ('a', { href: contextHref (c.context) }, c.context)),
               h ('td.num', number (c.messages)),
               h ('td.num', String (c.last_seq ?? '–')),
               h ('td.num' + (c.pending ? '.active' : ''), String (c.pending ?? 0)),
               h ('td', { title: c.updated || '' }, c.updated ? ago (c.updated, now) : '–')))
            : h ('tr', h ('td.empty', { colSpan: 5 },
                          prefix ? `No context starts with “${prefix}”.` : 'No context yet.')));
        more.hidden = !next;
        summary.textContent = `${rows.length}${next ? '+' : ''} shown`;
    }

    //  Load the first page again (fresh) or the next one
    async function load (fresh) {
        const mine = fresh ? ++generation : generation;
        try {
            const page = await api.contexts (prefix, fresh ? null : next, PAGE);
            if (mine !== generation)
                return;
            rows = fresh ? page.contexts : rows.concat (page.contexts);
            next = page.next ?? null;
            pages = fresh ? 1 : pages + 1;
            error.hidden = true;
            setStatus ('live', 'actd answers');
            render ();
        }
        catch (problem) {
            if (mine !== generation)
                return;
            error.hidden = false;
            error.textContent = `Cannot list contexts: ${problem.message}`;
            setStatus (statusOf (problem), problem.message);
        }
    }

    const search = debounce (() => {
        prefix = input.value;
        const hash = '#/contexts' + (prefix ? '?prefix=' + encodeURIComponent (prefix) : '');
        history.replaceState (null, '', hash);
        load (true);
    }, 200);
    input.addEventListener ('input', search);
    input.addEventListener ('keydown', (event) => {
        if (event.key === 'Enter' && rows.length === 1)
            navigate (contextHref (rows [0].context));
    });

    load (true);
    timer = setInterval (() => {
        if (pages <= 1 && !document.hidden)
            load (true);
    }, REFRESH_MS);
    input.focus ();
    return () => {
        clearInterval (timer);
        generation++;
    };
}
