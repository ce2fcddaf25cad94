# Language runtimes: static programs that run a handler whose source arrives on fd 3.
#   $(B)/runtimes/js   Duktape (compiled from the Debian duktape-dev source), built with musl
#   $(B)/runtimes/lua  Lua 5.4 (Debian's liblua5.4.a, compiled for glibc), built with glibc
RT_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Iinclude
DUK_DIR   := /usr/share/duktape
LUA_INC   := /usr/include/lua5.4
LUA_LIB   := /usr/lib/x86_64-linux-gnu/liblua5.4.a

.PHONY: runtimes
runtimes: $(B)/runtimes/js $(B)/runtimes/lua
all: runtimes

# duktape.c is large and not ours: its own object, no warnings, rebuilt only when it changes
$(B)/runtimes/obj/duktape.o: $(DUK_DIR)/duktape.c $(DUK_DIR)/duktape.h $(DUK_DIR)/duk_config.h
	@mkdir -p $(dir $@)
	$(MUSLCC) -O2 -w -I$(DUK_DIR) -c $< -o $@

RT_COMMON := runtimes/common/rtio.c runtimes/common/rtio.h

$(B)/runtimes/js: runtimes/js/main.c $(RT_COMMON) include/ember/abi.h $(B)/runtimes/obj/duktape.o
	@mkdir -p $(dir $@)
	$(MUSLCC) -static $(RT_CFLAGS) -Iruntimes/common -I$(DUK_DIR) -o $@ $< runtimes/common/rtio.c \
		$(B)/runtimes/obj/duktape.o -lm

$(B)/runtimes/lua: runtimes/lua/main.c $(RT_COMMON) include/ember/abi.h $(LUA_LIB)
	@mkdir -p $(dir $@)
	$(CC) -static $(RT_CFLAGS) -Iruntimes/common -I$(LUA_INC) -o $@ $< runtimes/common/rtio.c \
		$(LUA_LIB) -lm
