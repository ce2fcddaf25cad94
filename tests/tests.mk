# Test binaries: every tests/unit/test_*.c is a cmocka program linked against libember.a.
UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/unit/%)

.PHONY: unit-bins
unit-bins: $(UNIT_BINS)

$(B)/tests/unit/%: tests/unit/%.c $(B)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(EMBER_CFLAGS) -Itests/unit -o $@ $< $(B)/libember.a $(LDFLAGS) $(LDLIBS) -lcmocka

all: unit-bins
