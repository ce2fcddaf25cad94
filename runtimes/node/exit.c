/* A Node.js addon of one function, exit(code): the process ends at once (exit_group), without
 * Node.js's teardown of its threads, each of whose exits would be a system call of its own. */
#include <node_api.h>
#include <unistd.h>

static napi_value quit(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value argv[1];
	int32_t code = 0;
	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc == 1)
		napi_get_value_int32(env, argv[0], &code);
	_exit(code);
}

NAPI_MODULE_INIT()
{
	napi_value fn;
	if (napi_create_function(env, "exit", NAPI_AUTO_LENGTH, quit, NULL, &fn) != napi_ok ||
	    napi_set_named_property(env, exports, "exit", fn) != napi_ok)
		return NULL;
	return exports;
}
