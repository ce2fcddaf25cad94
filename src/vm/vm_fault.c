/* Names the exception behind a triple fault by decoding the instruction it stopped at. */
#include <capstone/capstone.h>

#include "vm/vm_impl.h"

static const struct {
	unsigned id;
	enum vm_fault fault;
} by_insn[] = {
    {X86_INS_DIV, VM_FAULT_DIVIDE},
    {X86_INS_IDIV, VM_FAULT_DIVIDE},
    {X86_INS_UD2, VM_FAULT_INVALID},
    {X86_INS_UD0, VM_FAULT_INVALID},
    {X86_INS_SYSCALL, VM_FAULT_SYSCALL},
    {X86_INS_SYSENTER, VM_FAULT_SYSCALL},
    {X86_INS_INT3, VM_FAULT_BREAK},
    /* instructions a CPL3 program may not execute raise #GP */
    {X86_INS_HLT, VM_FAULT_GP},
    {X86_INS_CLI, VM_FAULT_GP},
    {X86_INS_STI, VM_FAULT_GP},
    {X86_INS_LGDT, VM_FAULT_GP},
    {X86_INS_LIDT, VM_FAULT_GP},
    {X86_INS_LLDT, VM_FAULT_GP},
    {X86_INS_LTR, VM_FAULT_GP},
    {X86_INS_WRMSR, VM_FAULT_GP},
    {X86_INS_RDMSR, VM_FAULT_GP},
    {X86_INS_INVLPG, VM_FAULT_GP},
    {X86_INS_IN, VM_FAULT_GP},
    {X86_INS_OUT, VM_FAULT_GP},
    {X86_INS_WBINVD, VM_FAULT_GP},
    {X86_INS_INVD, VM_FAULT_GP},
    {X86_INS_CLTS, VM_FAULT_GP},
    {X86_INS_LMSW, VM_FAULT_GP},
    {X86_INS_SWAPGS, VM_FAULT_GP},
    {X86_INS_SYSRET, VM_FAULT_GP},
    {X86_INS_SYSEXIT, VM_FAULT_GP},
    {X86_INS_IRETQ, VM_FAULT_GP},
    {X86_INS_INT, VM_FAULT_GP},
};

enum vm_fault vm_fault_classify(struct vm *vm, uint64_t rip, int page_fault)
{
	if (page_fault)
		return VM_FAULT_PAGE;
	const uint8_t *code = vm_guest(vm, rip, 16);
	if (!code)
		return VM_FAULT_PAGE; /* RIP itself is outside guest memory */
	csh cs;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return VM_FAULT_UNKNOWN;
	cs_insn *insn = NULL;
	enum vm_fault f = VM_FAULT_INVALID; /* undecodable bytes are an invalid opcode */
	if (cs_disasm(cs, code, 16, rip, 1, &insn) == 1) {
		f = VM_FAULT_UNKNOWN;
		for (size_t i = 0; i < sizeof(by_insn) / sizeof(by_insn[0]); i++)
			if (insn->id == by_insn[i].id)
				f = by_insn[i].fault;
		cs_free(insn, 1);
	}
	cs_close(&cs);
	return f;
}
