/* python: the runtime's own mmap module, a subset of CPython's (Debian's static libpython has
 * none): mmap.mmap(fileno, length, flags, prot) of a file or anonymous memory, as a buffer
 * (memoryview(m), bytes(m), hashlib), len(), madvise(), close() and the constants. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pymmap.h"

typedef struct {
	PyObject_HEAD char *data; /* NULL once closed */
	Py_ssize_t size;
	int readonly;
	Py_ssize_t exports; /* buffers handed out: no close while there are any */
} mmap_obj;

static PyObject *mm_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *names[] = {"fileno", "length", "flags", "prot", "access", "offset", NULL};
	int fd, flags = MAP_SHARED, prot = PROT_READ | PROT_WRITE, access = 0;
	Py_ssize_t len;
	long long off = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "in|iiiL", names, &fd, &len, &flags, &prot,
					 &access, &off))
		return NULL;
	if (access)
		return PyErr_Format(PyExc_ValueError,
				    "this runtime's mmap takes flags and prot, not access");
	if (len < 0 || off < 0)
		return PyErr_Format(PyExc_OverflowError, "memory mapped length or offset is "
							 "negative");
	struct stat st;
	if (fd != -1 && len == 0) {
		if (fstat(fd, &st) < 0)
			return PyErr_SetFromErrno(PyExc_OSError);
		if (st.st_size <= off)
			return PyErr_Format(PyExc_ValueError, "cannot mmap an empty file");
		len = (Py_ssize_t)(st.st_size - off);
	}
	if (fd == -1)
		flags |= MAP_ANONYMOUS;
	void *p = mmap(NULL, len ? (size_t)len : 1, prot, flags, fd, (off_t)off);
	if (p == MAP_FAILED)
		return PyErr_SetFromErrno(PyExc_OSError);
	mmap_obj *m = (mmap_obj *)type->tp_alloc(type, 0);
	if (!m) {
		munmap(p, len ? (size_t)len : 1);
		return NULL;
	}
	m->data = p;
	m->size = len;
	m->readonly = !(prot & PROT_WRITE);
	return (PyObject *)m;
}

static void mm_unmap(mmap_obj *m)
{
	if (m->data)
		munmap(m->data, m->size ? (size_t)m->size : 1);
	m->data = NULL;
}

static void mm_dealloc(mmap_obj *m)
{
	mm_unmap(m);
	Py_TYPE(m)->tp_free((PyObject *)m);
}

static int mm_closed(const mmap_obj *m)
{
	if (m->data)
		return 0;
	PyErr_SetString(PyExc_ValueError, "mmap closed or invalid");
	return 1;
}

static int mm_getbuf(mmap_obj *m, Py_buffer *view, int flags)
{
	if (mm_closed(m))
		return -1;
	if (PyBuffer_FillInfo(view, (PyObject *)m, m->data, m->size, m->readonly, flags) < 0)
		return -1;
	m->exports++;
	return 0;
}

static void mm_releasebuf(mmap_obj *m, Py_buffer *view)
{
	(void)view;
	m->exports--;
}

static PyObject *mm_close(mmap_obj *m, PyObject *unused)
{
	(void)unused;
	if (m->exports > 0)
		return PyErr_Format(PyExc_BufferError, "cannot close exported pointers exist");
	mm_unmap(m);
	Py_RETURN_NONE;
}

static PyObject *mm_madvise(mmap_obj *m, PyObject *args)
{
	int option;
	Py_ssize_t start = 0, len = PY_SSIZE_T_MAX;
	if (!PyArg_ParseTuple(args, "i|nn:madvise", &option, &start, &len) || mm_closed(m))
		return NULL;
	if (start < 0 || start >= m->size)
		return PyErr_Format(PyExc_ValueError, "madvise start out of bounds");
	if (len < 0)
		return PyErr_Format(PyExc_ValueError, "madvise length invalid");
	if (len > m->size - start)
		len = m->size - start;
	if (madvise(m->data + start, (size_t)len, option) < 0)
		return PyErr_SetFromErrno(PyExc_OSError);
	Py_RETURN_NONE;
}

static Py_ssize_t mm_len(mmap_obj *m)
{
	return mm_closed(m) ? -1 : m->size;
}

static PyObject *mm_get_closed(mmap_obj *m, void *unused)
{
	(void)unused;
	return PyBool_FromLong(m->data == NULL);
}

static PyMethodDef mm_methods[] = {
    {"close", (PyCFunction)mm_close, METH_NOARGS, "unmap it"},
    {"madvise", (PyCFunction)mm_madvise, METH_VARARGS, "madvise(option[, start[, length]])"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef mm_getset[] = {
    {"closed", (getter)mm_get_closed, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyBufferProcs mm_buffer = {(getbufferproc)mm_getbuf, (releasebufferproc)mm_releasebuf};
static PySequenceMethods mm_seq = {.sq_length = (lenfunc)mm_len};

static PyTypeObject mm_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mmap.mmap",
    .tp_basicsize = sizeof(mmap_obj),
    .tp_dealloc = (destructor)mm_dealloc,
    .tp_as_sequence = &mm_seq,
    .tp_as_buffer = &mm_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "mmap(fileno, length[, flags[, prot[, access[, offset]]]])",
    .tp_methods = mm_methods,
    .tp_getset = mm_getset,
    .tp_new = mm_new,
};

static const struct {
	const char *name;
	long value;
} mm_consts[] = {
    {"PROT_READ", PROT_READ},
    {"PROT_WRITE", PROT_WRITE},
    {"PROT_EXEC", PROT_EXEC},
    {"MAP_PRIVATE", MAP_PRIVATE},
    {"MAP_SHARED", MAP_SHARED},
    {"MAP_ANON", MAP_ANONYMOUS},
    {"MAP_ANONYMOUS", MAP_ANONYMOUS},
    {"MADV_NORMAL", MADV_NORMAL},
    {"MADV_RANDOM", MADV_RANDOM},
    {"MADV_SEQUENTIAL", MADV_SEQUENTIAL},
    {"MADV_WILLNEED", MADV_WILLNEED},
    {"MADV_DONTNEED", MADV_DONTNEED},
    {"MADV_FREE", MADV_FREE},
    {"MADV_MERGEABLE", MADV_MERGEABLE},
    {"MADV_UNMERGEABLE", MADV_UNMERGEABLE},
};

static struct PyModuleDef mm_module = {PyModuleDef_HEAD_INIT, "mmap",
				       "the python runtime's subset of CPython's mmap", -1, NULL};

PyObject *py_mmap_init(void)
{
	if (PyType_Ready(&mm_type) < 0)
		return NULL;
	PyObject *mod = PyModule_Create(&mm_module);
	if (!mod)
		return NULL;
	Py_INCREF(&mm_type);
	int rc = PyModule_AddObject(mod, "mmap", (PyObject *)&mm_type);
	for (size_t i = 0; !rc && i < sizeof(mm_consts) / sizeof(mm_consts[0]); i++)
		rc = PyModule_AddIntConstant(mod, mm_consts[i].name, mm_consts[i].value);
	if (!rc)
		rc = PyModule_AddIntConstant(mod, "PAGESIZE", sysconf(_SC_PAGESIZE));
	if (!rc)
		rc = PyModule_AddIntConstant(mod, "ALLOCATIONGRANULARITY", sysconf(_SC_PAGESIZE));
	if (rc) {
		Py_DECREF(mod);
		return NULL;
	}
	return mod;
}
