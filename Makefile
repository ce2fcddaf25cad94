# Ember: one non-recursive Makefile. `make run` and `make test` are the two set-up commands.
CC       ?= gcc
MUSLCC   ?= musl-gcc
B        := build
CFLAGS   ?= -O2 -g
# what every host object needs, kept apart so `make CFLAGS=...` cannot drop it
EMBER_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude -Isrc -MMD -MP
LDLIBS   += -lcapstone -lseccomp -ljansson -lxxhash -lpthread -lmicrohttpd -lcurl -lyaml
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer

.PHONY: all setup run test unit integration bench asan clean format
all: $(B)/ember guests

setup:
	@./scripts/setup.sh

# Host library: every layer below the CLI.
LIB_SRC  := $(wildcard src/vm/*.c src/image/*.c src/sys/*.c src/snap/*.c src/mem/*.c src/pool/*.c src/server/*.c)
CLI_SRC  := $(wildcard src/cli/*.c)
LIB_ASM  := $(wildcard src/vm/*.S)
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/obj/%.o) $(LIB_ASM:%.S=$(B)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(B)/obj/%.o)
include src/vm/stub/stub.mk
include src/guest/guest.mk

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(EMBER_CFLAGS) -c $< -o $@

$(B)/obj/%.o: %.S
	@mkdir -p $(dir $@)
	$(CC) $(EMBER_CFLAGS) -c $< -o $@

$(B)/libember.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/ember: $(CLI_OBJ) $(B)/libember.a
	$(CC) $(CFLAGS) $(EMBER_CFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJ) $(B)/libember.a $(LDLIBS)

include tests/guest/guest.mk
-include functions/functions.mk
-include runtimes/runtimes.mk
include tests/tests.mk
include tests/tools/tools.mk
-include bench/bench.mk

# setup first, then the build: with -j the two must not race (the build needs the packages)
run: setup
	$(MAKE) all
	./scripts/run-examples.sh

test: setup
	$(MAKE) all
	./tests/run.sh

asan:
	$(MAKE) B=build-asan CFLAGS="-O1 -g -Wno-format-truncation $(SAN_FLAGS)" LDFLAGS="$(SAN_FLAGS)" all unit-bins

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(B) build-asan

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)
