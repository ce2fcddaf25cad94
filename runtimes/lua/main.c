/* lua: the Lua 5.4 runtime, running the global handler(request, env) of a source on fd 3. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "ember/abi.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "langio.h"

#define EX_SOURCE  65 /* the source does not compile, fails at top level or lacks handler */
#define EX_NOINPUT 66 /* fd 3 or fd 0 cannot be read */
#define MAX_DEPTH  128

static char chunkname[256]; /* "@<file>" */

/*
 * Lua seeds its string hashes and math.random with time(NULL). Static glibc's time() makes the
 * `time` syscall when there is no vDSO (as inside Ember); this one only needs clock_gettime.
 */
time_t time(time_t *t)
{
	struct timespec ts = {0};
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}

/* Pushes the request's metadata (fd 4: "NAME=value" lines) as a table of strings; fd 4 closed
 * (a native run) or unreadable: an empty table. */
static void put_meta(void *c, const char *name, size_t nlen, const char *value, size_t vlen)
{
	lua_State *L = c;
	lua_pushlstring(L, name, nlen);
	lua_pushlstring(L, value, vlen);
	lua_rawset(L, -3);
}

static void push_meta(lua_State *L)
{
	lua_newtable(L);
	lang_meta_each(EMBER_META_FD, put_meta, L);
}

/* stderr output without stdio */
static void msgf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msgf(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	base_write_all(2, buf, strlen(buf));
}

/* print: like Lua's, but to stderr (the log) */
static int l_print(lua_State *L)
{
	int n = lua_gettop(L);
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	for (int i = 1; i <= n; i++) {
		if (i > 1)
			luaL_addchar(&b, '\t');
		luaL_tolstring(L, i, NULL);
		luaL_addvalue(&b);
	}
	luaL_addchar(&b, '\n');
	luaL_pushresult(&b);
	size_t len;
	const char *s = lua_tolstring(L, -1, &len);
	base_write_all(2, s, len);
	return 0;
}

/* Message handler: a string message plus "<file>:<line>: " if it lacks a position in the chunk. */
static int on_error(lua_State *L)
{
	const char *m = lua_tostring(L, 1);
	if (!m) {
		if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
			m = lua_tostring(L, -1);
		else
			m = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
	}
	if (strncmp(m, chunkname + 1, strlen(chunkname + 1)) != 0) {
		lua_Debug ar;
		int line = 1;
		for (int level = 1; lua_getstack(L, level, &ar); level++)
			if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0 &&
			    !strcmp(ar.source, chunkname)) {
				line = ar.currentline;
				break;
			}
		m = lua_pushfstring(L, "%s:%d: %s", chunkname + 1, line, m);
	}
	lua_pushstring(L, m);
	return 1;
}

/* Message handler for handler(): the message and a traceback. */
static int on_handler_error(lua_State *L)
{
	on_error(L);
	luaL_traceback(L, L, lua_tostring(L, -1), 1);
	return 1;
}

/* The JSON serialiser for table results (see README.md for the mapping). */
struct out {
	char *p;
	size_t len, cap;
};

static void put(lua_State *L, struct out *o, const char *s, size_t n)
{
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 4096;
		while (cap < o->len + n)
			cap *= 2;
		char *p = realloc(o->p, cap);
		if (!p)
			luaL_error(L, "out of memory");
		o->p = p;
		o->cap = cap;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

static void put_string(lua_State *L, struct out *o, const char *s, size_t n)
{
	put(L, o, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[8] = {'\\', (char)c, 0};
		if (c == '\n' || c == '\r' || c == '\t')
			esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
		else if (c < 0x20 || c == 0x7f)
			snprintf(esc, sizeof(esc), "\\u%04x", c);
		else if (c != '"' && c != '\\') {
			esc[0] = (char)c;
			esc[1] = 0;
		}
		put(L, o, esc, strlen(esc));
	}
	put(L, o, "\"", 1);
}

struct key {
	const char *s;
	size_t n;
	int slot; /* index in the key/value scratch tables */
};

static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);
	return c ? c : (x->n > y->n) - (x->n < y->n);
}

static void put_value(lua_State *L, struct out *o, int idx, int depth);

/* Serialises the table at idx: an array if its keys are exactly 1..n (n > 0), else an object. */
static void put_table(lua_State *L, struct out *o, int idx, int depth)
{
	lua_Integer n = (lua_Integer)lua_rawlen(L, idx), count = 0;
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		lua_pop(L, 1);
		count++;
	}
	if (n > 0 && count == n) {
		put(L, o, "[", 1);
		for (lua_Integer i = 1; i <= n; i++) {
			if (i > 1)
				put(L, o, ",", 1);
			lua_rawgeti(L, idx, i);
			put_value(L, o, lua_gettop(L), depth + 1);
			lua_pop(L, 1);
		}
		put(L, o, "]", 1);
		return;
	}
	/* collect string forms of the keys and the values, then emit them in byte order */
	lua_createtable(L, (int)count, 0);
	lua_createtable(L, (int)count, 0);
	int keys = lua_gettop(L) - 1, vals = keys + 1, slot = 0;
	struct key *k = malloc(((size_t)count + 1) * sizeof(*k));
	if (!k)
		luaL_error(L, "out of memory");
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		if (lua_type(L, -2) != LUA_TSTRING && lua_type(L, -2) != LUA_TNUMBER) {
			free(k);
			luaL_error(L, "cannot serialise a table key of type %s",
				   luaL_typename(L, -2));
		}
		slot++;
		lua_rawseti(L, vals, slot);
		lua_pushvalue(L, -1);
		luaL_tolstring(L, -1, NULL);
		lua_rawseti(L, keys, slot);
		lua_pop(L, 1);
	}
	for (int i = 0; i < slot; i++) {
		lua_rawgeti(L, keys, i + 1);
		k[i].s = lua_tolstring(L, -1, &k[i].n); /* kept alive by the keys table */
		k[i].slot = i + 1;
		lua_pop(L, 1);
	}
	qsort(k, (size_t)slot, sizeof(*k), key_cmp);
	put(L, o, "{", 1);
	for (int i = 0; i < slot; i++) {
		if (i > 0)
			put(L, o, ",", 1);
		put_string(L, o, k[i].s, k[i].n);
		put(L, o, ":", 1);
		lua_rawgeti(L, vals, k[i].slot);
		put_value(L, o, lua_gettop(L), depth + 1);
		lua_pop(L, 1);
	}
	put(L, o, "}", 1);
	free(k);
	lua_pop(L, 2);
}

static void put_value(lua_State *L, struct out *o, int idx, int depth)
{
	char num[64];
	size_t len;
	const char *s;
	if (depth > MAX_DEPTH)
		luaL_error(L, "cannot serialise tables nested deeper than %d (a cycle?)",
			   MAX_DEPTH);
	luaL_checkstack(L, 8, "serialising the result");
	switch (lua_type(L, idx)) {
	case LUA_TNIL:
		put(L, o, "null", 4);
		break;
	case LUA_TBOOLEAN:
		s = lua_toboolean(L, idx) ? "true" : "false";
		put(L, o, s, strlen(s));
		break;
	case LUA_TNUMBER:
		if (lua_isinteger(L, idx))
			snprintf(num, sizeof(num), LUA_INTEGER_FMT, lua_tointeger(L, idx));
		else if (isfinite(lua_tonumber(L, idx)))
			snprintf(num, sizeof(num), "%.14g", lua_tonumber(L, idx));
		else
			strcpy(num, "null");
		put(L, o, num, strlen(num));
		break;
	case LUA_TSTRING:
		s = lua_tolstring(L, idx, &len);
		put_string(L, o, s, len);
		break;
	case LUA_TTABLE:
		put_table(L, o, idx, depth);
		break;
	default:
		luaL_error(L, "cannot serialise a %s value", luaL_typename(L, idx));
	}
}

/* Converts the result (argument 1) to the response string, run in protected mode. */
static int to_response(lua_State *L)
{
	struct out *o = lua_touserdata(L, 2);
	switch (lua_type(L, 1)) {
	case LUA_TNIL:
	case LUA_TNONE:
		break;
	case LUA_TSTRING:
		lua_pushvalue(L, 1);
		break;
	case LUA_TNUMBER:
	case LUA_TBOOLEAN:
		luaL_tolstring(L, 1, NULL);
		break;
	case LUA_TTABLE:
		put_value(L, o, 1, 0);
		lua_pushlstring(L, o->p ? o->p : "", o->len);
		break;
	default:
		return luaL_error(L, "cannot serialise a %s value", luaL_typename(L, 1));
	}
	return lua_gettop(L) > 2 ? 1 : 0;
}

static void open_libs(lua_State *L)
{
	static const luaL_Reg libs[] = {
	    {LUA_GNAME, luaopen_base},	     {LUA_COLIBNAME, luaopen_coroutine},
	    {LUA_TABLIBNAME, luaopen_table}, {LUA_STRLIBNAME, luaopen_string},
	    {LUA_MATHLIBNAME, luaopen_math}, {LUA_UTF8LIBNAME, luaopen_utf8},
	    {LUA_OSLIBNAME, luaopen_os},
	};
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		luaL_requiref(L, libs[i].name, libs[i].func, 1);
		lua_pop(L, 1);
	}
	lua_pushcfunction(L, l_print);
	lua_setglobal(L, "print");
}

int main(int argc, char **argv)
{
	const char *file = argc > 1 ? argv[1] : "handler.lua";
	size_t srclen, reqlen;
	snprintf(chunkname, sizeof(chunkname), "@%s", file);
	char *src = lang_read_all(EMBER_CODE_FD, &srclen, 0);
	if (!src) {
		msgf("lua: cannot read the source from fd %d: %s\n", EMBER_CODE_FD,
		     strerror(errno));
		return EX_NOINPUT;
	}
	lua_State *L = luaL_newstate();
	if (!L) {
		msgf("lua: cannot create the state\n");
		return 70;
	}
	open_libs(L);

	/* compile and run the top level once, before the snapshot */
	lua_pushcfunction(L, on_error);
	if (luaL_loadbufferx(L, src, srclen, chunkname, "t") != LUA_OK ||
	    lua_pcall(L, 0, 0, 1) != LUA_OK) {
		size_t len;
		const char *m = lua_tolstring(L, -1, &len);
		if (strncmp(m, file, strlen(file)) != 0) /* e.g. a binary chunk */
			msgf("%s:1: ", file);
		base_write_all(2, m, len);
		base_write_all(2, "\n", 1);
		return EX_SOURCE;
	}
	free(src);
	lua_settop(L, 0);
	if (lua_getglobal(L, "handler") != LUA_TFUNCTION) {
		msgf("%s:1: error: the source must define a global function 'handler'\n", file);
		return EX_SOURCE;
	}
	/* env costs a read of fd 4, an exit: only for a handler that names a second parameter */
	lua_Debug ar;
	lua_getinfo(L, ">u", &ar); /* pops handler */
	int want_env = ar.nparams >= 2 || ar.isvararg;
	lua_gc(L, LUA_GCCOLLECT);

	/* Ember snapshots here, at the first read of fd 0 */
	char *req = lang_read_all(0, &reqlen, 0);
	if (!req) {
		msgf("lua: cannot read the request: %s\n", strerror(errno));
		return EX_NOINPUT;
	}
	lua_pushcfunction(L, on_handler_error);
	lua_getglobal(L, "handler");
	lua_pushlstring(L, req, reqlen);
	/* req is not freed: the run ends with this one request, and in a virtine the free would
	 * give its pages back with a munmap (or brk), an exit per invocation in trap mode */
	if (want_env)
		push_meta(L);
	else
		lua_newtable(L);
	if (lua_pcall(L, 2, 1, 1) != LUA_OK) {
		msgf("%s: handler failed: ", file);
		size_t len;
		const char *m = lua_tolstring(L, -1, &len);
		base_write_all(2, m, len);
		base_write_all(2, "\n", 1);
		return 1;
	}
	struct out o = {0};
	lua_pushcfunction(L, to_response);
	lua_insert(L, -2);
	lua_pushlightuserdata(L, &o);
	if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
		msgf("%s: cannot serialise the result: %s\n", file, lua_tostring(L, -1));
		return 1;
	}
	size_t len = 0;
	const char *out = lua_tolstring(L, -1, &len);
	return out && base_write_all(1, out, len) ? 1 : 0;
}
