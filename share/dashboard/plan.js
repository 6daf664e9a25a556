//  plan.js - the calls of one context as a graph: a node per call (its
//  tool and state), an edge from a call whose output path can write what
//  another, later call's parameters read. Laid out in layers, left to
//  right, and drawn as SVG.

import { feeds, referencesIn, refText } from './refs.js';
import { svg, stateClass } from './util.js';

const NODE_W = 168;             //  Node box width (px)
const NODE_H = 44;              //  Node box height
const GAP_X = 56;               //  Between layers
const GAP_Y = 12;               //  Between nodes of one layer
const PAD = 12;                 //  Around the drawing
const MAX_NODES = 200;          //  The latest calls drawn
const MAX_ROWS = 10;            //  Calls in one column
const MAX_KEPT = 2000;          //  Calls remembered; the oldest ended go first
const ENDED = new Set (['ok', 'error', 'timeout', 'skipped', 'cancelled']);

//  The graph's model: calls by id, and the edges worked out from them
export class Plan {
    constructor () {
        this.calls = new Map ();        //  call id -> call record (below)
    }

    //  The record of a call, created empty when first heard of
    call (id) {
        let call = this.calls.get (id);
        if (!call) {
            call = { id, tool: null, state: null, attempts: 0, outputPath: null,
                     targets: [], reads: [], readTexts: new Set (), dependsOn: [],
                     progress: undefined, outcome: null, seenAt: Date.now () };
            this.calls.set (id, call);
            if (this.calls.size > MAX_KEPT)
                this.prune ();
        }
        return call;
    }

    //  Take in a STATUS object (from an SSE call event or GET /v1/calls)
    status (status) {
        const call = this.call (String (status.call_id));
        call.state = status.state ?? call.state;
        call.attempts = status.attempts ?? call.attempts;
        if (status.tool)
            call.tool = status.tool;
        if (typeof status.output_path === 'string' && status.output_path !== call.outputPath) {
            call.outputPath = status.output_path;
            call.targets = referencesIn (status.output_path);
        }
        for (const expression of status.waiting_on || [])
            this.reads (call, expression);
        for (const expression of status.references || [])
            this.reads (call, expression);
        if (Array.isArray (status.depends_on))
            call.dependsOn = status.depends_on.map (String);
        if ('progress' in status)
            call.progress = status.progress;
        if (status.outcome)
            call.outcome = status.outcome;
        return call;
    }

    //  Take in what an output message tells of its call: the call as
    //  submitted (tool, output path, the references of its parameters)
    submitted (id, submitted) {
        const call = this.call (String (id));
        if (!submitted || typeof submitted !== 'object')
            return call;
        if (typeof submitted._tool === 'string')
            call.tool = call.tool || submitted._tool;
        if (typeof submitted._outputPath === 'string' && !call.outputPath) {
            call.outputPath = submitted._outputPath;
            call.targets = referencesIn (submitted._outputPath);
        }
        call.params = call.params || submitted;
        const walk = (value) => {
            if (typeof value === 'string')
                this.reads (call, value);
            else if (value && typeof value === 'object')
                Object.values (value).forEach (walk);
        };
        for (const [key, value] of Object.entries (submitted))
            if (!key.startsWith ('_'))
                walk (value);
        return call;
    }

    //  Forget the oldest ended calls, down to nine tenths of MAX_KEPT
    prune () {
        const ended = [...this.calls.values ()].filter ((c) => ENDED.has (c.state))
            .sort ((a, b) => Number (a.id) - Number (b.id));
        for (const call of ended.slice (0, this.calls.size - Math.floor (MAX_KEPT * 0.9)))
            this.calls.delete (call.id);
    }

    reads (call, expression) {
        if (call.readTexts.has (expression))
            return;
        call.readTexts.add (expression);
        call.reads.push (...referencesIn (expression));
    }

    //  [{from, to, label}] between the calls drawn
    edges (calls) {
        const edges = [];
        for (const consumer of calls) {
            const from = new Set ();
            for (const id of consumer.dependsOn)
                if (this.calls.has (id))
                    from.add (id);
            for (const producer of calls) {
                if (producer === consumer || Number (producer.id) >= Number (consumer.id))
                    continue;
                for (const read of consumer.reads)
                    if (producer.targets.some ((target) => feeds (target, read))) {
                        from.add (producer.id);
                        break;
                    }
            }
            for (const id of from)
                edges.push ({ from: id, to: consumer.id });
        }
        return edges;
    }

    //  The calls drawn: the latest MAX_NODES, by id
    drawn () {
        return [...this.calls.values ()]
            .sort ((a, b) => Number (a.id) - Number (b.id))
            .slice (-MAX_NODES);
    }
}

//  Layers by longest path from a root; order in a layer by the mean row
//  of the call's producers, then by id
function layout (calls, edges) {
    const parents = new Map (calls.map ((call) => [call.id, []]));
    for (const edge of edges)
        parents.get (edge.to)?.push (edge.from);
    const layer = new Map ();
    for (const call of calls) {           //  Sorted by id: producers first
        let depth = 0;
        for (const parent of parents.get (call.id))
            depth = Math.max (depth, (layer.get (parent) ?? -1) + 1);
        layer.set (call.id, depth);
    }
    const layers = [];
    for (const call of calls)
        (layers [layer.get (call.id)] ||= []).push (call);
    //  A layer of more than MAX_ROWS calls (many independent calls) is
    //  folded into several columns
    const row = new Map ();
    const position = new Map ();
    let column = 0;
    let rows = 1;
    for (const members of layers) {
        const key = (call) => {
            const seen = parents.get (call.id).map ((id) => row.get (id)).filter ((r) => r !== undefined);
            return seen.length ? seen.reduce ((a, b) => a + b, 0) / seen.length : -1;
        };
        members.sort ((a, b) => key (a) - key (b) || Number (a.id) - Number (b.id));
        members.forEach ((call, index) => {
            const r = index % MAX_ROWS;
            row.set (call.id, r);
            position.set (call.id, { x: PAD + (column + Math.floor (index / MAX_ROWS)) * (NODE_W + GAP_X),
                                     y: PAD + r * (NODE_H + GAP_Y) });
        });
        column += Math.ceil (members.length / MAX_ROWS);
        rows = Math.max (rows, Math.min (members.length, MAX_ROWS));
    }
    return {
        position,
        width: PAD * 2 + column * NODE_W + Math.max (0, column - 1) * GAP_X,
        height: PAD * 2 + rows * NODE_H + (rows - 1) * GAP_Y
    };
}

function clip (text, length) {
    return text.length > length ? text.slice (0, length - 1) + '…' : text;
}

//  Draw plan into an <svg> (replacing what it had); onSelect(id) on click
export function drawPlan (plan, target, { selected, onSelect } = {}) {
    const calls = plan.drawn ();
    const edges = plan.edges (calls);
    const { position, width, height } = layout (calls, edges);
    target.setAttribute ('width', width);
    target.setAttribute ('height', height);
    target.setAttribute ('viewBox', `0 0 ${width} ${height}`);
    const defs = svg ('defs', {},
        svg ('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5,
                         markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
             svg ('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrowhead' })));
    const lines = edges.map ((edge) => {
        const a = position.get (edge.from);
        const b = position.get (edge.to);
        const x1 = a.x + NODE_W;
        const y1 = a.y + NODE_H / 2;
        const x2 = b.x - 2;
        const y2 = b.y + NODE_H / 2;
        const bend = Math.max (24, (x2 - x1) / 2);
        return svg ('path', {
            class: 'edge', 'data-from': edge.from, 'data-to': edge.to,
            d: `M ${x1} ${y1} C ${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}`,
            'marker-end': 'url(#arrow)'
        });
    });
    const nodes = calls.map ((call) => {
        const { x, y } = position.get (call.id);
        const state = call.state || 'unknown';
        const target = call.targets.length ? call.targets.map (refText).join (' | ')
                     : call.outputPath === null ? 'fire-and-forget' : '';
        const title = [`call ${call.id}: ${call.tool || '?'}`, `state ${state}`,
                       `attempts ${call.attempts}`,
                       call.outputPath ? `output ${call.outputPath}` : 'no output path',
                       call.readTexts.size ? 'reads ' + [...call.readTexts].join (', ') : null]
            .filter (Boolean).join ('\n');
        return svg ('g', { class: `node ${stateClass (state)}${selected === call.id ? ' selected' : ''}`,
                           transform: `translate(${x},${y})`, 'data-call': call.id,
                           tabindex: 0, role: 'button' },
            svg ('title', {}, title),
            svg ('rect', { width: NODE_W, height: NODE_H, rx: 5 }),
            svg ('rect', { class: 'bar', width: 4, height: NODE_H, rx: 2 }),
            svg ('text', { x: 10, y: 17, class: 'tool' }, clip (call.tool || '?', 17)),
            svg ('text', { x: NODE_W - 8, y: 17, class: 'id', 'text-anchor': 'end' }, '#' + call.id),
            svg ('text', { x: 10, y: 34, class: 'sub' },
                 clip (`${state}${call.attempts > 1 ? ' ×' + call.attempts : ''} ${target}`, 26)));
    });
    target.replaceChildren (defs, svg ('g', { class: 'edges' }, lines),
                            svg ('g', { class: 'nodes' }, nodes));
    if (onSelect) {
        target.onclick = (event) => {
            const node = event.target.closest ('[data-call]');
            if (node)
                onSelect (node.dataset.call);
        };
        target.onkeydown = (event) => {
            const node = event.target.closest ('[data-call]');
            if (node && (event.key === 'Enter' || event.key === ' ')) {
                event.preventDefault ();
                onSelect (node.dataset.call);
            }
        };
    }
    return { nodes: calls.length, edges: edges.length };
}
