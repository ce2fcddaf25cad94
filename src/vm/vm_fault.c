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

/* the system-call instructions a fault at them names, by capstone's id */
static const struct {
	unsigned id;
	enum vm_fault fault;
} by_insn[] = {
    {X86_INS_SYSCALL, VM_FAULT_SYSCALL},
    {X86_INS_SYSENTER, VM_FAULT_SYSENTER},
    {X86_INS_INT, VM_FAULT_INT80}, /* int $0x80 only: its operand is checked */
};

/* the two bytes each is (a stray call of code mapped at run time is one of these: no decoder) */
static const struct {
	uint8_t b[2];
	enum vm_fault fault;
} plain[] = {
    {{0x0f, 0x05}, VM_FAULT_SYSCALL},
    {{0x0f, 0x34}, VM_FAULT_SYSENTER},
    {{0xcd, 0x80}, VM_FAULT_INT80},
};

/* the fault the system-call instruction at rip names (`syscall`, `sysenter`, `int $0x80`, with
 * whatever prefixes), or VM_FAULT_UNKNOWN when the instruction is none of them; *len: its
 * length, prefixes included */
static enum vm_fault syscall_at(struct vm *vm, uint64_t rip, unsigned *len)
{
	const uint8_t *code = vm_guest(vm, rip, 2);
	*len = 2;
	for (size_t i = 0; code && i < sizeof(plain) / sizeof(plain[0]); i++)
		if (code[0] == plain[i].b[0] && code[1] == plain[i].b[1])
			return plain[i].fault;
	code = vm_guest(vm, rip, 16);
	csh cs;
	if (!code || cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return VM_FAULT_UNKNOWN;
	cs_insn *insn = NULL;
	enum vm_fault f = VM_FAULT_UNKNOWN;
	if (cs_disasm(cs, code, 16, rip, 1, &insn) == 1) {
		const uint8_t *b = insn->bytes;
		uint16_t n = insn->size;
		for (size_t i = 0; i < sizeof(by_insn) / sizeof(by_insn[0]); i++)
			if (by_insn[i].id == insn->id &&
			    (insn->id != X86_INS_INT ||
			     (n >= 2 && b[n - 2] == 0xcd && b[n - 1] == 0x80)))
				f = by_insn[i].fault;
		*len = n;
		cs_free(insn, 1);
	}
	cs_close(&cs);
	return f;
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
	/* a stray `syscall` raises #UD where EFER.SCE=0 is honoured, `sysenter` #GP or #UD, and
	 * `int $0x80` #GP (its vector lies beyond the IDT's limit); under PVM `syscall` jumps to
	 * LSTAR at CPL3 (rcx past the instruction) and faults there */
	enum vm_fault f;
	unsigned len;
	if ((vector == 6 || vector == 11 || vector == 13) &&
	    (f = syscall_at(vm, r->rip, &len)) != VM_FAULT_UNKNOWN) {
		e->fault = f;
		if (f ==
		    VM_FAULT_SYSCALL) /* its 0f 05, past any prefix: where a stray call resumes */
			e->rip = r->rip + len - 2;
	} else if (vector == 14 && r->rip == X86_SYSCALL_TRAP && r->rcx >= 2 &&
		   syscall_at(vm, r->rcx - 2, &len) == VM_FAULT_SYSCALL) {
		e->fault = VM_FAULT_SYSCALL;
		e->rip = r->rcx - 2;
		e->addr = 0;
	}
}
