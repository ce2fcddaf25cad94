# `make bench`: the headline comparisons, each measured side by side in one run.
# `make bench-http`: ember serve against a fork-per-request server under wrk (bench/http.sh).
# `make bench-hostile`, `make bench-soak`: crash storms under load, a soak (docs/hostile.md).
# `make bench-setup`: the peers of `ember bench all` (scripts/setup.sh --bench); `make bench-all`
# runs it into bench-all/ (ARGS: more options, e.g. ARGS=--quick).
.PHONY: bench bench-http bench-hostile bench-soak bench-setup bench-all
bench: setup
	$(MAKE) all
	./bench/run_vs_native.sh
	./$(B)/ember bench latency --backend $${EMBER_BACKEND:-both}

# the HTTP benchmark's baseline: a process per request, as the OpenFaaS classic watchdog
$(B)/bench/forkserver: bench/forkserver.c bench/bench.mk
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -o $@ $< -lpthread
all: $(B)/bench/forkserver

bench-http: setup
	$(MAKE) all
	B=$(B) ./bench/http.sh

bench-hostile: setup
	$(MAKE) all
	B=$(B) ./bench/hostile.sh

bench-soak: setup
	$(MAKE) all
	B=$(B) ./bench/soak.sh

# bench/hostile.sh's clients: a fixed-rate load generator and the hostile ones
$(B)/bench/loadgen $(B)/bench/attack: $(B)/bench/%: bench/%.c bench/client.c bench/client.h \
		bench/bench.mk
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -o $@ $< bench/client.c
all: $(B)/bench/loadgen $(B)/bench/attack

# `ember bench all`'s microVM peer: /init that puts the request file on stdin and runs /fn
$(B)/bench/vminit: bench/vminit.c bench/bench.mk
	@mkdir -p $(dir $@)
	$(MUSLCC) -static -O2 -Wall -Wextra -Werror -o $@ $<
all: $(B)/bench/vminit

bench-setup: setup
	./scripts/setup.sh --bench

bench-all: bench-setup
	$(MAKE) all
	./$(B)/ember bench all --out bench-all $(ARGS)
