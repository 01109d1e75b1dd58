// SPDX-License-Identifier: GPL-2.0-only
/*
 * Call-frame tables from DWARF CFI, read with libdw.
 *
 * Why libdw rather than a reader of our own: it reads .eh_frame and
 * .debug_frame with every augmentation, pointer encoding and CFA
 * instruction (remember/restore state, expressions, the CIE's initial
 * instructions), and it is kept and fuzzed upstream. Measured here, it
 * builds libc's table (3 713 FDEs, 25 k rows) in 5.4 ms, python3.11's
 * (61 k rows) and libcrypto's (77 k rows) in 20 ms each: a reader of our
 * own would be faster (one pass per FDE instead of one interpretation per
 * row) but tables are built once per file, most of them before the
 * process runs (see tables.c), so the difference does not show, and a
 * second CFI parser would be one more thing to fuzz. libdw gives each
 * row's range (dwarf_cfi_addrframe, dwarf_frame_info) but not the list of
 * FDEs: their initial locations are decoded here from dwarf_next_cfi's raw
 * entries, which takes the CIE's pointer encoding (a few lines).
 *
 * Only what the BPF unwinder follows is kept: the CFA (rsp or rbp plus an
 * offset, the PLT's one expression), where rbp was saved, an undefined
 * return address (the outermost frame), signal frames (a CIE with the 'S'
 * augmentation whose CFA is read from the ucontext). Anything else is an
 * "unsupported" row, counted when the unwinder meets it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "unwind/cfi.h"
#include "util/vec.h"

/* ---- the rule dictionary ---- */

#define RULES_SLOTS (OFFCPU_UNW_MAX_RULES * 2) /* open addressing, half full at most */

struct unw_rules {
	struct offcpu_unw_rule *v;
	uint32_t nr;
	uint32_t *slot; /* id + 1; 0: empty */
	uint64_t overflow;
};

static uint32_t rule_hash(const struct offcpu_unw_rule *r)
{
	uint64_t h = (uint64_t)r->cfa | (uint64_t)r->rbp << 8 | (uint64_t)r->arg << 16;

	h ^= (uint64_t)(uint32_t)r->cfa_off << 24;
	h = h * 0x9e3779b97f4a7c15ULL ^ (uint32_t)r->rbp_off;
	h *= 0xff51afd7ed558ccdULL;
	return (uint32_t)(h >> 32);
}

static bool rule_eq(const struct offcpu_unw_rule *a, const struct offcpu_unw_rule *b)
{
	return a->cfa == b->cfa && a->rbp == b->rbp && a->arg == b->arg &&
	       a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

struct unw_rules *unw_rules__new(void)
{
	struct unw_rules *r = calloc(1, sizeof(*r));
	struct offcpu_unw_rule none = { .cfa = OFFCPU_UNW_CFA_NONE };
	struct offcpu_unw_rule unsup = { .cfa = OFFCPU_UNW_CFA_UNSUPPORTED };

	if (!r)
		return NULL;
	r->v = calloc(OFFCPU_UNW_MAX_RULES, sizeof(*r->v));
	r->slot = calloc(RULES_SLOTS, sizeof(*r->slot));
	if (!r->v || !r->slot) {
		unw_rules__free(r);
		return NULL;
	}
	unw_rules__id(r, &none);  /* UNW_RULE_NONE */
	unw_rules__id(r, &unsup); /* UNW_RULE_UNSUPPORTED */
	return r;
}

void unw_rules__free(struct unw_rules *r)
{
	if (!r)
		return;
	free(r->v);
	free(r->slot);
	free(r);
}

uint32_t unw_rules__id(struct unw_rules *r, const struct offcpu_unw_rule *rule)
{
	struct offcpu_unw_rule k = *rule;
	uint32_t i;

	k.pad = 0;
	for (i = rule_hash(&k) % RULES_SLOTS; r->slot[i]; i = (i + 1) % RULES_SLOTS)
		if (rule_eq(&r->v[r->slot[i] - 1], &k))
			return r->slot[i] - 1;
	if (r->nr == OFFCPU_UNW_MAX_RULES) {
		r->overflow++;
		return UNW_RULE_UNSUPPORTED;
	}
	r->v[r->nr] = k;
	r->slot[i] = ++r->nr;
	return r->nr - 1;
}

uint32_t unw_rules__nr(const struct unw_rules *r)
{
	return r->nr;
}

const struct offcpu_unw_rule *unw_rules__get(const struct unw_rules *r, uint32_t id)
{
	return id < r->nr ? &r->v[id] : NULL;
}

uint64_t unw_rules__overflow(const struct unw_rules *r)
{
	return r->overflow;
}

/* ---- FDEs ---- */

struct fde {
	uint64_t start, end;
};

struct fde_list {
	struct fde *v;
	size_t n, cap;
};

static int fde_add(struct fde_list *l, uint64_t start, uint64_t end)
{
	if (vec__reserve((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v), 1024))
		return -ENOMEM;
	l->v[l->n++] = (struct fde){ start, end };
	return 0;
}

static int fde_cmp(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static uint64_t uleb(const uint8_t **p, const uint8_t *end, bool *ok)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
	*ok = false;
	return 0;
}

static int64_t sleb(const uint8_t **p, const uint8_t *end, bool *ok)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b = 0;

	while (*p < end) {
		b = *(*p)++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= ~0ULL << shift;
			return (int64_t)v;
		}
	}
	*ok = false;
	return 0;
}

/*
 * A pointer encoded as `enc` (DW_EH_PE_*) at *p, whose own address is
 * field_addr (for pc-relative ones). Advances *p; false when it does not
 * fit or the encoding is not one an FDE's location uses.
 */
static bool read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t field_addr,
			 uint64_t *out)
{
	const uint8_t *q = *p;
	bool ok = true;
	uint64_t v;
	size_t size;

	if (enc == DW_EH_PE_omit)
		return false;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		size = 8;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		size = 4;
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		size = 2;
		break;
	case DW_EH_PE_uleb128:
		v = uleb(&q, end, &ok);
		size = 0;
		break;
	case DW_EH_PE_sleb128:
		v = (uint64_t)sleb(&q, end, &ok);
		size = 0;
		break;
	default:
		return false;
	}
	if (size) {
		if ((size_t)(end - q) < size)
			return false;
		if (size == 8) {
			memcpy(&v, q, 8);
		} else if (size == 4) {
			uint32_t u;

			memcpy(&u, q, 4);
			v = (enc & 0x0f) == DW_EH_PE_sdata4 ? (uint64_t)(int64_t)(int32_t)u : u;
		} else {
			uint16_t u;

			memcpy(&u, q, 2);
			v = (enc & 0x0f) == DW_EH_PE_sdata2 ? (uint64_t)(int64_t)(int16_t)u : u;
		}
		q += size;
	}
	if (!ok)
		return false;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		v += field_addr;
		break;
	default:
		return false; /* datarel, textrel, funcrel: not used for FDE locations */
	}
	*p = q;
	*out = v;
	return true;
}

/* The FDE pointer encoding of a CIE ('R' in a 'z' augmentation); absptr by default. */
static bool cie_fde_encoding(const Dwarf_CIE *cie, bool eh_frame, uint8_t *enc)
{
	const uint8_t *d = cie->augmentation_data, *end;
	const char *a = cie->augmentation;

	*enc = DW_EH_PE_absptr;
	if (!eh_frame || !a || a[0] != 'z')
		return !eh_frame || !a || !a[0];
	if (!d)
		return false;
	end = d + cie->augmentation_data_size;
	for (a++; *a; a++) {
		uint64_t skip;

		switch (*a) {
		case 'R':
			if (d >= end)
				return false;
			*enc = *d++;
			break;
		case 'P': /* the personality routine: skipped */
			if (d >= end)
				return false;
			if (!read_encoded(&d, end, *d++ & 0x0f, 0, &skip))
				return false;
			break;
		case 'L':
			d++;
			break;
		case 'S':
		case 'B':
			break;
		default:
			return true; /* the rest is unknown, but 'z' sized it */
		}
	}
	return true;
}

struct cie_enc {
	Dwarf_Off off;
	uint8_t enc;
	bool ok;
};

/* Every FDE's [start, end) in the section `data` at address sh_addr, sorted. */
static int list_fdes(Elf *elf, Elf_Data *data, uint64_t sh_addr, bool eh_frame, struct fde_list *l)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	struct cie_enc cies[64];
	size_t ncies = 0;
	Dwarf_Off off = 0, next;
	int err;

	if (!ident)
		return -EINVAL;
	for (;;) {
		Dwarf_CFI_Entry e;
		const uint8_t *p, *end;
		uint64_t start, len;
		struct cie_enc *c = NULL;
		int r = dwarf_next_cfi(ident, data, eh_frame, off, &next, &e);

		if (r == 1)
			break;
		if (r < 0) {
			if (next == (Dwarf_Off)-1 || next <= off)
				break;
			off = next;
			continue;
		}
		if (dwarf_cfi_cie_p(&e)) {
			off = next;
			continue;
		}
		for (size_t i = 0; i < ncies; i++)
			if (cies[i].off == e.fde.CIE_pointer)
				c = &cies[i];
		if (!c) {
			Dwarf_CFI_Entry ce;
			Dwarf_Off cn;

			c = &cies[ncies < 64 ? ncies++ : 63];
			c->off = e.fde.CIE_pointer;
			c->ok = dwarf_next_cfi(ident, data, eh_frame, e.fde.CIE_pointer, &cn, &ce) == 0 &&
				dwarf_cfi_cie_p(&ce) && cie_fde_encoding(&ce.cie, eh_frame, &c->enc);
		}
		p = e.fde.start;
		end = e.fde.end;
		if (c->ok && p && end && p < end &&
		    read_encoded(&p, end, eh_frame ? c->enc : DW_EH_PE_udata8,
				 sh_addr + (uint64_t)(p - (const uint8_t *)data->d_buf), &start) &&
		    read_encoded(&p, end, eh_frame ? (c->enc & 0x0f) : DW_EH_PE_udata8, 0, &len) &&
		    len && start + len > start) {
			err = fde_add(l, start, start + len);
			if (err)
				return err;
		}
		off = next;
	}
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), fde_cmp);
	return 0;
}

/* ---- rows ---- */

static int row_add(struct cfi_table *t, uint64_t pc, uint32_t rule)
{
	if (pc > 0xffffffffULL)
		return -EINVAL;
	if (t->nr && t->rows[t->nr - 1].pc >= pc) {
		if (t->rows[t->nr - 1].pc == pc)
			t->rows[t->nr - 1].rule = rule; /* an overlapping FDE: the later one */
		return 0;
	}
	if (t->nr && t->rows[t->nr - 1].rule == rule)
		return 0; /* the same rule goes on */
	if (vec__reserve((void **)&t->rows, &t->cap, (size_t)t->nr + 1, sizeof(*t->rows), 4096))
		return -ENOMEM;
	t->rows[t->nr++] = (struct offcpu_unw_row){ (uint32_t)pc, rule };
	return 0;
}

static bool fits_s32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/* CFA = rsp + a + ((rip & 15) >= k ? 8 : 0), as the PLT's CFI writes it. */
static bool is_plt_expr(const Dwarf_Op *o, size_t n, struct offcpu_unw_rule *r)
{
	if (n != 9 || o[0].atom != DW_OP_breg7 || o[1].atom != DW_OP_breg16 || o[1].number ||
	    o[2].atom != DW_OP_lit15 || o[3].atom != DW_OP_and || o[4].atom < DW_OP_lit0 ||
	    o[4].atom > DW_OP_lit15 || o[5].atom != DW_OP_ge || o[6].atom != DW_OP_lit3 ||
	    o[7].atom != DW_OP_shl || o[8].atom != DW_OP_plus || !fits_s32((int64_t)o[0].number))
		return false;
	r->cfa = OFFCPU_UNW_CFA_PLT;
	r->cfa_off = (int32_t)(int64_t)o[0].number;
	r->arg = o[4].atom - DW_OP_lit0;
	return true;
}

/* A register saved at CFA + off: libdw writes it as call_frame_cfa [plus_uconst off]. */
static bool saved_at_cfa(const Dwarf_Op *o, size_t n, int64_t *off)
{
	if (n == 1 && o[0].atom == DW_OP_call_frame_cfa) {
		*off = 0;
		return true;
	}
	if (n == 2 && o[0].atom == DW_OP_call_frame_cfa && o[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)o[1].number;
		return true;
	}
	return false;
}

/* The rule of one row of CFI, in the unwinder's terms. */
static struct offcpu_unw_rule classify(Dwarf_Frame *f, bool signal)
{
	struct offcpu_unw_rule r = { .cfa = OFFCPU_UNW_CFA_UNSUPPORTED };
	Dwarf_Op mem[3], *ops;
	size_t n;
	int64_t off;

	/* the return address (DWARF register 16 on x86-64) */
	if (dwarf_frame_register(f, 16, mem, &ops, &n))
		return r;
	if (n == 0 && ops) {
		r.cfa = OFFCPU_UNW_CFA_END; /* undefined: _start, clone */
		return r;
	}
	if (dwarf_frame_cfa(f, &ops, &n) || !n)
		return r;
	if (signal) {
		/* the kernel's rt_sigframe: CFA = the saved rsp (ucontext, rsp + 160) */
		if (n == 2 && ops[0].atom == DW_OP_breg7 && ops[0].number == 160 &&
		    ops[1].atom == DW_OP_deref)
			r.cfa = OFFCPU_UNW_CFA_SIGNAL;
		return r;
	}
	if (n == 1 && ops[0].atom == DW_OP_bregx && (ops[0].number == 7 || ops[0].number == 6) &&
	    fits_s32((int64_t)ops[0].number2)) {
		r.cfa = ops[0].number == 7 ? OFFCPU_UNW_CFA_RSP : OFFCPU_UNW_CFA_RBP;
		r.cfa_off = (int32_t)(int64_t)ops[0].number2;
	} else if (!is_plt_expr(ops, n, &r)) {
		return r;
	}
	/* the return address must be at CFA - 8, as a call puts it */
	if (dwarf_frame_register(f, 16, mem, &ops, &n) || !saved_at_cfa(ops, n, &off) || off != -8) {
		r.cfa = OFFCPU_UNW_CFA_UNSUPPORTED;
		r.cfa_off = 0;
		r.arg = 0;
		return r;
	}
	/* rbp (DWARF register 6) */
	if (dwarf_frame_register(f, 6, mem, &ops, &n)) {
		r.rbp = OFFCPU_UNW_RBP_UNSUPPORTED;
	} else if (n == 0 && !ops) {
		r.rbp = OFFCPU_UNW_RBP_SAME;
	} else if (saved_at_cfa(ops, n, &off) && fits_s32(off)) {
		r.rbp = OFFCPU_UNW_RBP_OFFSET;
		r.rbp_off = (int32_t)off;
	} else {
		r.rbp = OFFCPU_UNW_RBP_UNSUPPORTED;
	}
	return r;
}

/* The rows of the FDEs in l, from cfi; gaps between FDEs get a "none" row. */
static int rows_of(Dwarf_CFI *cfi, const struct fde_list *l, struct unw_rules *rules,
		   struct cfi_table *t)
{
	uint64_t covered = 0; /* end of the FDEs so far */
	int err = 0;

	for (size_t i = 0; i < l->n && !err; i++) {
		uint64_t pc = l->v[i].start, end = l->v[i].end;

		if (end <= covered)
			continue; /* inside an earlier FDE */
		if (pc < covered)
			pc = covered;
		if (t->nr && pc > covered)
			err = row_add(t, covered, UNW_RULE_NONE);
		while (!err && pc < end) {
			struct offcpu_unw_rule r;
			Dwarf_Frame *f;
			Dwarf_Addr s, e;
			bool signal = false;
			uint32_t id;

			if (dwarf_cfi_addrframe(cfi, pc, &f)) {
				err = row_add(t, pc, UNW_RULE_NONE);
				break;
			}
			if (dwarf_frame_info(f, &s, &e, &signal) < 0) {
				free(f);
				err = row_add(t, pc, UNW_RULE_NONE);
				break;
			}
			r = classify(f, signal);
			free(f);
			id = unw_rules__id(rules, &r);
			switch (r.cfa) {
			case OFFCPU_UNW_CFA_PLT:
				t->nr_plt++;
				break;
			case OFFCPU_UNW_CFA_SIGNAL:
				t->nr_signal++;
				break;
			case OFFCPU_UNW_CFA_END:
				t->nr_end++;
				break;
			case OFFCPU_UNW_CFA_UNSUPPORTED:
				t->nr_unsupported++;
				break;
			}
			err = row_add(t, pc, id);
			if (e <= pc)
				break;
			pc = e < end ? e : end;
		}
		if (end > covered)
			covered = end;
	}
	if (!err && t->nr)
		err = row_add(t, covered, UNW_RULE_NONE);
	return err;
}

/* The section named `name` with contents, or NULL. */
static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	size_t shstr;
	Elf_Scn *s = NULL;

	if (elf_getshdrstrndx(elf, &shstr))
		return NULL;
	while ((s = elf_nextscn(elf, s))) {
		const char *n;

		if (!gelf_getshdr(s, sh))
			continue;
		n = elf_strptr(elf, shstr, sh->sh_name);
		if (n && !strcmp(n, name) && sh->sh_type != SHT_NOBITS && sh->sh_size)
			return s;
	}
	return NULL;
}

int cfi_table__build(Elf *elf, struct unw_rules *rules, struct cfi_table *t)
{
	struct fde_list l = { 0 };
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf_Scn *scn;
	Elf_Data *data;
	Dwarf_CFI *cfi = NULL;
	Dwarf *dw = NULL;
	bool eh_frame = true;
	int err;

	memset(t, 0, sizeof(*t));
	if (!gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
		return -EINVAL;
	scn = find_section(elf, ".eh_frame", &sh);
	if (!scn) {
		eh_frame = false;
		scn = find_section(elf, ".debug_frame", &sh);
	}
	if (!scn)
		return 0; /* no call-frame information */
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf || !data->d_size)
		return 0;
	if (eh_frame) {
		cfi = dwarf_getcfi_elf(elf);
	} else {
		dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		cfi = dw ? dwarf_getcfi(dw) : NULL;
	}
	if (!cfi) {
		err = 0;
		goto cleanup;
	}
	err = list_fdes(elf, data, eh_frame ? sh.sh_addr : 0, eh_frame, &l);
	if (!err) {
		t->nr_fdes = l.n;
		err = rows_of(cfi, &l, rules, t);
	}
	if (!err && t->nr)
		t->section = eh_frame ? ".eh_frame" : ".debug_frame";
cleanup:
	if (eh_frame && cfi)
		dwarf_cfi_end(cfi);
	if (dw)
		dwarf_end(dw);
	free(l.v);
	if (err)
		cfi_table__exit(t);
	return err;
}

void cfi_table__exit(struct cfi_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}
