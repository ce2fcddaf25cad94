# libFuzzer harnesses: every tests/fuzz/fuzz_NAME.c is one program, linked with common.c against
# the CLI's objects (main.c aside), the server's and libember. Built by `make fuzz` into
# build-fuzz/fuzz/ (everything compiled with clang, ASan, UBSan and coverage instrumentation);
# run by tests/fuzz/run.sh (docs/fuzzing.md).
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRC:tests/fuzz/%.c=$(B)/fuzz/%)

.PHONY: fuzz-bins
fuzz-bins: $(FUZZ_BINS)

FUZZ_LIBS := $(B)/fuzz/libember-cli.a $(B)/libember-srv.a $(B)/libember.a

$(B)/fuzz/libember-cli.a: $(CLI_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

# HARNESS_SOURCES... -> the program $@
FUZZ_LINK = mkdir -p $(dir $@) && $(CC) $(CFLAGS) $(filter-out -MMD -MP,$(EMBER_CFLAGS)) \
	$(PKG_CFLAGS) -Itests/fuzz -fsanitize=fuzzer -o $@ $(1) tests/fuzz/common.c $(FUZZ_LIBS) \
	$(LDFLAGS) $(LDLIBS)

$(B)/fuzz/%: tests/fuzz/%.c tests/fuzz/common.c tests/fuzz/common.h $(FUZZ_LIBS)
	$(call FUZZ_LINK,$<)

# the in-guest runtime's memory calls, built for the host with the harness playing the host
FUZZ_RT_SRC := src/guest/rt_mem.c src/guest/rt_arena.c
$(B)/fuzz/fuzz_rt: tests/fuzz/fuzz_rt.c $(FUZZ_RT_SRC) src/guest/rt.h src/guest/rt_arena.h \
		tests/fuzz/common.c tests/fuzz/common.h $(FUZZ_LIBS)
	$(call FUZZ_LINK,-Isrc/guest -DEMBER_RT_HOSTED $< $(FUZZ_RT_SRC))
