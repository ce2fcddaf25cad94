/* A function's lifecycle state: the moves between states, all of them here. */
#include "func/func.h"

/* to the states each one may move to */
static const unsigned moves[FUNC_STATES] = {
    /* a load: init reached its snapshot point, or ended before it; the snapshot on disk */
    [FUNC_SCRATCH] = 1u << FUNC_WARM | 1u << FUNC_FIRST | 1u << FUNC_COLD,
    /* the first invocation took init's result */
    [FUNC_FIRST] = 1u << FUNC_SCRATCH,
    /* the cold start has the snapshot in memory, or rebuilt it (or could not: scratch) */
    [FUNC_COLD] = 1u << FUNC_WARM | 1u << FUNC_FIRST | 1u << FUNC_SCRATCH,
    /* a load that starts cold (ember_config.cold): the snapshot saved and dropped */
    [FUNC_WARM] = 1u << FUNC_COLD,
};

enum func_state func_state(const struct ember_function *fn)
{
	return (enum func_state)atomic_load(&((struct ember_function *)fn)->state);
}

int func_move(struct ember_function *fn, enum func_state from, enum func_state to)
{
	if ((unsigned)from >= FUNC_STATES || !(moves[from] & 1u << to))
		return -1;
	int expected = (int)from;
	return atomic_compare_exchange_strong(&fn->state, &expected, (int)to) ? 0 : -1;
}

int func_has_snapshot(const struct ember_function *fn)
{
	enum func_state s = func_state(fn);
	return s == FUNC_WARM || s == FUNC_COLD;
}
