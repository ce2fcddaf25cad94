/* python: the runtime's mmap module (pymmap.c), registered before the interpreter starts. */
#ifndef EMBER_PYMMAP_H
#define EMBER_PYMMAP_H

#include <Python.h>

/* the module's init function, for PyImport_AppendInittab("mmap", ...) */
PyObject *py_mmap_init(void);

#endif
