// Ember's console: the Invoke and Deploy forms, answered with what the server says, as it says it.
'use strict';

const TEMPLATES = {
	duktape: `// the top level runs once, before the snapshot; handler runs for every request
function handler(input, env) {
	console.log('got ' + input.length + ' characters by ' + env.Http_Method); // the log
	return 'Hello, ' + (input || 'world') + '!\\n';
}
`,
	lua: `-- the top level runs once, before the snapshot; handler runs for every request
function handler(input, env)
	print("got " .. #input .. " bytes by " .. env.Http_Method) -- the log
	return "Hello, " .. (input ~= "" and input or "world") .. "!\\n"
end
`,
	python: `# the top level runs once, before the snapshot; handler runs for every request
def handler(input, env):
    print("got", len(input), "characters by", env.get("Http_Method"))  # the log
    return "Hello, " + (input or "world") + "!\\n"
`,
};
TEMPLATES.js = TEMPLATES.duktape;
TEMPLATES['python-static'] = TEMPLATES.python;

const $ = id => document.getElementById(id);

// "Name: value" lines into a Headers object; a line without a colon is an error
function parseHeaders(text) {
	const h = new Headers();
	for (const line of text.split('\n').map(l => l.trim()).filter(Boolean)) {
		const i = line.indexOf(':');
		if (i <= 0)
			throw new Error('not a "Name: value" header: ' + line);
		h.append(line.slice(0, i).trim(), line.slice(i + 1).trim());
	}
	return h;
}

function fillFunctionChoice() {
	const sel = $('invoke-name'), keep = sel.value || ember.selected;
	const names = ember.functions.map(f => f.name);
	if (names.join('\n') !== Array.from(sel.options, o => o.value).join('\n'))
		sel.replaceChildren(...names.map(n => el('option', n)));
	if (names.includes(keep))
		sel.value = keep;
}

async function invoke(ev) {
	ev.preventDefault();
	const name = $('invoke-name').value, method = $('invoke-method').value;
	const button = $('invoke-go');
	button.disabled = true;
	$('invoke-result').hidden = false;
	try {
		const init = {method, headers: parseHeaders($('invoke-headers').value)};
		if (method !== 'GET' && method !== 'HEAD')
			init.body = $('invoke-body').value;
		const t0 = performance.now();
		const r = await api('/function/' + encodeURIComponent(name), init);
		const body = new Uint8Array(await r.arrayBuffer());
		const took = (performance.now() - t0) / 1e3;
		setText('invoke-status', r.status + (r.statusText ? ' ' + r.statusText : ''));
		$('invoke-status').className = r.ok ? '' : 'bad';
		const server = r.headers.get('X-Duration-Seconds');
		setText('invoke-duration', (server ? secs(Number(server)) + ' in Ember, ' : '') +
			secs(took) + ' seen by the page');
		setText('invoke-start', r.headers.get('X-Ember-Start') || '—');
		setText('invoke-headers-out', Array.from(r.headers, ([k, v]) => k + ': ' + v).join('\n'));
		setText('invoke-answer', new TextDecoder().decode(body) ||
			'(an empty body, ' + body.length + ' bytes)');
	} catch (err) {
		setText('invoke-status', 'not sent: ' + err.message);
		$('invoke-status').className = 'bad';
	} finally {
		button.disabled = false;
		refresher.now();
	}
}

// the server's answer shown as it came: the status, then the body (JSON indented)
async function show(r, what) {
	const text = await r.text();
	let body = text;
	try {
		body = JSON.stringify(JSON.parse(text), null, 1);
	} catch (e) {
		// not JSON: as it is
	}
	setText('deploy-status', what + ': HTTP ' + r.status + ' ' + r.statusText);
	$('deploy-status').className = r.ok ? '' : 'bad';
	setText('deploy-answer', body);
	return r.ok;
}

async function deploy(ev) {
	ev.preventDefault();
	const name = $('deploy-name').value.trim(), kind = $('deploy-kind').value;
	const method = $('deploy-update').checked ? 'PUT' : 'POST';
	const button = $('deploy-go');
	button.disabled = true;
	$('deploy-result').hidden = false;
	setText('deploy-status', 'deploying ' + name + '…');
	setText('deploy-answer', '');
	try {
		const spec = {service: name};
		if (kind === 'image') {
			const file = $('deploy-file').files[0];
			if (!file)
				throw new Error('choose the program to upload');
			const up = await api('/system/images/' + encodeURIComponent(name),
				{method: 'PUT', body: file});
			if (!await show(up, 'upload'))
				return;
			spec.image = name;
		} else {
			spec.runtime = kind;
			spec.code = $('deploy-code').value;
		}
		const r = await api('/system/functions', {method,
			headers: {'Content-Type': 'application/json'}, body: JSON.stringify(spec)});
		if (await show(r, method === 'PUT' ? 'update' : 'deploy')) {
			await refresher.now();
			select(name);
			$('invoke-name').value = name;
		}
	} catch (err) {
		setText('deploy-status', 'not sent: ' + err.message);
		$('deploy-status').className = 'bad';
	} finally {
		button.disabled = false;
	}
}

// a new kind: its template, unless the source was edited
function kindChanged() {
	const kind = $('deploy-kind').value, code = $('deploy-code');
	$('deploy-code-label').hidden = kind === 'image';
	$('deploy-file-label').hidden = kind !== 'image';
	if (!code.value || Object.values(TEMPLATES).includes(code.value))
		code.value = TEMPLATES[kind] || '';
}

document.addEventListener('DOMContentLoaded', () => {
	$('invoke').addEventListener('submit', invoke);
	$('deploy').addEventListener('submit', deploy);
	$('deploy-kind').addEventListener('change', kindChanged);
	kindChanged();
	ember.onRefresh.push(fillFunctionChoice);
	ember.onSelect.push(name => { if (name) $('invoke-name').value = name; });
});
