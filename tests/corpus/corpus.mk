# The compatibility corpus: small real threaded programs built from source into $(B)/corpus/, to
# be run natively and in virtines and their outputs compared byte for byte.
CORPUS_SRC := tests/corpus
CORPUS_OUT := $(B)/corpus
CORPUS_CFLAGS   := -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -pthread -MMD -MP
# every C program is built twice, with musl and with glibc; c_single is the single-threaded control
CORPUS_C   := c_single pt_create pt_mutex pt_tls pt_spin pt_signal pt_detach pt_pool

CORPUS_MUSL     := $(CORPUS_C:%=$(CORPUS_OUT)/%.musl)
CORPUS_GLIBC    := $(CORPUS_C:%=$(CORPUS_OUT)/%.glibc)
CORPUS_BINS     := $(CORPUS_MUSL) $(CORPUS_GLIBC)

.PHONY: corpus
corpus: $(CORPUS_BINS)

CORPUS_DEP = -MF $@.d -MT $@

$(CORPUS_MUSL): $(CORPUS_OUT)/%.musl: $(CORPUS_SRC)/%.c $(CORPUS_SRC)/corpus.mk
	@mkdir -p $(dir $@)
	$(MUSLCC) $(CORPUS_CFLAGS) $(CORPUS_DEP) -static -o $@ $<

$(CORPUS_GLIBC): $(CORPUS_OUT)/%.glibc: $(CORPUS_SRC)/%.c $(CORPUS_SRC)/corpus.mk
	@mkdir -p $(dir $@)
	$(CC) $(CORPUS_CFLAGS) $(CORPUS_DEP) -static -o $@ $<

-include $(CORPUS_MUSL:=.d) $(CORPUS_GLIBC:=.d)
