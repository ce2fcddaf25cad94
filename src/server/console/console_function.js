// Ember's console: one function, its charts (Chart.js), its deployment and its log, followed live.
'use strict';

const COLORS = {p50: '#2563eb', p99: '#c2410c', max: '#9ca3af', ok: '#16a34a', errors: '#dc2626',
	refused: '#f59e0b', warm: '#16a34a', restore: '#2563eb', cold: '#7c3aed', init: '#c2410c',
	exits: '#c2410c', host: '#2563eb', guest: '#16a34a'};
const LOG_LINES = 500; // kept on the page

const charts = {};

function dataset(label, color, extra) {
	return Object.assign({label, borderColor: color, backgroundColor: color, borderWidth: 1.5,
		pointRadius: 1.5, spanGaps: false, data: []}, extra || {});
}

function makeChart(id, type, datasets, stacked, tick) {
	return new Chart(document.getElementById(id), {
		type,
		data: {labels: [], datasets},
		options: {
			animation: false, responsive: true, maintainAspectRatio: false,
			interaction: {mode: 'index', intersect: false},
			plugins: {legend: {position: 'bottom', labels: {boxWidth: 12}}},
			scales: {
				x: {stacked, ticks: {maxTicksLimit: 6, maxRotation: 0}},
				y: {stacked, beginAtZero: true, ticks: tick ? {callback: tick} : {}},
			},
		},
	});
}

function makeCharts() {
	charts.latency = makeChart('chart-latency', 'line', [dataset('p50', COLORS.p50),
		dataset('p99', COLORS.p99), dataset('max', COLORS.max, {borderDash: [4, 3]})],
		false, v => secs(v));
	charts.rate = makeChart('chart-rate', 'bar', [dataset('answered', COLORS.ok),
		dataset('errors (5xx)', COLORS.errors), dataset('refused (429)', COLORS.refused)], true);
	charts.starts = makeChart('chart-starts', 'bar', ['warm', 'restore', 'cold', 'init'].map(k =>
		dataset(k, COLORS[k])), true);
	charts.exits = makeChart('chart-exits', 'line', [dataset('exits', COLORS.exits),
		dataset('system calls to the host', COLORS.host),
		dataset('system calls in the guest', COLORS.guest)], false);
}

// v[i] / by[i], null where by[i] is 0
function per(v, by) {
	return v.map((x, i) => by[i] ? x / by[i] : null);
}

function sum(v, from) {
	return v.slice(from || 0).reduce((a, b) => a + b, 0);
}

function fill(chart, labels, columns) {
	chart.data.labels = labels;
	columns.forEach((c, i) => { chart.data.datasets[i].data = c; });
	chart.update('none');
}

function renderHistory(h) {
	const s = h.series;
	const labels = s.t.map(t => new Date(t * 1000).toLocaleTimeString([], {hour12: false}));
	fill(charts.latency, labels, [s.p50, s.p99, s.max]);
	fill(charts.rate, labels, [s.invocations.map((n, i) => n - s.errors[i] - s.refused[i]),
		s.errors, s.refused]);
	fill(charts.starts, labels, [s.warm, s.restore, s.cold, s.init]);
	const host = s.syscalls.map((n, i) => n - s.syscallsInGuest[i]);
	fill(charts.exits, labels, [per(s.exits, s.ran), per(host, s.ran), per(s.syscallsInGuest, s.ran)]);
	const last = Math.max(0, s.t.length - 10), ran = sum(s.ran);
	setText('fn-rps', (sum(s.invocations, last) / 10).toFixed(1));
	setText('fn-pct', secs(h.window.p50) + ' / ' + secs(h.window.p99));
	setText('fn-exits', ran ? (sum(s.exits) / ran).toFixed(1) : '—');
	setText('fn-syscalls', ran ? (sum(s.syscalls) / ran).toFixed(1) : '—');
	setText('fn-syscalls-note', ran ? (sum(s.syscallsInGuest) / ran).toFixed(1) +
		' of them served in the guest' : 'last 5 minutes');
}

function renderDeployment(f) {
	const e = f.ember || {}, mem = e.memory || {}, limits = f.limits || {};
	const rows = [
		['kind', kindOf(f)],
		['created', f.createdAt],
		['environment', Object.keys(f.envVars || {}).join(', ') || 'none', 'names only: values are not shown'],
		['secrets', (f.secrets || []).join(', ') || 'none', 'names only, as the deployment gives them'],
		['memory', limits.memory ? limits.memory : bytes(e.guestMemoryBytes) + ' (default)'],
		['timeout', e.timeout + ' s'],
		['concurrency', e.maxConcurrency ? e.maxConcurrency + ', queue ' + e.queue : 'no limit'],
		['warm', 'minWarm ' + e.minWarm + ', keepAlive ' + e.keepAlive + ' s'],
		['vCPUs, threads, processes', e.cpus + ', ' + e.threads + ', ' + e.pids],
		['system calls', e.syscalls || '—'],
		['files', f.files ? bytes(f.files.bytes) + ', sha256 ' + f.files.sha256 : 'none'],
		['snapshot', e.loaded ? (e.snapshot ? 'yes, init took ' + secs(e.initSeconds) : 'no') : 'not loaded'],
		['sharing', mem.sharing ? mem.sharing + (mem.domain ? ', domain ' + mem.domain : '') : '—'],
		['invocations', e.auth ? 'need the credentials (ember.auth)' : 'open'],
		['labels', Object.entries(f.labels || {}).map(([k, v]) => k + '=' + v).join(', ') || 'none'],
	];
	const dl = document.getElementById('fn-deployment');
	dl.replaceChildren();
	for (const [k, v, title] of rows) {
		dl.appendChild(el('dt', k));
		const dd = el('dd', v);
		if (title)
			dd.title = title;
		dl.appendChild(dd);
	}
}

// the selected function's log: /system/logs with follow, NDJSON read as it comes
const logView = {controller: null, lines: []};

function showLog() {
	const pre = document.getElementById('fn-log');
	const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
	pre.textContent = logView.lines.join('\n');
	if (atEnd)
		pre.scrollTop = pre.scrollHeight;
}

async function follow(name) {
	if (logView.controller)
		logView.controller.abort();
	logView.controller = null;
	logView.lines = [];
	showLog();
	if (!name)
		return;
	const c = new AbortController();
	logView.controller = c;
	setText('fn-log-state', 'following');
	try {
		const r = await api('/system/logs?name=' + encodeURIComponent(name) +
			'&tail=100&follow=true', {signal: c.signal});
		if (!r.ok)
			throw new Error('HTTP ' + r.status);
		const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
		let buf = '';
		for (;;) {
			const {value, done} = await reader.read();
			if (done)
				break;
			buf += value;
			const parts = buf.split('\n');
			buf = parts.pop();
			for (const p of parts.filter(Boolean)) {
				const m = JSON.parse(p);
				logView.lines.push(m.timestamp.slice(11, 23) + '  ' + m.instance.slice(0, 8) +
					'  ' + m.text);
			}
			logView.lines = logView.lines.slice(-LOG_LINES);
			showLog();
		}
		setText('fn-log-state', 'ended');
	} catch (err) {
		if (err.name === 'AbortError')
			return;
		setText('fn-log-state', 'stopped: ' + err.message);
	}
	if (logView.controller === c)
		logView.controller = null; // the next refresh follows again
}

async function refreshFunction() {
	const name = ember.selected, f = ember.functions.find(x => x.name === name);
	document.getElementById('function').hidden = !f;
	if (!f)
		return;
	setText('fn-name', name);
	renderDeployment(f);
	if (!logView.controller)
		follow(name);
	try {
		const h = await getJSON('/system/function/' + encodeURIComponent(name) + '/history');
		if (ember.selected === name)
			renderHistory(h);
	} catch (err) {
		setText('status', 'history: ' + err.message);
	}
}

document.addEventListener('DOMContentLoaded', makeCharts);
ember.onRefresh.push(refreshFunction);
ember.onSelect.push(name => { follow(name); refresher.now(); });
