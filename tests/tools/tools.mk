# Host test tools: mkbadelf writes a corpus of malformed ELF files from a good static binary.
TOOLS_BINS := $(B)/tests/mkbadelf

.PHONY: tools
tools: $(TOOLS_BINS)
all: tools

# two sources in one command, so no -MMD: the prerequisites below are the whole dependency list
$(B)/tests/mkbadelf: tests/tools/mkbadelf.c tests/tools/badelf.c tests/tools/badelf.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(filter-out -MMD -MP,$(EMBER_CFLAGS)) -Itests/tools -o $@ tests/tools/mkbadelf.c \
		tests/tools/badelf.c $(LDFLAGS)

# test_elf.c includes the mutation code, so it is rebuilt when that changes
$(B)/tests/unit/test_elf: tests/tools/badelf.c tests/tools/badelf.h
