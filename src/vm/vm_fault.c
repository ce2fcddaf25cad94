/* Names a guest exception after the signal a process would have died of: by vector, then insn. */
#include <capstone/capstone.h>

#include "vm/vm_impl.h"
#include "vm/vm_x86.h"

static const struct {
	unsigned vector;
	enum vm_fault fault;
} by_vector[] = {
    {0, VM_FAULT_DIVIDE}, {1, VM_FAULT_BREAK},	{3, VM_FAULT_BREAK},  {6, VM_FAULT_INVALID},
    {10, VM_FAULT_GP},	  {11, VM_FAULT_GP},	{12, VM_FAULT_GP},    {13, VM_FAULT_GP},
    {14, VM_FAULT_PAGE},  {16, VM_FAULT_FLOAT}, {17, VM_FAULT_ALIGN}, {19, VM_FAULT_FLOAT},
};

/* the instruction at rip is `syscall` or `sysenter` (with whatever prefixes) */
static int is_syscall(struct vm *vm, uint64_t rip)
{
	const uint8_t *code = vm_guest(vm, rip, 16);
	csh cs;
	if (!code || cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return 0;
	cs_insn *insn = NULL;
	int yes = 0;
	if (cs_disasm(cs, code, 16, rip, 1, &insn) == 1) {
		yes = insn->id == X86_INS_SYSCALL || insn->id == X86_INS_SYSENTER;
		cs_free(insn, 1);
	}
	cs_close(&cs);
	return yes;
}

void vm_fault_name(struct vm *vm, unsigned vector, uint64_t cr2, const struct vm_regs *r,
		   struct vm_exit *e)
{
	e->kind = VM_EXIT_FAULT;
	e->vector = (int)vector;
	e->rip = r->rip;
	e->fault = VM_FAULT_UNKNOWN;
	for (size_t i = 0; i < sizeof(by_vector) / sizeof(by_vector[0]); i++)
		if (by_vector[i].vector == vector)
			e->fault = by_vector[i].fault;
	if (vector == 3)
		e->rip--; /* a trap: the frame points past the int3 */
	if (vector == 14)
		e->addr = cr2;
	/* a stray `syscall` raises #UD where EFER.SCE=0 is honoured, `sysenter` #GP or #UD; under
	 * PVM `syscall` jumps to LSTAR at CPL3 (rcx past the instruction) and faults there */
	if ((vector == 6 || vector == 13) && is_syscall(vm, r->rip)) {
		e->fault = VM_FAULT_SYSCALL;
	} else if (vector == 14 && r->rip == X86_SYSCALL_TRAP && r->rcx >= 2 &&
		   is_syscall(vm, r->rcx - 2)) {
		e->fault = VM_FAULT_SYSCALL;
		e->rip = r->rcx - 2;
		e->addr = 0;
	}
}
