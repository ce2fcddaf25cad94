/* exitfloor: no libc; _start spins on the EMBER_HC_NOP hypercall (the exit-floor benchmark). */
#include "ember/abi.h"

#define STR_(x) #x
#define STR(x)	STR_(x)

__asm__(".text\n"
	".globl _start\n"
	"_start:\n"
	"1:	out %al, $" STR(EMBER_HC_NOP) "\n"
					      "	jmp 1b\n");
