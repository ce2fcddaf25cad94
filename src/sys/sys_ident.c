/* Who the process is beyond getuid: its ids set (to its own only, as an unprivileged user),
 * its groups, its umask. */
#include <errno.h>
#include <sys/syscall.h>

#include "sys/sys.h"

/* an id argument an unprivileged process may give: its own, or -1 (unchanged) */
static int own_id(uint64_t id)
{
	return (uint32_t)id == SYS_GUEST_UID || (uint32_t)id == UINT32_MAX;
}

static long set_ids(struct sys_state *st, const uint64_t a[6])
{
	(void)st;
	return own_id(a[0]) && own_id(a[1]) && own_id(a[2]) ? 0 : -EPERM;
}

static long set_one(struct sys_state *st, const uint64_t a[6])
{
	(void)st;
	return (uint32_t)a[0] == SYS_GUEST_UID ? 0 : -EPERM; /* setuid, setgid: -1 is no id */
}

static long set_two(struct sys_state *st, const uint64_t a[6])
{
	(void)st;
	return own_id(a[0]) && own_id(a[1]) ? 0 : -EPERM;
}

/* setfsuid and setfsgid answer with the old id, whether or not they changed it */
static long set_fs(struct sys_state *st, const uint64_t a[6])
{
	(void)st, (void)a;
	return SYS_GUEST_UID;
}

/* getresuid, getresgid: real, effective and saved, all the guest's */
static long get_ids(struct sys_state *st, const uint64_t a[6])
{
	const uint32_t id = SYS_GUEST_UID;
	for (int i = 0; i < 3; i++)
		if (sys_put(st, a[i], &id, sizeof(id)))
			return -EFAULT;
	return 0;
}

/* one group, its own (as a user's login gives it); size 0 asks how many */
static long sys_getgroups(struct sys_state *st, const uint64_t a[6])
{
	const uint32_t gid = SYS_GUEST_UID;
	if ((int)a[0] < 0)
		return -EINVAL;
	if (!a[0])
		return 1;
	return sys_put(st, a[1], &gid, sizeof(gid)) ? -EFAULT : 1;
}

static long sys_umask(struct sys_state *st, const uint64_t a[6])
{
	uint32_t old = st->umask;
	st->umask = (uint32_t)a[0] & 0777;
	return old;
}

const struct sys_entry sys_ident_table[] = {
    {SYS_setuid, "setuid", set_one, 0, NULL},
    {SYS_setgid, "setgid", set_one, 0, NULL},
    {SYS_setreuid, "setreuid", set_two, 0, NULL},
    {SYS_setregid, "setregid", set_two, 0, NULL},
    {SYS_setresuid, "setresuid", set_ids, 0, NULL},
    {SYS_setresgid, "setresgid", set_ids, 0, NULL},
    {SYS_setfsuid, "setfsuid", set_fs, 0, NULL},
    {SYS_setfsgid, "setfsgid", set_fs, 0, NULL},
    {SYS_getresuid, "getresuid", get_ids, 0, NULL},
    {SYS_getresgid, "getresgid", get_ids, 0, NULL},
    {SYS_getgroups, "getgroups", sys_getgroups, 0, NULL},
    {SYS_setgroups, "setgroups", NULL, EPERM, NULL},
    {SYS_umask, "umask", sys_umask, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
