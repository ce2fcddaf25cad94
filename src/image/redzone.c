/* Which syscall sites may become `call *%rax`: the call pushes a return address just below the
 * stack pointer, so the enclosing function must provably keep nothing there (no red zone). */
#include <capstone/capstone.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ember/abi.h"
#include "image/img.h"

#define FN_MAX (8 << 10) /* bytes of one function's analysis at most */

struct fn_facts {
	int decoded;	    /* every instruction of the function decoded */
	int reached;	    /* the sweep met the site itself (no desynchronisation) */
	int below_rsp;	    /* an operand reaches below rsp or a copy of it */
	int rbp_other;	    /* rbp was set to something else than rsp */
	uint64_t rbp_below; /* the deepest rbp-relative offset below rbp */
	uint64_t frame;	    /* what rsp moved down (sub, push) after rbp = rsp, before the site */
	uint64_t pad_at;    /* the run of int3 that ends the range (padding), and its length */
	uint64_t pad_len;
	int exit_thread; /* the site's call is exit (rax = 60 just before): its stack may be gone */
};

static int arith(unsigned id)
{
	static const unsigned ops[] = {X86_INS_SUB, X86_INS_ADD, X86_INS_DEC,  X86_INS_NEG,
				       X86_INS_AND, X86_INS_OR,	 X86_INS_XOR,  X86_INS_SHL,
				       X86_INS_SHR, X86_INS_SAR, X86_INS_IMUL, X86_INS_ADC,
				       X86_INS_SBB, X86_INS_NOT};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (id == ops[i])
			return 1;
	return 0;
}

/* the 64-bit register a 32-bit one is the low half of, or X86_REG_INVALID */
static x86_reg full_reg(x86_reg r)
{
	static const x86_reg pairs[][2] = {
	    {X86_REG_EAX, X86_REG_RAX},	 {X86_REG_EBX, X86_REG_RBX},  {X86_REG_ECX, X86_REG_RCX},
	    {X86_REG_EDX, X86_REG_RDX},	 {X86_REG_ESI, X86_REG_RSI},  {X86_REG_EDI, X86_REG_RDI},
	    {X86_REG_EBP, X86_REG_RBP},	 {X86_REG_R8D, X86_REG_R8},   {X86_REG_R9D, X86_REG_R9},
	    {X86_REG_R10D, X86_REG_R10}, {X86_REG_R11D, X86_REG_R11}, {X86_REG_R12D, X86_REG_R12},
	    {X86_REG_R13D, X86_REG_R13}, {X86_REG_R14D, X86_REG_R14}, {X86_REG_R15D, X86_REG_R15},
	};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (pairs[i][0] == r)
			return pairs[i][1];
	return X86_REG_INVALID;
}

static int is_copy_source(const uint8_t *copy, const cs_x86_op *op)
{
	return op->type == X86_OP_MEM && op->mem.base < X86_REG_ENDING && copy[op->mem.base] &&
	       op->mem.index == X86_REG_INVALID && op->mem.disp >= 0;
}

/* the facts of [addr, end) about `site`, plus whether the instruction before it sets rax to a
 * number the page-0 sled does not reach */
static void analyse(csh h, cs_insn *in, const uint8_t *code, size_t size, uint64_t addr,
		    uint64_t site, struct fn_facts *f, int *far_rax)
{
	memset(f, 0, sizeof(*f));
	*far_rax = 0;
	int last_sets_far = 0, last_sets_exit = 0, in_pad = 0;
	uint8_t copy[X86_REG_ENDING] = {0}; /* registers that hold rsp's value, or above it */
	copy[X86_REG_RSP] = 1;
	f->decoded = 1;
	while (size > 0) {
		if (!cs_disasm_iter(h, &code, &size, &addr, in)) {
			f->decoded = 0;
			return;
		}
		/* int3 after the function's last instruction, up to the next symbol: its
		 * padding, which nothing runs or jumps into */
		if (in->id == X86_INS_INT3 && !in_pad)
			f->pad_at = in->address;
		in_pad = in->id == X86_INS_INT3;
		f->pad_len = in_pad ? addr - f->pad_at : 0;
		int before = in->address < site;
		if (in->address == site) {
			f->reached = 1;
			*far_rax = last_sets_far;
			f->exit_thread = last_sets_exit;
		}
		const cs_x86 *x = &in->detail->x86;
		const cs_x86_op *op0 = x->op_count > 0 ? &x->operands[0] : NULL;
		const cs_x86_op *op1 = x->op_count > 1 ? &x->operands[1] : NULL;
		last_sets_far = last_sets_exit = 0;
		for (int i = 0; i < x->op_count; i++) {
			const cs_x86_op *op = &x->operands[i];
			if (op->type != X86_OP_MEM)
				continue;
			if (op->mem.base < X86_REG_ENDING && copy[op->mem.base] && op->mem.disp < 0)
				f->below_rsp = 1;
			if (op->mem.base == X86_REG_RBP && op->mem.disp < 0 &&
			    (uint64_t)-op->mem.disp > f->rbp_below)
				f->rbp_below = (uint64_t)-op->mem.disp;
		}
		int writes_reg = op0 && op0->type == X86_OP_REG && op0->reg < X86_REG_ENDING &&
				 in->id != X86_INS_PUSH && in->id != X86_INS_CMP &&
				 in->id != X86_INS_TEST;
		if (in->id == X86_INS_MOV && op0 && op1 && op0->type == X86_OP_REG &&
		    op1->type == X86_OP_REG && op1->reg == X86_REG_RSP && op0->reg == X86_REG_RBP) {
			f->frame = 0; /* a new frame: only what follows moves rsp below rbp */
		} else if (in->id == X86_INS_MOV && op0 && op1 && op0->type == X86_OP_REG &&
			   op1->type == X86_OP_REG && op1->reg < X86_REG_ENDING && copy[op1->reg] &&
			   op0->reg < X86_REG_ENDING) {
			copy[op0->reg] = 1; /* a copy of rsp, followed from now on */
		} else if (in->id == X86_INS_LEA && op0 && op1 && op0->type == X86_OP_REG &&
			   op0->reg < X86_REG_ENDING && is_copy_source(copy, op1)) {
			copy[op0->reg] = 1;
		} else if (in->id == X86_INS_XCHG && op0 && op1 &&
			   ((op0->type == X86_OP_REG && op0->reg < X86_REG_ENDING &&
			     copy[op0->reg]) ||
			    (op1->type == X86_OP_REG && op1->reg < X86_REG_ENDING &&
			     copy[op1->reg]))) {
			f->below_rsp = 1;
		} else if (writes_reg && full_reg(op0->reg) != X86_REG_INVALID &&
			   copy[full_reg(op0->reg) % X86_REG_ENDING]) {
			/* part of a copy of rsp rewritten: it is no longer a pointer we can follow
			 */
			if (arith(in->id))
				f->below_rsp = 1;
			copy[full_reg(op0->reg) % X86_REG_ENDING] = 0;
		} else if (writes_reg && op0->reg != X86_REG_RSP) {
			size_t r = (size_t)op0->reg % X86_REG_ENDING;
			int up = (in->id == X86_INS_ADD && op1 && op1->type == X86_OP_IMM &&
				  op1->imm >= 0) ||
				 in->id == X86_INS_INC;
			/* moved up, a copy stays at or above rsp; other arithmetic on it could take
			 * it below; a plain overwrite (mov, pop, ...) just ends the copy */
			if (copy[r] && !up && arith(in->id))
				f->below_rsp = 1;
			if (!(copy[r] && up))
				copy[r] = 0;
			if (r == X86_REG_RBP && in->id != X86_INS_POP && in->id != X86_INS_LEAVE)
				f->rbp_other = 1;
		}
		if (before && in->id == X86_INS_PUSH)
			f->frame += 8;
		if (before && in->id == X86_INS_SUB && op0 && op1 && op0->type == X86_OP_REG &&
		    op0->reg == X86_REG_RSP && op1->type == X86_OP_IMM && op1->imm > 0)
			f->frame += (uint64_t)op1->imm;
		if (in->id == X86_INS_MOV && op0 && op1 && op0->type == X86_OP_REG &&
		    (op0->reg == X86_REG_EAX || op0->reg == X86_REG_RAX) &&
		    op1->type == X86_OP_IMM && (uint64_t)op1->imm >= EMBER_TRAMP_SLED)
			last_sets_far = 1;
		if (in->id == X86_INS_MOV && op0 && op1 && op0->type == X86_OP_REG &&
		    (op0->reg == X86_REG_EAX || op0->reg == X86_REG_RAX) &&
		    op1->type == X86_OP_IMM && op1->imm == 60 /* SYS_exit */)
			last_sets_exit = 1;
	}
}

static size_t enclosing(const uint64_t *starts, size_t n, uint64_t site)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (starts[mid] <= site)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo; /* starts[lo - 1] <= site < starts[lo] */
}

static const struct img_seg *code_seg(const struct img_elf *elf, uint64_t addr)
{
	for (int i = 0; i < elf->nsegs; i++) {
		const struct img_seg *s = &elf->segs[i];
		if ((s->prot & PROT_EXEC) && addr >= s->vaddr && addr - s->vaddr < s->filesz)
			return s;
	}
	return NULL;
}

int img_mark_callable(const uint8_t *buf, const struct img_elf *elf, const uint64_t *starts,
		      size_t nstarts, struct img_sites *sites)
{
	sites->callable = calloc(sites->n ? sites->n : 1, 1);
	if (!sites->callable)
		return -1;
	csh h;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return -1;
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	cs_insn *in = cs_malloc(h);
	if (!in) {
		cs_close(&h);
		return -1;
	}
	uint64_t pad_fn = 0, pad_used = 0; /* the function whose padding sites use, how much */
	for (size_t i = 0; i < sites->n; i++) {
		uint64_t site = sites->addr[i];
		size_t k = enclosing(starts, nstarts, site);
		if (k == 0) /* no function around it: no proof, keep the trapping form */
			continue;
		uint64_t fn = starts[k - 1];
		const struct img_seg *s = code_seg(elf, fn);
		if (!s || !code_seg(elf, site))
			continue;
		uint64_t end = k < nstarts ? starts[k] : s->vaddr + s->filesz;
		if (end > s->vaddr + s->filesz)
			end = s->vaddr + s->filesz;
		/* a range this long is many functions between two symbols (a stripped file's
		 * exported ones): its analysis costs much and proves little */
		if (end - fn > FN_MAX)
			continue;
		struct fn_facts f;
		int far_rax;
		analyse(h, in, buf + s->offset + (fn - s->vaddr), end - fn, fn, site, &f, &far_rax);
		int rbp_ok = f.rbp_below == 0 || (!f.rbp_other && f.rbp_below <= f.frame);
		sites->callable[i] = f.decoded && f.reached && !f.below_rsp && rbp_ok && !far_rax;
		/* Padding is only what runs from the function's last int3 to the next function's
		 * start: at a segment's end (no function after it) the bytes may be anything. A
		 * thread's exit keeps the trapping form: the call's push would land on a stack
		 * that may already be another's (Go's exitThread frees its g0 stack just before,
		 * by a store another thread waits for), and the exit is an exit anyway. */
		if (!sites->callable[i] || !f.pad_len || k >= nstarts || starts[k] != end ||
		    f.exit_thread)
			continue;
		/* the next EMBER_RT_PAD_LEN bytes of the padding, if a `jmp rel8` from the site's
		 * end reaches them and one from their end reaches back (sites go in order) */
		if (fn != pad_fn)
			pad_fn = fn, pad_used = 0;
		int64_t d = (int64_t)(f.pad_at + pad_used) - (int64_t)(site + 2);
		if (pad_used + EMBER_RT_PAD_LEN <= f.pad_len && d >= -128 && d <= 121) {
			sites->callable[i] = (uint8_t)(d + IMG_PAD_BIAS);
			pad_used += EMBER_RT_PAD_LEN;
		}
	}
	cs_free(in, 1);
	cs_close(&h);
	return 0;
}
