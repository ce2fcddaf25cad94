# Language runtimes: static programs that run a handler whose source arrives on fd 3.
#   $(B)/runtimes/js   Duktape (compiled from the Debian duktape-dev source), built with musl
#   $(B)/runtimes/lua  Lua 5.4 (Debian's liblua5.4.a, compiled for glibc), built with glibc
#   $(B)/runtimes/python  CPython 3.11 (Debian's libpython3.11.a), built with glibc; its standard
#                      library is the function's files: $(B)/runtimes/python-lib, the installed
#                      python3.11's .py files (no tests, GUI, ensurepip or extension modules)
#                      compiled to unchecked-hash .pyc (the bundle keeps no modification times)
LANG_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Iinclude -Isrc
DUK_DIR   := /usr/share/duktape
LUA_INC   := /usr/include/lua5.4
LUA_LIB   := /usr/lib/x86_64-linux-gnu/liblua5.4.a
PY_LIB    := /usr/lib/x86_64-linux-gnu/libpython3.11.a
PY_SRC    := /usr/lib/python3.11
PY_INC    := /usr/include/python3.11 /usr/include/x86_64-linux-gnu/python3.11
PY        := /usr/bin/python3.11 # Debian's, whatever else is on PATH
PY_SKIP   := test idlelib tkinter turtledemo turtle.py ensurepip lib2to3 pydoc_data lib-dynload \
	site-packages dist-packages __pycache__ sitecustomize.py 'config-3.11-*'

.PHONY: runtimes
runtimes: $(B)/runtimes/js $(B)/runtimes/lua $(B)/runtimes/python $(B)/runtimes/python-lib.stamp \
	$(B)/runtimes/node-files.stamp $(B)/runtimes/python3-files.stamp
all: runtimes

# duktape.c is large and not ours: its own object, no warnings, rebuilt only when it changes
$(B)/runtimes/obj/duktape.o: $(DUK_DIR)/duktape.c $(DUK_DIR)/duktape.h $(DUK_DIR)/duk_config.h
	@mkdir -p $(dir $@)
	$(MUSLCC) -O2 -w -I$(DUK_DIR) -c $< -o $@

LANG_COMMON := runtimes/common/langio.c runtimes/common/langio.h src/base/base_write.c src/base/base.h

$(B)/runtimes/js: runtimes/js/main.c $(LANG_COMMON) include/ember/abi.h $(B)/runtimes/obj/duktape.o
	@mkdir -p $(dir $@)
	$(MUSLCC) -static $(LANG_CFLAGS) -Iruntimes/common -I$(DUK_DIR) -o $@ $< runtimes/common/langio.c src/base/base_write.c \
		$(B)/runtimes/obj/duktape.o -lm

$(B)/runtimes/lua: runtimes/lua/main.c $(LANG_COMMON) include/ember/abi.h $(LUA_LIB)
	@mkdir -p $(dir $@)
	$(CC) -static $(LANG_CFLAGS) -Iruntimes/common -I$(LUA_INC) -o $@ $< runtimes/common/langio.c src/base/base_write.c \
		$(LUA_LIB) -lm

# Debian's static libpython wants libexpat and zlib; glibc's NSS warnings (getpwnam and friends
# in the pwd and grp modules, never reached in a virtine) are not errors
# its own mmap module (pymmap.c): Debian's libpython has none
$(B)/runtimes/python: runtimes/python/main.c runtimes/python/pymmap.c runtimes/python/pymmap.h \
		$(LANG_COMMON) include/ember/abi.h $(PY_LIB)
	@mkdir -p $(dir $@)
	$(CC) -static $(LANG_CFLAGS) -Wno-missing-field-initializers -Iruntimes/common \
		$(PY_INC:%=-I%) -o $@ $< runtimes/python/pymmap.c runtimes/common/langio.c src/base/base_write.c $(PY_LIB) \
		-lexpat -lz -lm 2>&1 | { grep -v 'statically linked applications requires\|in function' || true; }
	@test -x $@

# the standard library as a bundle: copied without what a function cannot use, then compiled
$(B)/runtimes/python-lib.stamp: runtimes/runtimes.mk
	rm -rf $(B)/runtimes/python-lib
	mkdir -p $(B)/runtimes/python-lib/usr/lib/python3.11
	tar -C $(PY_SRC) $(PY_SKIP:%=--exclude=%) -cf - . | tar -C $(B)/runtimes/python-lib/usr/lib/python3.11 -xf -
	$(PY) -m compileall -q -j 2 --invalidation-mode unchecked-hash \
		-s $(B)/runtimes/python-lib -p / $(B)/runtimes/python-lib/usr/lib/python3.11 >/dev/null
	touch $@

# Node.js and CPython as Debian ships them (nodejs, python3.11): the host's own programs, run with
# files built here: each one's closure (its ld.so and libraries, runtimes/closure.sh), Ember's
# script that loads the handler (at /usr/lib/ember/), and for CPython its standard library with
# its extension modules, and numpy with its libraries when python3-numpy is installed
NODE     := /usr/bin/node
NODE_FS  := $(B)/runtimes/node-files
PY3_FS   := $(B)/runtimes/python3-files
PY3_SKIP := test idlelib tkinter turtledemo turtle.py ensurepip lib2to3 pydoc_data __pycache__ \
	'config-3.11-*'
NUMPY    := /usr/lib/python3/dist-packages/numpy

# exit.node, an addon that ends an invocation without Node.js's teardown, where Node.js's
# headers are installed (NodeSource's nodejs has them; Debian's are in libnode-dev): without it
# the loader ends with process.reallyExit
NODE_API := /usr/include/node/node_api.h
# the host's programs are prerequisites: an upgrade of the package makes their files again
$(B)/runtimes/node-files.stamp: runtimes/node/ember.js runtimes/node/exit.c runtimes/closure.sh \
		runtimes/ldcache.sh \
		runtimes/runtimes.mk $(wildcard $(NODE))
	rm -rf $(NODE_FS)
	mkdir -p $(NODE_FS)/usr/lib/ember
	runtimes/closure.sh $(NODE_FS) $(NODE)
	runtimes/ldcache.sh $(NODE_FS)
	cp runtimes/node/ember.js $(NODE_FS)/usr/lib/ember/node.js
	if [ -f $(NODE_API) ]; then $(CC) -shared -fPIC -O2 -Wall -Wextra -Werror \
		-I$(dir $(NODE_API)) -o $(NODE_FS)/usr/lib/ember/exit.node runtimes/node/exit.c; fi
	touch $@

$(B)/runtimes/python3-files.stamp: runtimes/python3/ember.py runtimes/closure.sh runtimes/ldcache.sh \
		runtimes/runtimes.mk \
		$(wildcard /usr/bin/python3.11 $(NUMPY))
	rm -rf $(PY3_FS)
	mkdir -p $(PY3_FS)/usr/lib/python3.11 $(PY3_FS)/usr/lib/ember
	tar -C $(PY_SRC) $(PY3_SKIP:%=--exclude=%) -cf - . | tar -C $(PY3_FS)/usr/lib/python3.11 -xf -
	runtimes/closure.sh $(PY3_FS) $(PY) $(PY_SRC)/lib-dynload/*.so
	if [ -d $(NUMPY) ]; then \
		mkdir -p $(PY3_FS)/usr/lib/python3/dist-packages && \
		tar -C $(dir $(NUMPY)) --exclude=tests --exclude=__pycache__ -cf - numpy | \
			tar -C $(PY3_FS)/usr/lib/python3/dist-packages -xf - && \
		runtimes/closure.sh $(PY3_FS) $$(find $(NUMPY) -name '*.so'); fi
	runtimes/ldcache.sh $(PY3_FS)
	cp runtimes/python3/ember.py $(PY3_FS)/usr/lib/ember/python.py
	$(PY) -m compileall -q -j 2 --invalidation-mode unchecked-hash -s $(PY3_FS) -p / \
		$(PY3_FS)/usr/lib >/dev/null
	touch $@
