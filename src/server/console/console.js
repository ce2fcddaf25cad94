// Ember's console: requests to this server, the host panel and the functions table, refreshed.
// Nothing the server sends is ever parsed as HTML (a function's name, log or answer is text).
'use strict';

const REFRESH_MS = 2000;

const ember = {
	selected: null,  // the function shown below the table
	wanted: null,    // the one the page's address named (#fn=NAME)
	functions: [],   // /system/functions as last read
	metrics: {},     // /metrics as last read, by sample name
	info: null,      // /system/info
	totals: {},      // each function's history totals (p50 and p99 since the start)
	onRefresh: [],   // called after each refresh
	onSelect: [],    // called when another function is selected
};

// A request to this server only. The URL is built from the page's origin, which never holds
// credentials (fetch refuses a URL with them); the browser adds the ones it was given.
function api(path, init) {
	return fetch(location.origin + path,
		Object.assign({credentials: 'same-origin', cache: 'no-store'}, init || {}));
}

async function getJSON(path) {
	const r = await api(path);
	if (!r.ok)
		throw new Error(path + ': HTTP ' + r.status);
	return r.json();
}

// Prometheus' text format: {name: [{labels, value}]}
function parseMetrics(text) {
	const out = {};
	const line = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})?\s+(\S+)/;
	const label = /(\w+)="((?:[^"\\]|\\.)*)"/g;
	for (const l of text.split('\n')) {
		const m = l.startsWith('#') ? null : line.exec(l);
		if (!m)
			continue;
		const labels = {};
		for (const x of (m[2] || '').matchAll(label))
			labels[x[1]] = x[2];
		(out[m[1]] = out[m[1]] || []).push({labels, value: Number(m[3])});
	}
	return out;
}

// the value of an unlabelled sample, or the sum of those whose labels match
function metric(name, match) {
	let sum = 0;
	for (const s of ember.metrics[name] || [])
		if (!match || Object.keys(match).every(k =>
			typeof match[k] === 'function' ? match[k](s.labels[k]) : s.labels[k] === match[k]))
			sum += s.value;
	return sum;
}

// an element with text (never HTML) and a class
function el(tag, text, cls) {
	const e = document.createElement(tag);
	if (text !== undefined && text !== null)
		e.textContent = String(text);
	if (cls)
		e.className = cls;
	return e;
}

function setText(id, text) {
	document.getElementById(id).textContent = text;
}

function bytes(n) {
	if (n === undefined || n === null)
		return '—';
	const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
	let i = 0;
	while (n >= 1024 && i < units.length - 1) {
		n /= 1024;
		i++;
	}
	return (i ? n.toFixed(n < 10 ? 2 : 1) : n) + ' ' + units[i];
}

function secs(v) {
	if (v === undefined || v === null || v < 0)
		return '—';
	if (v < 1e-3)
		return (v * 1e6).toFixed(0) + ' µs';
	if (v < 1)
		return (v * 1e3).toFixed(v < 0.01 ? 2 : 1) + ' ms';
	return v.toFixed(2) + ' s';
}

function kindOf(f) {
	if (f.runtime)
		return 'runtime ' + f.runtime;
	if (f.image)
		return 'image ' + f.image;
	if (f.envProcess)
		return 'files: ' + f.envProcess;
	return '—';
}

function stateOf(f) {
	const e = f.ember || {};
	if (!e.loaded)
		return ['not loaded', 'state-unloaded'];
	if (e.inflight)
		return ['running ' + e.inflight + (e.queued ? ', ' + e.queued + ' queued' : ''), 'state-ready'];
	return ['ready', 'state-ready'];
}

function renderHost() {
	const backend = ember.info && ember.info.ember ? ember.info.ember.backend : '?';
	const card = document.getElementById('host-backend');
	card.classList.toggle('ptrace', backend === 'ptrace');
	setText('backend', backend === 'kvm' ? 'KVM' : backend);
	setText('backend-note', backend === 'kvm'
		? 'hardware isolation: each virtine is a virtual machine with no guest kernel'
		: backend === 'ptrace'
			? 'ptrace has NO hardware isolation: functions run as seccomp-locked host processes'
			: '');
	if (ember.info && ember.info.version)
		setText('version', 'release ' + ember.info.version.release + ' · up ' +
			Math.round(ember.info.ember.uptimeSeconds) + ' s');
	const alive = metric('ember_virtines_alive'), ready = metric('ember_virtines_ready');
	setText('virtines', alive);
	setText('virtines-note', ready + ' ready, ' + (alive - ready) + ' running');
	const limit = metric('ember_memory_budget_bytes'), used = metric('ember_virtine_memory_bytes');
	setText('budget', bytes(used) + ' of ' + bytes(limit));
	document.getElementById('budget-meter').value = limit ? used / limit : 0;
	setText('budget-note', 'peak ' + bytes(metric('ember_virtine_memory_peak_bytes')) + ', ' +
		metric('ember_memory_budget_waits_total') + ' waits');
	// without sharing, each ready virtine would hold its shared pages itself; with it, each
	// sharing domain holds one copy
	const shared = metric('ember_function_shared_bytes'), held = metric('ember_domain_bytes');
	setText('savings', bytes(Math.max(0, shared - held)));
	setText('savings-note', bytes(shared) + ' mapped shared, ' + bytes(held) + ' held once');
	setText('async', metric('ember_async_queue_depth') + ' waiting');
	setText('async-note', metric('ember_async_running') + ' running, ' +
		metric('ember_async_calls_completed_total') + ' done, ' +
		metric('ember_async_calls_rejected_total') + ' refused');
}

function row(f) {
	const e = f.ember || {}, mem = e.memory || {}, name = f.name;
	const starts = ['warm', 'restore', 'cold', 'init'].map(k =>
		metric('ember_starts_total', {function_name: name, start: k}));
	const errors = metric('gateway_function_invocation_total',
		{function_name: name, code: c => Number(c) >= 500});
	const total = ember.totals[name] || {};
	const [state, stateClass] = stateOf(f);
	const tr = el('tr');
	tr.dataset.name = name;
	tr.classList.toggle('selected', name === ember.selected);
	const cells = [
		[name], [kindOf(f)], [state, stateClass], [e.pool ? e.pool.ready : 0, 'num'],
		[f.invocationCount, 'num'], [errors, errors ? 'num bad' : 'num'],
		[secs(total.p50), 'num'], [secs(total.p99), 'num'], [starts.join(' / '), 'num'],
		[mem.sharedBytes === undefined ? '—' : bytes(mem.sharedBytes) + ' / ' + bytes(mem.privateBytes), 'num'],
		[mem.domain || (mem.sharing ? mem.sharing : '—')],
	];
	for (const [text, cls] of cells)
		tr.appendChild(el('td', text, cls));
	tr.addEventListener('click', () => select(name));
	return tr;
}

function renderFunctions() {
	const body = document.querySelector('#functions tbody');
	body.replaceChildren(...ember.functions.map(row));
	document.getElementById('no-functions').hidden = ember.functions.length > 0;
}

function select(name) {
	if (name === ember.selected)
		return;
	ember.selected = name;
	history.replaceState(null, '', name ? '#fn=' + encodeURIComponent(name) : '#');
	for (const tr of document.querySelectorAll('#functions tbody tr'))
		tr.classList.toggle('selected', tr.dataset.name === name);
	for (const f of ember.onSelect)
		f(name);
}

async function refresh() {
	try {
		const [fns, info, text] = await Promise.all([
			getJSON('/system/functions'), getJSON('/system/info'),
			api('/metrics').then(r => r.text())]);
		fns.sort((a, b) => a.name.localeCompare(b.name));
		const totals = await Promise.all(fns.map(f =>
			getJSON('/system/function/' + encodeURIComponent(f.name) + '/history?seconds=0')
				.then(h => h.total, () => ({}))));
		ember.functions = fns;
		ember.info = info;
		ember.metrics = parseMetrics(text);
		ember.totals = {};
		fns.forEach((f, i) => { ember.totals[f.name] = totals[i]; });
		renderHost();
		renderFunctions();
		const names = fns.map(f => f.name);
		if (!names.includes(ember.selected))
			select(names.includes(ember.wanted) ? ember.wanted : names.length ? names[0] : null);
		for (const f of ember.onRefresh)
			await f();
		setText('status', 'updated ' + new Date().toLocaleTimeString());
	} catch (err) {
		setText('status', 'cannot reach the server: ' + err.message);
	}
}

// one refresh at a time, every REFRESH_MS while the page is visible; now() for one at once
const refresher = {
	running: null,
	now() {
		if (!this.running)
			this.running = refresh().finally(() => { this.running = null; });
		return this.running;
	},
};

document.addEventListener('DOMContentLoaded', () => {
	const m = /^#fn=(.+)$/.exec(location.hash);
	if (m)
		ember.wanted = decodeURIComponent(m[1]);
	refresher.now();
	setInterval(() => { if (!document.hidden) refresher.now(); }, REFRESH_MS);
});
