# Language runtimes: static programs that run a handler whose source arrives on fd 3.
#   $(B)/runtimes/js   Duktape (compiled from the Debian duktape-dev source), built with musl
#   $(B)/runtimes/lua  Lua 5.4 (Debian's liblua5.4.a, compiled for glibc), built with glibc
#   $(B)/runtimes/python  CPython 3.11 (Debian's libpython3.11.a), built with glibc; its standard
#                      library is the function's files: $(B)/runtimes/python-lib, the installed
#                      python3.11's .py files (no tests, GUI, ensurepip or extension modules)
#                      compiled to unchecked-hash .pyc (the bundle keeps no modification times)
RT_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Iinclude
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
runtimes: $(B)/runtimes/js $(B)/runtimes/lua $(B)/runtimes/python $(B)/runtimes/python-lib.stamp
all: runtimes

# duktape.c is large and not ours: its own object, no warnings, rebuilt only when it changes
$(B)/runtimes/obj/duktape.o: $(DUK_DIR)/duktape.c $(DUK_DIR)/duktape.h $(DUK_DIR)/duk_config.h
	@mkdir -p $(dir $@)
	$(MUSLCC) -O2 -w -I$(DUK_DIR) -c $< -o $@

RT_COMMON := runtimes/common/rtio.c runtimes/common/rtio.h

$(B)/runtimes/js: runtimes/js/main.c $(RT_COMMON) include/ember/abi.h $(B)/runtimes/obj/duktape.o
	@mkdir -p $(dir $@)
	$(MUSLCC) -static $(RT_CFLAGS) -Iruntimes/common -I$(DUK_DIR) -o $@ $< runtimes/common/rtio.c \
		$(B)/runtimes/obj/duktape.o -lm

$(B)/runtimes/lua: runtimes/lua/main.c $(RT_COMMON) include/ember/abi.h $(LUA_LIB)
	@mkdir -p $(dir $@)
	$(CC) -static $(RT_CFLAGS) -Iruntimes/common -I$(LUA_INC) -o $@ $< runtimes/common/rtio.c \
		$(LUA_LIB) -lm

# Debian's static libpython wants libexpat and zlib; glibc's NSS warnings (getpwnam and friends
# in the pwd and grp modules, never reached in a virtine) are not errors
# its own mmap module (pymmap.c): Debian's libpython has none
$(B)/runtimes/python: runtimes/python/main.c runtimes/python/pymmap.c runtimes/python/pymmap.h \
		$(RT_COMMON) include/ember/abi.h $(PY_LIB)
	@mkdir -p $(dir $@)
	$(CC) -static $(RT_CFLAGS) -Wno-missing-field-initializers -Iruntimes/common \
		$(PY_INC:%=-I%) -o $@ $< runtimes/python/pymmap.c runtimes/common/rtio.c $(PY_LIB) \
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
