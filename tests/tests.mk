# Test binaries: every tests/unit/test_*.c is a cmocka program linked against libember.a, and the
# server's archive for those that test its pieces.
UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/unit/%)
CMOCKA_LIBS := $(shell $(PKG_CONFIG) --libs cmocka 2>/dev/null)

.PHONY: unit-bins
unit-bins: $(UNIT_BINS)

$(B)/tests/unit/%: tests/unit/%.c $(B)/libember-srv.a $(B)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(EMBER_CFLAGS) $(PKG_CFLAGS) -Itests/unit -o $@ $< $(B)/libember-srv.a \
		$(B)/libember.a $(LDFLAGS) $(LDLIBS) $(CMOCKA_LIBS)

all: unit-bins

# test_sandbox installs the CLI's filter, so it links the CLI's sandbox objects too
SANDBOX_OBJ := $(B)/obj/src/cli/sandbox.o $(B)/obj/src/cli/sandbox_list.o
$(B)/tests/unit/test_sandbox: tests/unit/test_sandbox.c $(SANDBOX_OBJ) $(B)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(EMBER_CFLAGS) $(PKG_CFLAGS) -Itests/unit -o $@ $< $(SANDBOX_OBJ) \
		$(B)/libember.a $(LDFLAGS) $(LDLIBS) $(CMOCKA_LIBS)

# test_lb checks ember lb-config's generator, a CLI object of its own, and the ring it shares
# with the server (srv_ring.o)
$(B)/tests/unit/test_lb: tests/unit/test_lb.c $(B)/obj/src/client/lb_gen.o $(B)/obj/src/server/srv_ring.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(EMBER_CFLAGS) $(PKG_CFLAGS) -Itests/unit -o $@ $< \
		$(B)/obj/src/client/lb_gen.o $(B)/obj/src/server/srv_ring.o $(LDFLAGS) $(CMOCKA_LIBS)

# test_bench_samples tests the CLI's benchmark sample sets
$(B)/tests/unit/test_bench_samples: tests/unit/test_bench_samples.c $(B)/obj/src/bench/bench_samples.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(EMBER_CFLAGS) $(PKG_CFLAGS) -Itests/unit -o $@ $< \
		$(B)/obj/src/bench/bench_samples.o $(LDFLAGS) $(LDLIBS) $(CMOCKA_LIBS)

# test_serve_log checks ember serve's log writer, a CLI object of its own
$(B)/tests/unit/test_serve_log: tests/unit/test_serve_log.c $(B)/obj/src/cli/serve_log.o $(B)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(EMBER_CFLAGS) $(PKG_CFLAGS) -Itests/unit -o $@ $< \
		$(B)/obj/src/cli/serve_log.o $(B)/libember.a $(LDFLAGS) $(LDLIBS) $(CMOCKA_LIBS)

# test_conf_parse checks ember bench conformance's readers of the suites' output
CONF_OBJ := $(B)/obj/src/bench/bench_conf_case.o $(B)/obj/src/bench/bench_conf_go.o \
	$(B)/obj/src/bench/bench_conf_py.o $(B)/obj/src/bench/bench_conf_gtest.o
$(B)/tests/unit/test_conf_parse: tests/unit/test_conf_parse.c $(CONF_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(EMBER_CFLAGS) $(PKG_CFLAGS) -Itests/unit -o $@ $< $(CONF_OBJ) \
		$(LDFLAGS) $(CMOCKA_LIBS)

# test_opt checks the option tables' parser and --help (src/cli/opt.c, opt_help.c)
OPT_OBJ := $(B)/obj/src/cli/opt.o $(B)/obj/src/cli/opt_help.o
$(B)/tests/unit/test_opt: tests/unit/test_opt.c $(OPT_OBJ) $(B)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(EMBER_CFLAGS) $(PKG_CFLAGS) -Itests/unit -o $@ $< $(OPT_OBJ) \
		$(B)/libember.a $(LDFLAGS) $(LDLIBS) $(CMOCKA_LIBS)

# test_bench_knobs checks the guard that puts a benchmark's host settings back
$(B)/tests/unit/test_bench_knobs: tests/unit/test_bench_knobs.c $(B)/obj/src/bench/bench_knobs.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(EMBER_CFLAGS) $(PKG_CFLAGS) -Itests/unit -o $@ $< \
		$(B)/obj/src/bench/bench_knobs.o $(LDFLAGS) $(CMOCKA_LIBS)
