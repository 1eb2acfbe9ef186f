// Workflow graph: a layered left-to-right layout of a DAG, drawn as SVG.
//
// Layers are longest-path depths from the roots (a node sits one layer to
// the right of its deepest dependency); the order inside a layer is
// improved with a few barycenter sweeps to reduce crossings. Unknown
// dependencies are ignored and cycles are broken, so any input draws.

import { s } from './dom.js';

const W = 168, H = 52, GAP_X = 64, GAP_Y = 18, PAD = 16;

/**
 * layout computes positions: nodes [{id, depends_on}] →
 * {pos: Map(id → {x, y, layer}), width, height, edges: [[from, to]]}.
 */
export function layout(nodes) {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const deps = new Map(nodes.map((n) => [n.id, (n.depends_on || []).filter((d) => byId.has(d) && d !== n.id)]));
  const layer = new Map();
  const visiting = new Set();
  const depth = (id) => {
    if (layer.has(id)) return layer.get(id);
    if (visiting.has(id)) return 0; // a cycle: break it here
    visiting.add(id);
    let d = 0;
    for (const p of deps.get(id)) d = Math.max(d, depth(p) + 1);
    visiting.delete(id);
    layer.set(id, d);
    return d;
  };
  for (const n of nodes) depth(n.id);
  const layers = [];
  for (const n of nodes) {
    const l = layer.get(n.id);
    (layers[l] ||= []).push(n.id);
  }
  for (let l = 0; l < layers.length; l++) layers[l] ||= [];
  // barycenter sweeps: order each layer by the mean index of its parents
  const index = new Map();
  const reindex = () => layers.forEach((ids) => ids.forEach((id, i) => index.set(id, i)));
  reindex();
  const children = new Map(nodes.map((n) => [n.id, []]));
  for (const [id, ps] of deps) for (const p of ps) children.get(p).push(id);
  for (let sweep = 0; sweep < 4; sweep++) {
    const down = sweep % 2 === 0;
    const order = down ? layers.keys() : [...layers.keys()].reverse();
    for (const l of order) {
      const ids = layers[l];
      const bary = new Map(ids.map((id) => {
        const ns = down ? deps.get(id) : children.get(id);
        if (!ns.length) return [id, index.get(id)];
        return [id, ns.reduce((a, n) => a + index.get(n), 0) / ns.length];
      }));
      ids.sort((a, b) => bary.get(a) - bary.get(b) || index.get(a) - index.get(b));
      ids.forEach((id, i) => index.set(id, i));
    }
  }
  const tallest = Math.max(1, ...layers.map((ids) => ids.length));
  const height = PAD * 2 + tallest * H + (tallest - 1) * GAP_Y;
  const pos = new Map();
  layers.forEach((ids, l) => {
    const colH = ids.length * H + (ids.length - 1) * GAP_Y;
    const top = (height - colH) / 2;
    ids.forEach((id, i) => pos.set(id, { x: PAD + l * (W + GAP_X), y: top + i * (H + GAP_Y), layer: l }));
  });
  const edges = [];
  for (const [id, ps] of deps) for (const p of ps) edges.push([p, id]);
  const width = PAD * 2 + layers.length * W + Math.max(0, layers.length - 1) * GAP_X;
  return { pos, width, height, edges };
}

const clip = (t, n) => (t.length > n ? t.slice(0, n - 1) + '…' : t);

/** draw renders a workflow's nodes as an SVG element; onSelect(node) on click. */
export function draw(nodes, onSelect) {
  const { pos, width, height, edges } = layout(nodes);
  const svg = s('svg', { class: 'graph', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': 'Workflow graph' });
  const defs = s('defs', null,
    s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      s('path', { d: 'M0 0L10 5L0 10z', class: 'arrowhead' })));
  svg.append(defs);
  for (const [from, to] of edges) {
    const a = pos.get(from), b = pos.get(to);
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x - 2, y2 = b.y + H / 2;
    const mx = (x1 + x2) / 2;
    svg.append(s('path', { class: 'edge', d: `M${x1} ${y1}C${mx} ${y1} ${mx} ${y2} ${x2} ${y2}`, 'marker-end': 'url(#arrow)' }));
  }
  for (const n of nodes) {
    const p = pos.get(n.id);
    const status = String(n.status || 'pending').replace(/[^a-z_]/g, '');
    const g = s('g', { class: `node status-${status}`, transform: `translate(${p.x} ${p.y})`, tabindex: 0, role: 'button', 'data-node': n.id },
      s('title', null, `${n.id} (${status})${n.objective ? '\n' + n.objective : ''}`),
      s('rect', { width: W, height: H, rx: 8 }),
      s('circle', { cx: 14, cy: 17, r: 5, class: 'state-dot' }),
      s('text', { x: 26, y: 21, class: 'node-id' }, clip(String(n.id), 20)),
      s('text', { x: 12, y: 40, class: 'node-sub' }, clip(status + (n.objective ? ' · ' + n.objective : ''), 26)));
    const pick = () => onSelect && onSelect(n);
    g.addEventListener('click', pick);
    g.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); pick(); } });
    svg.append(g);
  }
  return svg;
}
