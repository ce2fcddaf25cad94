// Ember's Node.js runtime: loads the handler once (its source on fd 3), then serves the request.
//
// Ember snapshots this program at its first read of the request (fd 0), after Node.js has
// started and loaded the handler with its modules; every invocation resumes from there, runs
// the handler once, writes the result and exits. See runtimes/README.md for the contract.
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');
const Module = require('module');

// vm.SourceTextModule (ES modules) is behind a flag Ember gives; its warning is not the user's
const emitWarning = process.emitWarning;
process.emitWarning = function (w, ...rest) {
	if (!/VM Modules/.test(String(w && w.message !== undefined ? w.message : w)))
		return emitWarning.call(process, w, ...rest);
};

// an invocation ends at once once its answer is written: no 'exit' listeners, no teardown of
// Node.js's threads, each of whose exits would be a system call of its own (exit.node, built
// beside this file where Node.js's headers are: exit_group at once; else process.reallyExit)
function quitter() {
	try {
		const addon = require(path.join(__dirname, 'exit.node'));
		return (c) => addon.exit(c);
	} catch (e) {
		return typeof process.reallyExit === 'function' ? (c) => process.reallyExit(c)
								 : (c) => process.exit(c);
	}
}
const quit = quitter();

const CODE_FD = 3;
const META_FD = 4;
const file = process.argv[2] || 'handler.js';
const filename = path.resolve('/', file);

// one line on stderr and an exit status, the contract's load failure (65) or I/O failure (66)
function die(status, line) {
	fs.writeSync(2, line.replace(/\n/g, ' ') + '\n');
	process.exit(status);
}

// an error of the handler's source: "<file>:<line>: <message>", its line from the stack
function loadError(e) {
	const text = (e && e.stack) || String(e);
	const esc = filename.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
	const m = text.match(new RegExp(esc + ':(\\d+)'));
	const msg = e && e.name && e.message !== undefined ? e.name + ': ' + e.message : String(e);
	die(65, file + ':' + (m ? m[1] : 1) + ': ' + msg);
}

// the log: console and process.stdout write to stderr, as OpenFaaS's templates log; the response
// is written on fd 1 by this loader alone
globalThis.console = new console.Console({stdout: process.stderr, stderr: process.stderr});
Object.defineProperty(process, 'stdout', {value: process.stderr, configurable: true});

let source;
try {
	source = fs.readFileSync(CODE_FD, 'utf8');
} catch (e) {
	die(66, file + ': cannot read the source on fd ' + CODE_FD + ': ' + e.message);
}

// An ES module is a .mjs file, or one that does not compile as CommonJS for an import or export
// statement, import.meta or a top-level await (told before running anything, as Node.js's own
// detection would run it as a module where the CommonJS probe below cannot be): linked with
// vm.SourceTextModule, its imports resolved from its place in the files
function isModuleSource(src) {
	try {
		vm.compileFunction(src, ['exports', 'require', 'module', '__filename', '__dirname'],
				   {filename});
		return false;
	} catch (e) {
		if (e instanceof SyntaxError &&
		    /Cannot use import statement|Unexpected token 'export'|import\.meta|await is only valid/
			.test(e.message))
			return true;
		throw e; // a syntax error of its own, with its line (not the probe's, below)
	}
}

async function loadModule() {
	const url = 'file://' + filename;
	const mod = new vm.SourceTextModule(source, {identifier: url, initializeImportMeta(meta) {
		meta.url = url;
	}, importModuleDynamically: (spec) => import(resolveSpec(spec, url))});
	await mod.link(async (spec, ref) => {
		const ns = await import(resolveSpec(spec, ref.identifier));
		const names = Object.keys(ns);
		return new vm.SyntheticModule(names, function () {
			for (const k of names)
				this.setExport(k, ns[k]);
		}, {identifier: spec});
	});
	await mod.evaluate();
	const ns = mod.namespace;
	if (typeof ns.default === 'function')
		return ns.default;
	if (typeof ns.handler === 'function')
		return Object.assign((...a) => ns.handler(...a), {ember: true, arity: ns.handler.length});
	if (typeof ns.handle === 'function')
		return ns.handle;
	throw new TypeError('the module exports no default function, handler or handle');
}

function resolveSpec(spec, from) {
	if (spec.startsWith('./') || spec.startsWith('../') || spec.startsWith('/'))
		return new URL(spec, from).href;
	if (spec.startsWith('node:') || Module.isBuiltin(spec))
		return spec;
	// a package of the function's node_modules, found as require would from the handler
	return 'file://' + Module.createRequire(from).resolve(spec);
}

// CommonJS: module.exports a function is OpenFaaS's form; else Ember's handler(input, env),
// exported or declared at the top level (the probe appended below reads the latter)
function loadCommonJs() {
	const m = new Module(filename, null);
	m.filename = filename;
	m.paths = Module._nodeModulePaths(path.dirname(filename));
	const probe = '\n;module.__emberHandler = typeof handler === "function" ? handler : undefined;';
	m._compile(source + probe, filename);
	require.cache[filename] = m;
	const ex = m.exports;
	if (typeof ex === 'function')
		return ex;
	const own = (ex && typeof ex.handler === 'function' && ex.handler) || m.__emberHandler;
	if (typeof own === 'function')
		return Object.assign((...a) => own(...a), {ember: true, arity: own.length});
	if (ex && typeof ex.handle === 'function')
		return ex.handle;
	throw new TypeError('no handler: export a function (module.exports = async (event, ' +
			    'context) => ...) or define handler(input, env)');
}

// the request's metadata (fd 4): NAME=value lines; none in a native run
function readMeta() {
	const env = {};
	let text = '';
	try {
		text = fs.readFileSync(META_FD, 'latin1');
	} catch (e) {
		return env;
	}
	for (const line of text.split('\n')) {
		const eq = line.indexOf('=');
		if (eq > 0 && !(line.slice(0, eq) in env))
			env[line.slice(0, eq)] = line.slice(eq + 1);
	}
	return env;
}

// OpenFaaS's node18 event: the body parsed as its content type says, as Express would
function makeEvent(body, env) {
	const headers = {};
	for (const k of Object.keys(env))
		if (k.startsWith('Http_') && !['Http_Method', 'Http_Path', 'Http_Query'].includes(k))
			headers[k.slice(5).replace(/_/g, '-').toLowerCase()] = env[k];
	const type = headers['content-type'] || '';
	let parsed = body.toString('utf8');
	if (/^application\/(.+\+)?json/.test(type)) {
		try {
			parsed = JSON.parse(parsed);
		} catch (e) { /* as text, as the template's raw parser would give it */
		}
	} else if (!/^text\//.test(type) && type)
		parsed = body;
	const query = Object.fromEntries(new URLSearchParams(env.Http_Query || ''));
	return {body: parsed, headers, method: env.Http_Method || 'POST', query,
		path: env.Http_Path || '/'};
}

// the response head (status and headers) for Ember: "Status: N" and "Name: value" lines on fd 4
function writeHead(status, headers) {
	let head = status !== 200 ? 'Status: ' + status + '\n' : '';
	for (const [k, v] of Object.entries(headers))
		if (!/[\r\n:]/.test(k) && !/[\r\n]/.test(String(v)))
			head += k + ': ' + v + '\n';
	if (!head)
		return;
	try {
		fs.writeSync(META_FD, head);
	} catch (e) {
		if (e.code !== 'EBADF') // a native run has no fd 4; anything else is said
			fs.writeSync(2, file + ': the response head was not written: ' + e.message + '\n');
	}
}

function bytesOf(value) {
	if (value === undefined || value === null)
		return null;
	if (typeof value === 'string' || Buffer.isBuffer(value) || value instanceof Uint8Array)
		return value;
	const json = JSON.stringify(value);
	return json === undefined ? null : json;
}

function writeAll(bytes) {
	if (bytes === null)
		return;
	const buf = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
	for (let off = 0; off < buf.length;)
		off += fs.writeSync(1, buf, off, buf.length - off);
}

// OpenFaaS's context: status(), headers(), succeed(), fail(), chained as in the template
function makeContext(done) {
	let status = 200, headers = {}, called = false;
	const ctx = {
		status(code) {
			if (code === undefined)
				return status;
			status = code;
			return ctx;
		},
		headers(h) {
			if (h === undefined)
				return headers;
			headers = h;
			return ctx;
		},
		succeed(value) {
			called = true;
			done(null, value, status, headers);
		},
		fail(value) { // the status set, else 500 (the template's)
			called = true;
			done(value, null, status, headers);
		},
		get cbCalled() {
			return called;
		},
	};
	return ctx;
}

// the response OpenFaaS's template makes of the handler's outcome: its status, headers and body
function openFaaSResponse(err, value, status, headers) {
	const out = {...headers};
	let bytes;
	if (err !== null) {
		bytes = String(err && err.message !== undefined ? err.toString() : err);
		status = status === 200 ? 500 : status;
	} else {
		bytes = bytesOf(value);
		const lower = Object.keys(out).map((k) => k.toLowerCase());
		if (value !== null && typeof value === 'object' && !Buffer.isBuffer(value) &&
		    !lower.includes('content-type'))
			out['Content-Type'] = 'application/json';
	}
	return {status, out, bytes};
}

function finishOpenFaaS(err, value, status, headers) {
	const r = openFaaSResponse(err, value, status, headers);
	if (err !== null && err && err.stack)
		fs.writeSync(2, file + ': handler failed: ' + err.stack + '\n');
	// answered, as the template answers a failure: a status of 500 and the error's text
	writeHead(r.status, r.out);
	writeAll(r.bytes);
	quit(0);
}

function handlerFailed(e) {
	fs.writeSync(2, file + ': handler failed: ' + ((e && e.stack) || String(e)) + '\n');
	quit(1);
}

// the per-request code of this loader run once before the snapshot, on a request of its own
// that nothing sees: V8 compiles a function at its first call, so every invocation would
// otherwise compile them (and their regular expressions) again from the snapshot. It runs
// before the handler is loaded, so that it calls nothing of the handler's: not a built-in its
// top level replaced (JSON.parse, Buffer.from, Object.entries wrapped to count calls, say)
function prime() {
	const env = {Http_Method: 'GET', Http_Query: 'a=1', Http_Path: '/p', Http_Content_Type:
		     'application/json', Http_X_Y: 'z'};
	for (const type of ['application/json', 'text/plain', 'application/octet-stream']) {
		env.Http_Content_Type = type;
		makeEvent(Buffer.from('{"a":1}'), env);
	}
	const ctx = makeContext(() => {});
	ctx.status(201).headers({'X-A': 'b'}).succeed('x');
	ctx.fail('x');
	void ctx.cbCalled, ctx.status(), ctx.headers();
	for (const v of ['s', Buffer.from('b'), {a: 1}, undefined, null])
		openFaaSResponse(null, v, 200, {'X-A': 'b'});
	openFaaSResponse(new Error('x'), null, 200, {});
	writeHead(200, {});
}

async function main() {
	let handler;
	prime();
	try {
		handler = file.endsWith('.mjs') || isModuleSource(source) ? await loadModule()
									  : loadCommonJs();
	} catch (e) {
		loadError(e);
	}
	// the snapshot point: everything above is done once, everything below per request
	const body = fs.readFileSync(0);
	if (handler.ember) {
		const env = handler.arity >= 2 ? readMeta() : {};
		let result;
		try {
			result = await handler(body.toString('utf8'), env);
		} catch (e) {
			handlerFailed(e);
		}
		writeAll(bytesOf(result));
		quit(0);
	}
	const ctx = makeContext(finishOpenFaaS);
	// the template's optional third argument: callback(err, result)
	const callback = (err, result) => (err ? ctx.fail(err) : ctx.succeed(result));
	try {
		const res = await handler(makeEvent(body, readMeta()), ctx, callback);
		if (!ctx.cbCalled)
			finishOpenFaaS(null, res, ctx.status(), ctx.headers());
	} catch (e) {
		finishOpenFaaS(e, null, ctx.status(), ctx.headers());
	}
}

main();
