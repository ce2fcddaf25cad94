# libFuzzer harnesses: every tests/fuzz/fuzz_NAME.c is one program, linked with common.c against
# the server's objects and libember. Built by `make fuzz` into build-fuzz/fuzz/ (the library compiled with clang, ASan,
# UBSan and coverage instrumentation); run by tests/fuzz/run.sh (docs/fuzzing.md).
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRC:tests/fuzz/%.c=$(B)/fuzz/%)

.PHONY: fuzz-bins
fuzz-bins: $(FUZZ_BINS)

$(B)/fuzz/%: tests/fuzz/%.c tests/fuzz/common.c tests/fuzz/common.h $(B)/libember-srv.a \
		$(B)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(filter-out -MMD -MP,$(EMBER_CFLAGS)) $(PKG_CFLAGS) -Itests/fuzz \
		-fsanitize=fuzzer -o $@ $< tests/fuzz/common.c $(B)/libember-srv.a $(B)/libember.a \
		$(LDFLAGS) $(LDLIBS)
