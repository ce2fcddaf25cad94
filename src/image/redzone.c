/* Which syscall sites may become `call *%rax`: the call pushes a return address just below the
 * stack pointer, so the enclosing function must provably keep nothing there (no red zone). */
#include <capstone/capstone.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ember/abi.h"
#include "image/img.h"

struct fn_facts {
	int decoded;        /* every instruction of the function decoded */
	int below_rsp;      /* an operand reaches below rsp, or rsp is copied elsewhere */
	uint64_t rbp_below; /* the deepest rbp-relative offset below rbp */
	uint64_t frame;     /* what the function moves rsp down by (sub, push) */
};

static int reg_is(x86_reg r, x86_reg a, x86_reg b)
{
	return r == a || r == b;
}

/* the facts of [addr, end), plus whether the instruction before `site` sets rax to a number the
 * page-0 sled does not reach */
static void analyse(csh h, cs_insn *in, const uint8_t *code, size_t size, uint64_t addr,
		    uint64_t site, struct fn_facts *f, int *far_rax)
{
	memset(f, 0, sizeof(*f));
	*far_rax = 0;
	int last_sets_far = 0;
	uint8_t copy[X86_REG_ENDING] = {0}; /* registers that were given rsp's value */
	copy[X86_REG_RSP] = 1;
	f->decoded = 1;
	while (size > 0) {
		if (!cs_disasm_iter(h, &code, &size, &addr, in)) {
			f->decoded = 0;
			return;
		}
		if (in->address == site)
			*far_rax = last_sets_far;
		const cs_x86 *x = &in->detail->x86;
		last_sets_far = 0;
		for (int i = 0; i < x->op_count; i++) {
			const cs_x86_op *op = &x->operands[i];
			if (op->type == X86_OP_MEM && op->mem.base < X86_REG_ENDING &&
			    copy[op->mem.base] && op->mem.disp < 0)
				f->below_rsp = 1;
			if (op->type == X86_OP_MEM && op->mem.base == X86_REG_RBP && op->mem.disp < 0 &&
			    (uint64_t)-op->mem.disp > f->rbp_below)
				f->rbp_below = (uint64_t)-op->mem.disp;
		}
		if (in->id == X86_INS_PUSH)
			f->frame += 8;
		if (in->id == X86_INS_SUB && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
		    x->operands[0].reg == X86_REG_RSP && x->operands[1].type == X86_OP_IMM &&
		    x->operands[1].imm > 0)
			f->frame += (uint64_t)x->operands[1].imm;
		/* a copy of rsp (other than the frame pointer) is followed: a negative offset from
		 * it, or arithmetic on it, could reach below the stack pointer */
		if (in->id == X86_INS_MOV && x->op_count == 2 && x->operands[1].type == X86_OP_REG &&
		    x->operands[1].reg == X86_REG_RSP && x->operands[0].type == X86_OP_REG &&
		    x->operands[0].reg != X86_REG_RBP && x->operands[0].reg < X86_REG_ENDING)
			copy[x->operands[0].reg] = 1;
		else if (in->id == X86_INS_MOV && x->op_count == 2 &&
			 x->operands[0].type == X86_OP_REG && x->operands[0].reg != X86_REG_RSP &&
			 x->operands[0].reg < X86_REG_ENDING)
			copy[x->operands[0].reg] = 0; /* overwritten with something else */
		else if (x->op_count >= 1 && x->operands[0].type == X86_OP_REG &&
			 x->operands[0].reg != X86_REG_RSP && x->operands[0].reg < X86_REG_ENDING &&
			 copy[x->operands[0].reg] && in->id != X86_INS_MOV && in->id != X86_INS_PUSH &&
			 in->id != X86_INS_CMP && in->id != X86_INS_TEST)
			f->below_rsp = 1;
		if (in->id == X86_INS_MOV && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
		    reg_is(x->operands[0].reg, X86_REG_EAX, X86_REG_RAX) &&
		    x->operands[1].type == X86_OP_IMM &&
		    (uint64_t)x->operands[1].imm >= EMBER_TRAMP_SLED)
			last_sets_far = 1;
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
		struct fn_facts f;
		int far_rax;
		analyse(h, in, buf + s->offset + (fn - s->vaddr), end - fn, fn, site, &f, &far_rax);
		sites->callable[i] = f.decoded && !f.below_rsp && f.rbp_below <= f.frame && !far_rax;
	}
	cs_free(in, 1);
	cs_close(&h);
	return 0;
}
