# Ember: one non-recursive Makefile. `make run` and `make test` are the two set-up commands.
CC         ?= gcc
MUSLCC     ?= musl-gcc
# the compiler of the embedded stub and in-guest runtime (a clang build keeps gcc for them)
BLOB_CC    ?= $(CC)
PKG_CONFIG ?= pkg-config
B          := build
CFLAGS     ?= -O2 -g
# what every host object needs, kept apart so `make CFLAGS=...` cannot drop it
EMBER_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude -Isrc -MMD -MP
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer
VERSION   := $(shell sed -n 's/^\#define EMBER_VERSION "\(.*\)"$$/\1/p' include/ember/ember.h)
SOMAJOR   := $(firstword $(subst ., ,$(VERSION)))

# The Debian packages' flags come from their .pc files: the core's (also ember.pc's
# Requires.private), then what the server and the CLI add. pthread has no .pc. Before
# scripts/setup.sh installed pkg-config (the first parse of `make run`) they are empty, and
# pkg-check stops a build with the reason.
CORE_PKGS  := capstone libseccomp libxxhash libarchive
SRV_PKGS   := jansson libmicrohttpd libcurl libcrypto uuid
CLI_PKGS   := libcurl yaml-0.1
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(CORE_PKGS) $(SRV_PKGS) $(CLI_PKGS) 2>/dev/null)
CORE_LIBS  := $(shell $(PKG_CONFIG) --libs $(CORE_PKGS) 2>/dev/null) -pthread
LDLIBS     += $(shell $(PKG_CONFIG) --libs $(CLI_PKGS) $(SRV_PKGS) 2>/dev/null) $(CORE_LIBS)

.PHONY: all setup run test check-layers unit integration bench asan fuzz fuzz-long fuzz-cov clean format pkg-check lib install uninstall FORCE
all: $(B)/ember guests corpus lib

setup:
	@./scripts/setup.sh

pkg-check:
	@$(PKG_CONFIG) --exists --print-errors $(CORE_PKGS) $(SRV_PKGS) $(CLI_PKGS) || \
		{ echo "missing packages or pkg-config: run 'make setup' (scripts/setup.sh)" >&2; exit 1; }

# The core library, libember (the API of include/ember/ember.h): every layer below the server,
# with the in-guest runtime and the ptrace stub embedded. Its objects are position-independent,
# so the same ones make libember.a, libember.so and the ember binary. The server and the CLI
# are the ember binary's own.
CORE_SRC := $(wildcard src/base/*.c src/vm/*.c src/proc/*.c src/image/*.c src/bundle/*.c src/sys/*.c src/fd/*.c src/fs/*.c src/snap/*.c src/cold/*.c src/family/*.c src/share/*.c src/pool/*.c src/func/*.c)
CORE_ASM := $(wildcard src/vm/*.S)
CORE_OBJ := $(CORE_SRC:%.c=$(B)/obj/%.o) $(CORE_ASM:%.S=$(B)/obj/%.o)
SRV_OBJ  := $(patsubst %.c,$(B)/obj/%.o,$(wildcard src/server/*.c src/async/*.c src/metrics/*.c))
CLI_OBJ  := $(patsubst %.c,$(B)/obj/%.o,$(wildcard src/cli/*.c src/client/*.c src/bench/*.c))
MAIN_OBJ := $(B)/obj/src/main.o
include src/vm/stub/stub.mk
include src/guest/guest.mk
include src/server/console/console.mk

CORE_PIC := -fPIC -fno-semantic-interposition
$(CORE_OBJ): PIC_CFLAGS := $(CORE_PIC)
# the core's objects are rebuilt when their flags change (those of a build from before they
# were position-independent, say): the stamp is rewritten only then
CORE_FLAGS := $(CFLAGS) $(EMBER_CFLAGS) $(CORE_PIC) $(PKG_CFLAGS)
$(B)/obj/core.flags: FORCE
	@mkdir -p $(dir $@)
	@echo '$(CORE_FLAGS)' | cmp -s - $@ || echo '$(CORE_FLAGS)' >$@
$(CORE_OBJ): $(B)/obj/core.flags
FORCE:

$(B)/obj/%.o: %.c | pkg-check
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(EMBER_CFLAGS) $(PIC_CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(B)/obj/%.o: %.S | pkg-check
	@mkdir -p $(dir $@)
	$(CC) $(EMBER_CFLAGS) $(PIC_CFLAGS) -c $< -o $@

$(B)/libember.a: $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

# exports the ember_* API only (src/libember.map); -z defs: every dependency is named
$(B)/libember.so: $(CORE_OBJ) src/libember.map
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libember.so.$(SOMAJOR) \
		-Wl,--version-script=src/libember.map -Wl,-z,defs -o $@ $(CORE_OBJ) $(CORE_LIBS)

$(B)/ember: $(MAIN_OBJ) $(CLI_OBJ) $(SRV_OBJ) $(B)/libember.a
	$(CC) $(CFLAGS) $(EMBER_CFLAGS) $(LDFLAGS) -o $@ $(MAIN_OBJ) $(CLI_OBJ) $(SRV_OBJ) $(B)/libember.a $(LDLIBS)

lib: $(B)/libember.a $(B)/libember.so

# the server alone, for the unit tests of its pieces (not installed)
$(B)/libember-srv.a: $(SRV_OBJ)
	@rm -f $@
	ar rcs $@ $^

# the man page, from the help texts of the binary just built
$(B)/ember.1: $(B)/ember scripts/mkman.sh
	scripts/mkman.sh $(B)/ember >$@.tmp && mv $@.tmp $@
all: $(B)/ember.1

# `make install [PREFIX=/usr/local] [DESTDIR=DIR]`: the ember binary, its runtimes (Duktape's,
# Lua's and the static python's programs, python's standard library python-lib, and the files of
# Node.js and CPython, node-files and python3-files, whose programs are Debian's) in
# lib/ember/runtimes beside its bin/ (where an installed ember looks for them: RUNTIMEDIR
# follows BINDIR), libember.a and libember.so, the public headers, ember.pc and ember.1. It
# installs what `make all` built.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
RUNTIMEDIR := $(abspath $(BINDIR)/../lib/ember/runtimes)
HEADERS    := $(wildcard include/ember/*.h)
RUNTIMES   := $(B)/runtimes/js $(B)/runtimes/lua $(B)/runtimes/python
D          := $(DESTDIR)
# ember.pc's libdir and includedir relative to its prefix where they are under it, so that
# pkg-config --define-variable=prefix=... moves them too
PC_SED     := -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	-e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|' \
	-e 's|@INCLUDEDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))|' \
	-e 's|@REQUIRES@|$(CORE_PKGS)|'

RUNTIME_FILES := python-lib node-files python3-files
install: $(B)/ember $(RUNTIMES) $(RUNTIME_FILES:%=$(B)/runtimes/%.stamp) $(B)/libember.a $(B)/libember.so $(B)/ember.1 src/ember.pc.in
	install -d $(D)$(BINDIR) $(D)$(RUNTIMEDIR) $(D)$(LIBDIR)/pkgconfig $(D)$(INCLUDEDIR)/ember \
		$(D)$(MANDIR)/man1
	install -m 755 $(B)/ember $(D)$(BINDIR)/ember
	install -m 755 $(RUNTIMES) $(D)$(RUNTIMEDIR)/
	for f in $(RUNTIME_FILES); do rm -rf $(D)$(RUNTIMEDIR)/$$f && \
		cp -R $(B)/runtimes/$$f $(D)$(RUNTIMEDIR)/$$f || exit 1; done
	install -m 644 $(B)/libember.a $(D)$(LIBDIR)/libember.a
	install -m 755 $(B)/libember.so $(D)$(LIBDIR)/libember.so.$(VERSION)
	ln -sf libember.so.$(VERSION) $(D)$(LIBDIR)/libember.so.$(SOMAJOR)
	ln -sf libember.so.$(SOMAJOR) $(D)$(LIBDIR)/libember.so
	install -m 644 $(HEADERS) $(D)$(INCLUDEDIR)/ember/
	sed $(PC_SED) src/ember.pc.in >$(D)$(LIBDIR)/pkgconfig/ember.pc
	install -m 644 $(B)/ember.1 $(D)$(MANDIR)/man1/ember.1

uninstall:
	rm -f $(D)$(BINDIR)/ember $(RUNTIMES:$(B)/runtimes/%=$(D)$(RUNTIMEDIR)/%) \
		$(D)$(LIBDIR)/libember.a $(D)$(LIBDIR)/libember.so $(D)$(LIBDIR)/libember.so.$(SOMAJOR) \
		$(D)$(LIBDIR)/libember.so.$(VERSION) $(HEADERS:include/%=$(D)$(INCLUDEDIR)/%) \
		$(D)$(LIBDIR)/pkgconfig/ember.pc $(D)$(MANDIR)/man1/ember.1
	rm -rf $(RUNTIME_FILES:%=$(D)$(RUNTIMEDIR)/%)
	rmdir $(D)$(RUNTIMEDIR) $(D)$(dir $(RUNTIMEDIR)) $(D)$(INCLUDEDIR)/ember 2>/dev/null || true

include tests/guest/guest.mk
include tests/corpus/corpus.mk
-include functions/functions.mk
-include runtimes/runtimes.mk
include tests/tests.mk
include tests/conformance/conformance.mk
include tests/tools/tools.mk
include tests/fuzz/fuzz.mk
-include bench/bench.mk

# setup first, then the build: with -j the two must not race (the build needs the packages)
run: setup
	$(MAKE) all
	./scripts/run-examples.sh

test: setup
	./scripts/check-layers.sh
	$(MAKE) all conformance-subset
	$(MAKE) fuzz
	./tests/run.sh

# the layering of src/ (docs/architecture.md): every include downward, the top floor on the API
check-layers:
	./scripts/check-layers.sh

asan:
	$(MAKE) B=build-asan CFLAGS="-O1 -g -Wno-format-truncation $(SAN_FLAGS)" LDFLAGS="$(SAN_FLAGS)" all unit-bins

# libFuzzer harnesses (tests/fuzz/, docs/fuzzing.md): the library compiled again with clang,
# coverage instrumentation, ASan and UBSan into its own tree; the embedded stub and in-guest
# runtime stay built by the usual compiler (BLOB_CC), as they are in every other build
FUZZ_B   := build-fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
fuzz:
	$(MAKE) B=$(FUZZ_B) CC=clang BLOB_CC=$(CC) CFLAGS="-O1 -g -Wno-gnu-variable-sized-type-not-at-end -fsanitize=fuzzer-no-link $(FUZZ_SAN)" \
		LDFLAGS="$(FUZZ_SAN)" fuzz-bins

# every harness (or FUZZ_ONLY="sys elf ...") for FUZZ_SECONDS each, its corpus kept and growing
# in $(FUZZ_B)/corpus/NAME; the figures in docs/fuzzing.md come from this
FUZZ_SECONDS ?= 60
fuzz-long: fuzz
	FUZZ_B=$(FUZZ_B) ./tests/fuzz/run.sh --long $(FUZZ_SECONDS) $(FUZZ_ONLY)

# the line coverage of each harness's own sources by its corpora (those fuzz-long grew and the
# committed ones), with llvm-cov: the harnesses built again with clang's source coverage
FUZZ_COV_B := build-fuzz-cov
fuzz-cov:
	$(MAKE) B=$(FUZZ_COV_B) CC=clang BLOB_CC=$(CC) CFLAGS="-O1 -g -Wno-gnu-variable-sized-type-not-at-end -fsanitize=fuzzer-no-link -fprofile-instr-generate -fcoverage-mapping" \
		LDFLAGS="-fprofile-instr-generate" fuzz-bins
	FUZZ_B=$(FUZZ_COV_B) FUZZ_CORPUS=$(FUZZ_B)/corpus ./tests/fuzz/run.sh --coverage $(FUZZ_ONLY)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(B) build-asan $(FUZZ_B) $(FUZZ_COV_B)

-include $(CORE_OBJ:.o=.d) $(SRV_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(MAIN_OBJ:.o=.d)
