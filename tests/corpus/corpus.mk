# The compatibility corpus: small real threaded programs (Go, pthreads with musl and glibc, C++,
# Rust) built from source into $(B)/corpus/; tests/integration/test_corpus.sh runs each natively
# and in virtines and compares the outputs byte for byte.
CORPUS_SRC := tests/corpus
CORPUS_OUT := $(B)/corpus
CORPUS_CFLAGS   := -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -pthread -MMD -MP
CORPUS_CXXFLAGS := -std=c++17 -O2 -Wall -Wextra -Werror -pthread -MMD -MP
GO         ?= go
# rustc is no Debian package (rustup puts it in ~/.cargo/bin): rs_threads is built only when it
# is on PATH, and test_corpus.sh says so loudly when it is not. It runs without MAKEFLAGS, whose
# jobserver descriptors make does not hand to it (a warning otherwise).
RUSTC      ?= $(shell command -v rustc 2>/dev/null)

CORPUS_GO  := go_hello go_goroutines go_channels go_json go_sleep go_panic go_gc
# and as people ship them, stripped (-ldflags='-s -w': no .symtab, no DWARF), from the same sources
CORPUS_GO_STRIPPED := go_hello go_json
# every C program is built twice, with musl and with glibc; c_single is the single-threaded control
CORPUS_C   := c_single pt_create pt_mutex pt_tls pt_spin pt_signal pt_detach pt_pool
CORPUS_CPP := cpp_thread cpp_async

CORPUS_GO_BINS  := $(CORPUS_GO:%=$(CORPUS_OUT)/%)
CORPUS_GO_STRIP := $(CORPUS_GO_STRIPPED:%=$(CORPUS_OUT)/%_stripped)
CORPUS_MUSL     := $(CORPUS_C:%=$(CORPUS_OUT)/%.musl)
CORPUS_GLIBC    := $(CORPUS_C:%=$(CORPUS_OUT)/%.glibc)
CORPUS_CPP_BINS := $(CORPUS_CPP:%=$(CORPUS_OUT)/%)
CORPUS_RS_BINS  := $(if $(RUSTC),$(CORPUS_OUT)/rs_threads)
CORPUS_BINS     := $(CORPUS_GO_BINS) $(CORPUS_GO_STRIP) $(CORPUS_MUSL) $(CORPUS_GLIBC) $(CORPUS_CPP_BINS) \
	$(CORPUS_RS_BINS)

.PHONY: corpus
corpus: $(CORPUS_BINS)

CORPUS_DEP = -MF $@.d -MT $@

$(CORPUS_MUSL): $(CORPUS_OUT)/%.musl: $(CORPUS_SRC)/%.c $(CORPUS_SRC)/corpus.mk
	@mkdir -p $(dir $@)
	$(MUSLCC) $(CORPUS_CFLAGS) $(CORPUS_DEP) -static -o $@ $<

$(CORPUS_GLIBC): $(CORPUS_OUT)/%.glibc: $(CORPUS_SRC)/%.c $(CORPUS_SRC)/corpus.mk
	@mkdir -p $(dir $@)
	$(CC) $(CORPUS_CFLAGS) $(CORPUS_DEP) -static -o $@ $<

$(CORPUS_CPP_BINS): $(CORPUS_OUT)/%: $(CORPUS_SRC)/%.cpp $(CORPUS_SRC)/corpus.mk
	@mkdir -p $(dir $@)
	$(CXX) $(CORPUS_CXXFLAGS) $(CORPUS_DEP) -static -o $@ $<

# Go 1.19 from Debian, offline and in GOPATH mode (standard library only), its cache and GOPATH
# inside the build tree, the environment's own Go settings ignored (GOENV=off, GOFLAGS empty)
CORPUS_GOENV := GO111MODULE=off GOENV=off GOFLAGS= GOPROXY=off CGO_ENABLED=0 GOOS=linux \
	GOARCH=amd64 GOCACHE=$(abspath $(CORPUS_OUT))/go-cache GOPATH=$(abspath $(CORPUS_OUT))/gopath
$(CORPUS_GO_BINS): $(CORPUS_OUT)/%: $(CORPUS_SRC)/%.go $(CORPUS_SRC)/corpus.mk
	@mkdir -p $(dir $@)
	$(CORPUS_GOENV) $(GO) build -trimpath -o $@ $<

$(CORPUS_GO_STRIP): $(CORPUS_OUT)/%_stripped: $(CORPUS_SRC)/%.go $(CORPUS_SRC)/corpus.mk
	@mkdir -p $(dir $@)
	$(CORPUS_GOENV) $(GO) build -trimpath -ldflags='-s -w' -o $@ $<

$(CORPUS_RS_BINS): $(CORPUS_OUT)/%: $(CORPUS_SRC)/%.rs $(CORPUS_SRC)/corpus.mk
	@mkdir -p $(dir $@)
	MAKEFLAGS= $(RUSTC) --edition 2021 -O -C target-feature=+crt-static \
		--target x86_64-unknown-linux-gnu -o $@ $<

-include $(CORPUS_MUSL:=.d) $(CORPUS_GLIBC:=.d) $(CORPUS_CPP_BINS:=.d)
