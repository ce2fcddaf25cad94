/* python: the Python runtime, CPython 3.11 (Debian's static libpython) running handler(input,
 * env) from the source on fd 3; the standard library is the function's files (/usr/lib/...). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ember/abi.h"
#include "pymmap.h"
#include "langio.h"

#define EX_SOURCE  65 /* the source does not compile, raises at top level or lacks handler */
#define EX_NOINPUT 66 /* fd 3 or fd 0 cannot be read */
#define EX_RUNTIME 70 /* the interpreter cannot start */
#define STDLIB	   L"/usr/lib/python3.11"

/* The glue, in Python: loading the handler (errors as FILE:LINE: Kind: message) and calling it
 * (its result as the response's bytes). print() in a handler writes to stderr, the log. */
static const char glue[] =
    "import sys, json, traceback\n"
    "sys.stdout = sys.stderr\n"
    "def _ember_load(src, file):\n"
    "    try:\n"
    "        code = compile(src, file, 'exec')\n"
    "    except SyntaxError as e:\n"
    "        sys.stderr.write('%s:%d: SyntaxError: %s\\n' % (file, e.lineno or 1, e.msg))\n"
    "        return None\n"
    "    g = {'__name__': '__main__', '__file__': file, '__builtins__': __builtins__}\n"
    "    try:\n"
    "        exec(code, g)\n"
    "    except BaseException as e:\n"
    "        line = 1\n"
    "        for f in traceback.extract_tb(e.__traceback__):\n"
    "            if f.filename == file:\n"
    "                line = f.lineno\n"
    "        sys.stderr.write('%s:%d: %s: %s\\n' % (file, line, type(e).__name__, e))\n"
    "        return None\n"
    "    h = g.get('handler')\n"
    "    if not callable(h):\n"
    "        sys.stderr.write(\"%s:1: error: the source must define a function 'handler'\\n\" % "
    "file)\n"
    "        return None\n"
    "    code = getattr(h, '__code__', None)\n"
    "    return h, (code.co_argcount if code else 2) >= 2\n"
    "def _ember_call(h, want_env, req, env):\n"
    "    text = req.decode('utf-8', 'surrogateescape')\n"
    "    r = h(text, env) if want_env else h(text)\n"
    "    if r is None:\n"
    "        return b''\n"
    "    if isinstance(r, str):\n"
    "        return r.encode('utf-8', 'surrogateescape')\n"
    "    if isinstance(r, (bytes, bytearray, memoryview)):\n"
    "        return bytes(r)\n"
    "    return json.dumps(r).encode()\n";

static void put_meta(void *ctx, const char *name, size_t nlen, const char *value, size_t vlen)
{
	PyObject *k = PyUnicode_DecodeUTF8(name, (Py_ssize_t)nlen, "surrogateescape");
	PyObject *v = PyUnicode_DecodeUTF8(value, (Py_ssize_t)vlen, "surrogateescape");
	if (k && v)
		PyDict_SetItem(ctx, k, v);
	Py_XDECREF(k);
	Py_XDECREF(v);
}

static int start(void)
{
	if (PyImport_AppendInittab("mmap", py_mmap_init) < 0)
		return fprintf(stderr, "python: cannot add the mmap module\n"), -1;
	PyConfig c;
	PyConfig_InitIsolatedConfig(&c);
	c.site_import = 0;
	c.write_bytecode = 0;
	c.install_signal_handlers = 0;
	c.module_search_paths_set = 1;
	PyStatus st = PyWideStringList_Append(&c.module_search_paths, STDLIB);
	if (!PyStatus_Exception(st))
		st = PyConfig_SetString(&c, &c.home, L"/usr");
	if (!PyStatus_Exception(st))
		st = Py_InitializeFromConfig(&c);
	PyConfig_Clear(&c);
	if (PyStatus_Exception(st)) {
		fprintf(stderr, "python: cannot start the interpreter: %s (its library is %ls)\n",
			st.err_msg ? st.err_msg : "?", STDLIB);
		return -1;
	}
	return 0;
}

static void flush_log(void)
{
	PyObject *r = PyObject_CallMethod(PySys_GetObject("stderr"), "flush", NULL);
	Py_XDECREF(r);
	PyErr_Clear();
}

int main(int argc, char **argv)
{
	const char *file = argc > 1 ? argv[1] : "handler.py";
	size_t srclen, reqlen;
	char *src = lang_read_all(EMBER_CODE_FD, &srclen, 0);
	if (!src) {
		fprintf(stderr, "python: cannot read the source from fd %d: %s\n", EMBER_CODE_FD,
			strerror(errno));
		return EX_NOINPUT;
	}
	if (start() || PyRun_SimpleString(glue))
		return EX_RUNTIME;
	PyObject *main_dict = PyModule_GetDict(PyImport_AddModule("__main__"));
	PyObject *load = PyDict_GetItemString(main_dict, "_ember_load");
	PyObject *call = PyDict_GetItemString(main_dict, "_ember_call");
	/* compile and run the top level once, before the snapshot */
	PyObject *loaded = PyObject_CallFunction(load, "y#s", src, (Py_ssize_t)srclen, file);
	free(src);
	if (!loaded || !PyTuple_Check(loaded)) {
		if (!loaded)
			PyErr_Print();
		flush_log();
		return EX_SOURCE;
	}
	PyObject *handler = PyTuple_GetItem(loaded, 0);
	PyObject *want_env = PyTuple_GetItem(loaded, 1);
	PyRun_SimpleString("import gc\ngc.collect()\ngc.freeze()\n");
	flush_log();

	/* Ember snapshots here, at the first read of fd 0 */
	char *req = lang_read_all(0, &reqlen, 0);
	if (!req) {
		fprintf(stderr, "python: cannot read the request: %s\n", strerror(errno));
		return EX_NOINPUT;
	}
	PyObject *env = PyDict_New();
	/* env costs a read of fd 4, an exit: only for a handler that names a second parameter */
	if (PyObject_IsTrue(want_env))
		lang_meta_each(EMBER_META_FD, put_meta, env);
	PyObject *out =
	    PyObject_CallFunction(call, "OOy#O", handler, want_env, req, (Py_ssize_t)reqlen, env);
	/* req is not freed: the run ends with this one request, and in a virtine the free would
	 * give its pages back with a munmap (or brk), an exit per invocation in trap mode */
	if (!out) {
		fprintf(stderr, "%s: handler failed:\n", file);
		PyErr_Print();
		flush_log();
		return 1;
	}
	flush_log();
	char *p;
	Py_ssize_t n;
	if (PyBytes_AsStringAndSize(out, &p, &n) < 0)
		return 1;
	return n && base_write_all(1, p, (size_t)n) ? 1 : 0;
}
