// mcpx UI: the caller's artifacts, live. Plain JavaScript, no build step,
// nothing loaded from another origin. Every request goes to this origin:
// the API with the token (if any) in an Authorization header, artifact
// bytes through their signed URLs. Untrusted text (names, summaries,
// contents) only ever reaches the page as text nodes, never as HTML; an
// HTML artifact is shown in a frame sandboxed without scripts or origin.
'use strict';
(() => {
  const $ = (sel) => document.querySelector(sel);
  const previewBytes = Number(document.querySelector('meta[name="mcpx-preview-bytes"]').content) || 1 << 20;
  const tokenKey = 'mcpx-token';
  let token = sessionStorage.getItem(tokenKey) || '';
  const cards = new Map(); // artifact id -> {info, li}
  const pending = new Map(); // artifact id -> Promise<info|null> (meta being fetched)
  let lastEventID = '';
  let stream = null; // AbortController of the /events fetch
  let nextCursor = '';

  // el builds an element; text is set as text, never parsed as HTML.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  function bytes(n) {
    if (!Number.isFinite(n)) return '?';
    const u = ['B', 'KB', 'MB', 'GB', 'TB'];
    let i = 0;
    while (n >= 1000 && i < u.length - 1) { n /= 1000; i++; }
    return (i ? n.toFixed(n < 10 ? 1 : 0) : n) + ' ' + u[i];
  }
  const num = (n) => Number(n).toLocaleString('en-US');

  function authHeaders(extra) {
    const h = Object.assign({}, extra);
    if (token) h.Authorization = 'Bearer ' + token;
    return h;
  }

  // api fetches an API path (relative to the page) as the caller.
  async function api(path, opts) {
    opts = opts || {};
    const r = await fetch(path, Object.assign({}, opts, { headers: authHeaders(opts.headers), credentials: 'omit', cache: 'no-store' }));
    if (r.status === 401) {
      needToken();
      throw new Error('authentication required');
    }
    return r;
  }

  function notice(msg) {
    const n = $('#notice');
    n.textContent = msg || '';
    n.hidden = !msg;
  }

  function needToken() {
    notice(token ? 'The server refused this token: enter another.' : 'This server wants an access token: enter it above (kept in this tab only).');
    $('#token').focus();
  }

  // sameOrigin turns a signed URL into a path on this page's origin, so
  // previews load from here even when serve.base_url names a proxy.
  function sameOrigin(u) {
    if (!u) return '';
    try {
      const p = new URL(u, location.href);
      return p.pathname + p.search;
    } catch (e) {
      return '';
    }
  }

  function mimeOf(a) { return (a.mime_type || '').split(';')[0].trim().toLowerCase(); }

  // viewerFor says how an artifact is previewed: image, pdf, html, json,
  // text or none; a display hint's viewer_hint wins when it names one.
  function viewerFor(a, hint) {
    if (hint === 'image' || hint === 'pdf' || hint === 'html') return hint;
    if (hint === 'code') return mimeOf(a).includes('json') ? 'json' : 'text';
    const m = mimeOf(a);
    if (m.startsWith('image/')) return 'image'; // SVG too: an <img> runs no script
    if (m === 'application/pdf') return 'pdf';
    if (m === 'text/html' || m === 'application/xhtml+xml') return 'html';
    if (m === 'application/json' || m.endsWith('+json') || m === 'application/x-ndjson') return 'json';
    if (m.startsWith('text/') || m.endsWith('+xml') || m === 'application/xml' || m === 'application/javascript' ||
        m === 'application/yaml' || m === 'application/x-yaml' || m === 'application/toml') return 'text';
    return 'none';
  }

  // summaryText renders Ref.Content (an inspect summary) as one line.
  function summaryText(c) {
    if (!c || typeof c !== 'object') return '';
    const parts = [];
    const add = (label, v) => { if (v !== undefined && v !== null && v !== '' && v !== 0) parts.push(label + v); };
    add('', c.kind + (c.format && c.format !== c.kind ? ' (' + c.format + ')' : ''));
    if (c.width && c.height) parts.push(c.width + '×' + c.height);
    add('pages: ', c.pages);
    add('title: ', c.title);
    add('author: ', c.author);
    add('lines: ', c.lines);
    add('words: ', c.words);
    add('rows: ', c.rows);
    add('entries: ', c.entries);
    add('length: ', c.length);
    if (c.duration_ms) parts.push((c.duration_ms / 1000).toFixed(1) + ' s');
    for (const k of ['columns', 'keys', 'item_keys', 'sheets', 'names']) {
      if (Array.isArray(c[k]) && c[k].length) parts.push(k.replace('_', ' ') + ': ' + c[k].slice(0, 8).join(', ') + (c[k].length > 8 ? ', …' : ''));
    }
    if (c.text) parts.push('“' + c.text.slice(0, 160) + (c.text.length > 160 ? '…' : '') + '”');
    if (c.partial) parts.push('(partial: ' + c.partial + ')');
    return parts.join(' · ');
  }

  function refreshCount() {
    $('#count').textContent = cards.size ? '(' + cards.size + ')' : '';
    $('#empty').hidden = cards.size > 0;
  }

  // addCard shows one artifact (an ArtifactInfo); live ones go on top.
  function addCard(info, live) {
    const a = info.artifact;
    if (cards.has(a.id)) return cards.get(a.id);
    const url = sameOrigin(a.url);
    const kind = viewerFor(a);
    const name = a.filename || a.id;
    const src = a.source || {};
    const li = el('li', { class: 'card' + (live ? ' new' : ''), 'data-id': a.id, 'data-viewer': kind },
      el('div', { class: 'name', text: name }),
      el('div', { class: 'actions' },
        kind !== 'none' && url ? el('button', { type: 'button', class: 'preview', text: 'Preview', onclick: () => openCanvas([a.id], {}) }) : null,
        url ? el('a', { class: 'button download', href: url, download: name, text: 'Download' }) : null),
      el('div', { class: 'type', text: (a.mime_type || 'unknown type') + ' · ' + bytes(a.size_bytes) + (a.id !== name ? ' · ' + a.id : '') }),
      el('div', { class: 'source', text: [src.server, src.tool].filter(Boolean).join(' / ') + (src.layer ? ' (layer ' + src.layer + ')' : '') }),
      el('div', { class: 'when', text: 'stored ' + new Date(info.created_at).toLocaleString() + (info.expires_at ? ' · expires ' + new Date(info.expires_at).toLocaleString() : '') }),
      el('div', { class: 'summary', text: summaryText(a.content) }));
    if (kind === 'image' && url) li.append(el('img', { class: 'thumb', src: url, alt: name, loading: 'lazy' }));
    const list = $('#artifacts');
    if (live) list.prepend(li); else list.append(li);
    const c = { info, li };
    cards.set(a.id, c);
    refreshCount();
    return c;
  }

  // meta fetches one artifact's info once, however many events name it.
  function meta(id) {
    if (cards.has(id)) return Promise.resolve(cards.get(id).info);
    if (!pending.has(id)) {
      pending.set(id, api('artifacts/' + encodeURIComponent(id) + '/meta')
        .then((r) => (r.ok ? r.json() : null))
        .catch(() => null)
        .then((info) => {
          pending.delete(id);
          if (info) addCard(info, true);
          return info;
        }));
    }
    return pending.get(id);
  }

  async function loadList(reset) {
    if (reset) {
      cards.clear();
      $('#artifacts').replaceChildren();
      nextCursor = '';
    }
    const r = await api('artifacts' + (nextCursor ? '?cursor=' + encodeURIComponent(nextCursor) : ''));
    if (!r.ok) {
      notice('Listing artifacts failed: HTTP ' + r.status);
      return;
    }
    const page = await r.json();
    for (const info of page.artifacts) addCard(info, false);
    nextCursor = page.next_cursor || '';
    $('#more').hidden = !nextCursor;
    refreshCount();
  }

  // Calls: one entry per call, from result_rewritten (with its kept_out
  // numbers); artifacts stored by a call the API hears no
  // result_rewritten for (a gateway tools/call) are grouped by server and
  // tool as they arrive, with their stored bytes. On load, the recent
  // calls still in the server's event buffer (GET /calls) go below the
  // live ones; an event is shown once, whichever way it came.
  let openCall = null; // {server, tool, at, li, ids, bytes}
  const callGroupMs = 2000;
  const maxCalls = 200;
  const seenCalls = new Set(); // ids of the call events shown

  // callEntry adds a call's entry: on top, or (a recent one) at the end.
  function callEntry(server, tool, recent) {
    const li = el('li', { class: 'call' },
      el('div', { class: 'tool', text: [server, tool].filter(Boolean).join(' / ') || '(call)' }),
      el('div', { class: 'kept' }), el('div', { class: 'files' }));
    if (recent) $('#calls').append(li); else $('#calls').prepend(li);
    while ($('#calls').children.length > maxCalls) $('#calls').lastChild.remove();
    return li;
  }

  function setFiles(li, arts) {
    const box = li.querySelector('.files');
    box.replaceChildren();
    arts.forEach((a, i) => {
      if (i) box.append(', ');
      box.append(el('button', { type: 'button', class: 'link', text: a.filename || a.id, onclick: () => openCanvas([a.id], {}) }));
    });
  }

  function onStored(ev) {
    const a = ev.artifact;
    const now = Date.now();
    if (!openCall || openCall.server !== ev.server || openCall.tool !== ev.tool || now - openCall.at > callGroupMs) {
      openCall = { server: ev.server, tool: ev.tool, at: now, li: callEntry(ev.server, ev.tool), arts: [], bytes: 0 };
    }
    openCall.at = now;
    openCall.arts.push(a);
    openCall.bytes += a.size_bytes || 0;
    openCall.li.querySelector('.kept').textContent = 'stored ' + openCall.arts.length + ' artifact' + (openCall.arts.length > 1 ? 's' : '') + ', ' + bytes(openCall.bytes) + ' out of the context';
    setFiles(openCall.li, openCall.arts);
    meta(a.id);
  }

  function onRewritten(ev, recent) {
    let li;
    if (!recent && openCall && openCall.server === ev.server && openCall.tool === ev.tool) li = openCall.li;
    else li = callEntry(ev.server, ev.tool, recent);
    if (!recent) openCall = null;
    const k = ev.kept_out;
    const n = (ev.artifacts || []).length;
    li.querySelector('.kept').textContent = k
      ? 'kept out ' + bytes(k.bytes) + ' (~' + num(k.tokens) + ' tokens), ' + k.artifacts + ' artifact' + (k.artifacts === 1 ? '' : 's')
      : 'stored ' + n + ' artifact' + (n === 1 ? '' : 's');
    li.dataset.keptBytes = k ? k.bytes : '';
    li.dataset.keptTokens = k ? k.tokens : '';
    setFiles(li, ev.artifacts || []);
    // a recent call's display hints were for when it ran
    if (ev.display && !recent) honourDisplay(ev.display, ev.artifacts || []);
  }

  // honourDisplay opens the canvas when the tool asked (open_canvas) on
  // its primary_file (else the first artifact with a preview), with its
  // viewer_hint; mode "replace" (the default) shows only this call's
  // files, "append" and "split" add them to the open tabs.
  async function honourDisplay(d, arts) {
    if (!d || typeof d !== 'object' || !d.open_canvas || !arts.length) return;
    const infos = (await Promise.all(arts.map((a) => meta(a.id)))).filter(Boolean);
    if (!infos.length) return;
    let primary = infos.find((i) => d.primary_file && (i.artifact.filename === d.primary_file));
    if (!primary) primary = infos.find((i) => viewerFor(i.artifact) !== 'none') || infos[0];
    const ids = [primary.artifact.id].concat(infos.filter((i) => i !== primary).map((i) => i.artifact.id));
    openCanvas(ids, { hint: typeof d.viewer_hint === 'string' ? d.viewer_hint : '', append: d.mode === 'append' || d.mode === 'split' });
  }

  // The canvas: tabs of artifacts and the viewer of the active one.
  let tabs = []; // [{id, hint}]
  let active = '';

  function openCanvas(ids, opts) {
    if (!opts.append) tabs = [];
    ids.forEach((id, i) => {
      if (!tabs.some((t) => t.id === id)) tabs.push({ id, hint: i === 0 ? opts.hint || '' : '' });
    });
    active = ids[0];
    $('#canvas').hidden = false;
    document.querySelector('main').classList.add('with-canvas');
    renderCanvas();
    // the canvas is sticky; this brings it in when the page is scrolled
    // where sticking cannot (above it)
    $('#canvas').scrollIntoView({ block: 'nearest' });
  }

  function closeCanvas() {
    tabs = [];
    active = '';
    $('#canvas').hidden = true;
    document.querySelector('main').classList.remove('with-canvas');
    $('#viewer').replaceChildren();
  }

  function renderCanvas() {
    $('#tabs').replaceChildren(...tabs.map((t) => {
      const c = cards.get(t.id);
      const name = c ? c.info.artifact.filename || t.id : t.id;
      return el('button', { type: 'button', class: t.id === active ? 'active' : '', text: name, onclick: () => { active = t.id; renderCanvas(); } });
    }));
    const t = tabs.find((x) => x.id === active);
    if (t) showViewer(t.id, t.hint);
  }

  async function showViewer(id, hint) {
    const v = $('#viewer');
    v.replaceChildren(el('p', { class: 'note', text: 'loading…' }));
    const info = await meta(id);
    if (!info) {
      v.replaceChildren(el('p', { class: 'note', text: 'This artifact is gone or not yours.' }));
      return;
    }
    const a = info.artifact;
    const url = sameOrigin(a.url);
    const kind = viewerFor(a, hint);
    v.dataset.id = id;
    v.dataset.viewer = kind;
    const head = el('p', { class: 'note', text: (a.filename || a.id) + ' · ' + (a.mime_type || '?') + ' · ' + bytes(a.size_bytes) + ' ' },
      el('a', { href: url, download: a.filename || a.id, text: 'Download' }));
    switch (kind) {
      case 'image':
        v.replaceChildren(head, el('img', { class: 'preview-image', src: url, alt: a.filename || a.id }));
        return;
      case 'pdf':
        // the browser's own PDF viewer, on the signed URL
        v.replaceChildren(head, el('iframe', { class: 'preview-pdf', src: url, title: a.filename || a.id }));
        return;
      case 'html':
      case 'json':
      case 'text':
        break;
      default:
        v.replaceChildren(head, el('p', { class: 'note', text: 'No preview for this type: download it.' }));
        return;
    }
    let text;
    try {
      const r = await fetch(url, { headers: { Range: 'bytes=0-' + (previewBytes - 1) }, credentials: 'omit', cache: 'no-store' });
      if (!r.ok) throw new Error('HTTP ' + r.status);
      text = await r.text();
    } catch (e) {
      v.replaceChildren(head, el('p', { class: 'note', text: 'Loading the preview failed: ' + e.message }));
      return;
    }
    if (active !== id) return;
    const cut = a.size_bytes > previewBytes ? el('p', { class: 'note', text: 'Showing the first ' + bytes(previewBytes) + ' of ' + bytes(a.size_bytes) + '.' }) : null;
    if (kind === 'html') {
      // sandbox="": no scripts, no forms, no popups, a unique origin (it
      // cannot reach this page); the page's CSP applies to it too.
      const f = el('iframe', { class: 'preview-html', sandbox: '', referrerpolicy: 'no-referrer', title: a.filename || a.id });
      f.srcdoc = text;
      v.replaceChildren(head, cut || '', f);
      return;
    }
    v.replaceChildren(head, cut || '', kind === 'json' ? jsonPre(text) : el('pre', { class: 'preview-text', text }));
  }

  // jsonPre pretty-prints (when the text parses) and highlights JSON.
  function jsonPre(text) {
    try { text = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* cut or not JSON: as it is */ }
    const pre = el('pre', { class: 'preview-json' });
    const re = /("(?:[^"\\]|\\.)*")(\s*:)?|\b(true|false|null)\b|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
    let at = 0;
    for (let m; (m = re.exec(text));) {
      if (m.index > at) pre.append(text.slice(at, m.index));
      const cls = m[1] ? (m[2] ? 'j-key' : 'j-str') : m[3] ? 'j-lit' : 'j-num';
      pre.append(el('span', { class: cls, text: m[1] || m[0] }));
      if (m[2]) pre.append(m[2]);
      at = re.lastIndex;
    }
    pre.append(text.slice(at));
    return pre;
  }

  function onEvicted(ev) {
    const c = cards.get(ev.artifact.id);
    if (!c || c.li.classList.contains('evicted')) return;
    c.li.classList.add('evicted');
    c.li.append(el('div', { class: 'evicted-note', text: 'evicted' + (ev.why ? ': ' + ev.why : '') }));
  }

  function onNotice(ev, text, recent) {
    const li = callEntry(ev.server, ev.tool, recent);
    li.classList.add('failed');
    li.querySelector('.kept').textContent = text;
  }

  // onCall shows a call's event, live or recent, once.
  function onCall(type, ev, recent) {
    if (ev.id) {
      if (seenCalls.has(ev.id)) return;
      seenCalls.add(ev.id);
    }
    switch (type) {
      case 'result_rewritten': onRewritten(ev, recent); break;
      case 'observation_clamped': onNotice(ev, 'clamped: ' + num(ev.original_chars) + ' → ' + num(ev.clamped_chars) + ' characters', recent); break;
      case 'layer_failed': onNotice(ev, 'layer ' + (ev.layer || '?') + ' failed: ' + (ev.error || ''), recent); break;
      default: break;
    }
  }

  // loadCalls shows the caller's recent calls (newest first) below the
  // live ones.
  async function loadCalls() {
    const r = await api('calls');
    if (!r.ok) return;
    const page = await r.json();
    for (const ev of page.calls || []) {
      if ($('#calls').children.length >= maxCalls) break;
      onCall(ev.type, ev, true);
    }
  }

  function onEvent(type, ev) {
    switch (type) {
      case 'artifact_stored': onStored(ev); break;
      case 'result_rewritten':
      case 'observation_clamped':
      case 'layer_failed': onCall(type, ev, false); break;
      case 'artifact_evicted': onEvicted(ev); break;
      case 'gap': loadList(true); break; // events were missed: list again
      default: break;
    }
  }

  // dispatch parses one server-sent event block.
  function dispatch(block) {
    let id = '', type = 'message';
    const data = [];
    for (const line of block.split('\n')) {
      if (!line || line.startsWith(':')) continue;
      const c = line.indexOf(':');
      const field = c < 0 ? line : line.slice(0, c);
      let val = c < 0 ? '' : line.slice(c + 1);
      if (val.startsWith(' ')) val = val.slice(1);
      if (field === 'id') id = val;
      else if (field === 'event') type = val;
      else if (field === 'data') data.push(val);
    }
    if (id) lastEventID = id;
    if (!data.length) return;
    let ev;
    try { ev = JSON.parse(data.join('\n')); } catch (e) { return; }
    onEvent(type, ev);
  }

  function setLive(on, text) {
    const l = $('#live');
    l.classList.toggle('on', on);
    l.textContent = text || (on ? 'live' : 'reconnecting…');
  }

  // follow reads GET /events with fetch (so the token goes in a header,
  // which EventSource cannot send), resuming with Last-Event-ID after a
  // drop. connected resolves once the stream is open.
  function follow(connected) {
    const ctl = new AbortController();
    stream = ctl;
    (async () => {
      let delay = 1000;
      while (!ctl.signal.aborted) {
        try {
          const h = authHeaders({ Accept: 'text/event-stream' });
          if (lastEventID) h['Last-Event-ID'] = lastEventID;
          const r = await fetch('events', { headers: h, signal: ctl.signal, credentials: 'omit', cache: 'no-store' });
          if (r.status === 401) { setLive(false, 'no token'); needToken(); connected(false); return; }
          if (!r.ok) throw new Error('HTTP ' + r.status);
          setLive(true);
          connected(true);
          delay = 1000;
          const rd = r.body.pipeThrough(new TextDecoderStream()).getReader();
          let buf = '';
          for (;;) {
            const { value, done } = await rd.read();
            if (done) break;
            buf += value.replace(/\r\n?/g, '\n');
            let i;
            while ((i = buf.indexOf('\n\n')) >= 0) {
              dispatch(buf.slice(0, i));
              buf = buf.slice(i + 2);
            }
          }
        } catch (e) {
          if (ctl.signal.aborted) return;
        }
        setLive(false);
        connected(false);
        await new Promise((res) => setTimeout(res, delay));
        delay = Math.min(delay * 2, 15000);
      }
    })();
  }

  // start (re)connects: the stream first, then the list, so nothing
  // stored in between is missed (cards are keyed by id).
  async function start() {
    if (stream) stream.abort();
    lastEventID = '';
    // another token is another caller: none of the calls shown are its
    $('#calls').replaceChildren();
    seenCalls.clear();
    openCall = null;
    let once;
    const ok = new Promise((res) => { once = res; });
    follow((v) => { if (once) { once(v); once = null; } });
    if (!(await ok)) return;
    notice('');
    await loadList(true).catch((e) => notice(e.message));
    loadCalls().catch(() => { /* live calls still show */ });
    loadServers();
  }

  // Resources: the servers (when the API can list them), one server's
  // resources a page at a time, one resource read on demand.
  let resServer = '', resCursor = '';

  async function loadServers() {
    try {
      const r = await api('resources');
      if (!r.ok) return;
      const { servers } = await r.json();
      $('#res-servers').replaceChildren(...servers.map((s) => el('option', { value: s })));
      if (servers.length && !$('#res-server').value) $('#res-server').value = servers[0];
    } catch (e) { /* no list: type a name */ }
  }

  async function listResources(more) {
    if (!more) {
      resServer = $('#res-server').value.trim();
      resCursor = '';
      $('#resources').replaceChildren();
      $('#resource-view').replaceChildren();
    }
    if (!resServer) return;
    const r = await api('resources/' + encodeURIComponent(resServer) + (resCursor ? '?cursor=' + encodeURIComponent(resCursor) : ''));
    if (!r.ok) {
      $('#resources').replaceChildren(el('li', { class: 'note', text: r.status === 404 ? 'No server "' + resServer + '" to browse.' : 'HTTP ' + r.status + ': ' + (await r.text()) }));
      $('#res-more').hidden = true;
      return;
    }
    const page = await r.json();
    for (const res of page.resources || []) {
      $('#resources').append(el('li', { class: 'resource' },
        el('span', { text: (res.name || res.uri) + (res.mimeType ? ' · ' + res.mimeType : '') + (res.size ? ' · ' + bytes(res.size) : ''), title: res.uri }),
        el('button', { type: 'button', text: 'Read', onclick: () => readResource(res.uri) })));
    }
    // a server without resources says so in a note
    if (!(page.resources || []).length && !more) $('#resources').append(el('li', { class: 'note', text: page.note || 'No resources.' }));
    resCursor = page.nextCursor || '';
    $('#res-more').hidden = !resCursor;
  }

  async function readResource(uri) {
    const view = $('#resource-view');
    view.replaceChildren(el('p', { class: 'note', text: 'reading ' + uri + '…' }));
    const r = await api('resources/' + encodeURIComponent(resServer) + '/read?uri=' + encodeURIComponent(uri));
    if (!r.ok) {
      view.replaceChildren(el('p', { class: 'note', text: 'HTTP ' + r.status + ': ' + (await r.text()) }));
      return;
    }
    const res = await r.json();
    view.replaceChildren(el('p', { class: 'note', text: uri }));
    for (const c of res.contents || []) {
      const m = (c.mimeType || '').toLowerCase();
      if (typeof c.text === 'string') {
        view.append(m.includes('json') ? jsonPre(c.text.slice(0, previewBytes)) : el('pre', { class: 'resource-text', text: c.text.slice(0, previewBytes) }));
      } else if (typeof c.blob === 'string') {
        if (/^image\/(png|jpeg|gif|webp)$/.test(m)) view.append(el('img', { src: 'data:' + m + ';base64,' + c.blob, alt: c.uri || uri }));
        else view.append(el('p', { class: 'note', text: 'binary ' + (m || 'data') + ', ' + bytes(Math.floor(c.blob.length * 3 / 4)) }));
      }
    }
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('#token').value = token ? '••••••••' : '';
    $('#token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const v = $('#token').value.trim();
      if (v && v !== '••••••••') {
        token = v;
        sessionStorage.setItem(tokenKey, v);
        $('#token').value = '••••••••';
      }
      start();
    });
    $('#forget').addEventListener('click', () => {
      token = '';
      sessionStorage.removeItem(tokenKey);
      $('#token').value = '';
      start();
    });
    $('#more').addEventListener('click', () => loadList(false));
    $('#close-canvas').addEventListener('click', closeCanvas);
    $('#res-form').addEventListener('submit', (e) => { e.preventDefault(); listResources(false); });
    $('#res-more').addEventListener('click', () => listResources(true));
    start();
  });
})();
