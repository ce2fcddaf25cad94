# The function suite: every functions/<name>/main.c becomes a static musl program
# $(B)/functions/<name> and a static glibc twin $(B)/functions/<name>.glibc (for comparisons).
# The JavaScript, Lua and Python functions (handler.js, handler.lua, handler.py) need no build:
# they run on runtimes/. A function's files (its --files folder), when functions/<name>/files.py
# makes them, are $(B)/functions/<name>/files: made by the build, never committed.
FN_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Ifunctions/common -Isrc
FN_NAMES  := $(patsubst functions/%/main.c,%,$(wildcard functions/*/main.c))
FN_COMMON := functions/common/fnio.c functions/common/sha256.c src/base/base_write.c
FN_DEPS   := $(FN_COMMON) $(wildcard functions/common/*.h) src/base/base.h functions/functions.mk
FN_MUSL   := $(FN_NAMES:%=$(B)/functions/%)
FN_GLIBC  := $(FN_NAMES:%=$(B)/functions/%.glibc)
FN_FILES  := $(patsubst functions/%/files.py,$(B)/functions/%/files.stamp,\
		$(wildcard functions/*/files.py))
# zlib: Debian's static libz.a links with musl too; musl-gcc only needs its two headers
FN_ZLIB   := /usr/lib/x86_64-linux-gnu/libz.a
FN_ZINC   := $(B)/functions/zlib-include

.PHONY: functions
functions: $(FN_MUSL) $(FN_GLIBC) $(FN_FILES)
all: functions

$(FN_MUSL): $(B)/functions/%: functions/%/main.c $(FN_DEPS)
	@mkdir -p $(dir $@)
	$(MUSLCC) -static $(FN_CFLAGS) $(FN_INC) -o $@ $< $(FN_COMMON) $(FN_LIBS) -lm

$(FN_GLIBC): $(B)/functions/%.glibc: functions/%/main.c $(FN_DEPS)
	@mkdir -p $(dir $@)
	$(CC) -static $(FN_CFLAGS) -o $@ $< $(FN_COMMON) $(FN_LIBS) -lm

$(B)/functions/compress $(B)/functions/compress.glibc: FN_LIBS := $(FN_ZLIB)
$(B)/functions/compress: FN_INC := -I$(FN_ZINC)
$(B)/functions/compress: | $(FN_ZINC)/zlib.h

$(FN_ZINC)/zlib.h:
	@mkdir -p $(dir $@)
	ln -sf /usr/include/zlib.h /usr/include/zconf.h $(dir $@)

# files.py FOLDER writes the function's files into FOLDER, the same bytes on every machine
$(B)/functions/%/files.stamp: functions/%/files.py
	rm -rf $(B)/functions/$*/files
	mkdir -p $(B)/functions/$*/files
	$(PY) $< $(B)/functions/$*/files
	touch $@
