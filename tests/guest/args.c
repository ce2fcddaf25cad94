/* args: prints argv and TEST_* environment variables and checks the auxv and stack at start. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

extern char **environ;
extern char _start[];

static int failed;

static void check(int ok, const char *what)
{
	if (!ok) {
		printf("FAIL: %s\n", what);
		failed = 1;
	}
}

int main(int argc, char **argv)
{
	_Alignas(16) long double local = argc;
	volatile uintptr_t local_addr = (uintptr_t)&local;
	const char *execfn = (const char *)getauxval(AT_EXECFN);
	const unsigned char *rnd = (const unsigned char *)getauxval(AT_RANDOM);

	printf("argc=%d\n", argc);
	for (int i = 0; i < argc; i++)
		printf("argv[%d]=%s\n", i, argv[i]);
	check(argv[argc] == NULL, "argv not NULL-terminated");
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "TEST_", 5) == 0)
			printf("env %s\n", *e);

	check(getauxval(AT_PAGESZ) == 4096, "AT_PAGESZ");
	check(rnd != NULL, "AT_RANDOM");
	check(execfn != NULL, "AT_EXECFN");
	printf("execfn=%s\n", execfn ? execfn : "(null)");
	check(getauxval(AT_PHDR) != 0 && getauxval(AT_PHNUM) != 0, "AT_PHDR/AT_PHNUM");
	check(getauxval(AT_PHENT) == 56, "AT_PHENT");
	check(getauxval(AT_ENTRY) == (uintptr_t)_start, "AT_ENTRY is not _start");
	printf("uid=%lu gid=%lu euid=%lu egid=%lu\n", getauxval(AT_UID), getauxval(AT_GID),
	       getauxval(AT_EUID), getauxval(AT_EGID));
	printf("secure=%lu\n", getauxval(AT_SECURE));
	printf("clktck=%lu\n", getauxval(AT_CLKTCK));
	check(getauxval(AT_HWCAP) != 0, "AT_HWCAP");

	/* argv sits just above argc, which is where the initial stack pointer pointed */
	check(((uintptr_t)argv - 8) % 16 == 0, "initial stack pointer not 16-byte aligned");
	check(local_addr % 16 == 0, "aligned local in main not 16-byte aligned");
	if (((uintptr_t)argv - 8) % 16 == 0 && local_addr % 16 == 0)
		puts("aligned");
	puts(failed ? "failed" : "ok");
	return failed;
}
