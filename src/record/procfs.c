// SPDX-License-Identifier: GPL-2.0-only
/*
 * Parsers of the /proc text record reads: maps lines, status fields and
 * kallsyms lines. They take text and touch nothing else, so that they can
 * be fuzzed (tests/fuzz/fuzz_procfs.c) apart from the files they read.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "record/record.h"
#include "util/hex.h"

/* Hex number at *p (1-16 digits); advances *p past it. false when none or too long. */
static bool take_hex(const char **p, uint64_t *out)
{
	const char *q = hex_parse(*p, NULL, out);

	if (!q)
		return false;
	*p = q;
	return true;
}

static bool take_dec(const char **p, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0;

	while (**p >= '0' && **p <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(**p - '0');
		(*p)++;
		n++;
	}
	*out = v;
	return n > 0;
}

static bool take_char(const char **p, char c)
{
	if (**p != c)
		return false;
	(*p)++;
	return true;
}

static void skip_blanks(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

/*
 * "START-END PERMS OFFSET MAJ:MIN INODE   PATH": the kernel's format
 * (show_map_vma), strictly. The path is the rest of the line, spaces
 * included, up to a newline; empty for anonymous memory. Returns 1 for an
 * executable mapping, 0 for any other line (not executable, malformed, or
 * END below START).
 */
int proc_maps__parse_line(char *line, struct proc_map *m)
{
	const char *p = line;
	uint64_t maj, min;
	char perms[4];
	char *file;

	memset(m, 0, sizeof(*m));
	if (!take_hex(&p, &m->start) || !take_char(&p, '-') || !take_hex(&p, &m->end) ||
	    m->end < m->start || !take_char(&p, ' '))
		return 0;
	for (int i = 0; i < 4; i++) {
		if (!*p || *p == ' ')
			return 0;
		perms[i] = *p++;
	}
	if (!take_char(&p, ' ') || !take_hex(&p, &m->pgoff) || !take_char(&p, ' ') ||
	    !take_hex(&p, &maj) || !take_char(&p, ':') || !take_hex(&p, &min) ||
	    maj > UINT32_MAX || min > UINT32_MAX || !take_char(&p, ' ') || !take_dec(&p, &m->ino))
		return 0;
	if (*p && *p != ' ' && *p != '\n')
		return 0;
	if (perms[2] != 'x')
		return 0;
	skip_blanks(&p);
	file = line + (p - line);
	file[strcspn(file, "\n")] = '\0';
	m->file = *file ? file : "//anon";
	m->maj = (uint32_t)maj;
	m->min = (uint32_t)min;
	m->prot = PROT_EXEC | (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0);
	m->flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
	return 1;
}

/*
 * The number after "KEY:" at the start of a line of a /proc status text
 * (len bytes, need not be NUL-terminated), in base 10 or 16. -ENOENT when
 * no line has the key, -EINVAL when its value is not a number.
 */
int proc_status__field(const char *text, size_t len, const char *key, int base, uint64_t *out)
{
	size_t klen = strlen(key);
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if ((size_t)(eol - p) > klen && !memcmp(p, key, klen) && p[klen] == ':') {
			char num[24];
			const char *q = p + klen + 1, *np = num;
			size_t n = 0;
			bool ok;

			while (q < eol && (*q == ' ' || *q == '\t'))
				q++;
			while (q < eol && n < sizeof(num) - 1 && *q != ' ' && *q != '\t')
				num[n++] = *q++;
			num[n] = '\0';
			ok = base == 16 ? take_hex(&np, out) : take_dec(&np, out);
			return ok && !*np ? 0 : -EINVAL;
		}
		p = eol + 1;
	}
	return -ENOENT;
}

/* Interrupt entry points (x86-64 and arm64): a waker below one is an interrupt. */
static bool irq_entry_name(const char *name)
{
	static const char *const prefixes[] = {
		"asm_sysvec_",	 "asm_common_interrupt", "asm_spurious_interrupt",
		"handle_softirqs", "__do_softirq",	 "el0t_64_irq",
		"el1h_64_irq",	 "el0t_64_fiq",	 "el1h_64_fiq",
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/*
 * One line of /proc/kallsyms, "ADDR TYPE NAME [MODULE]", into the facts:
 * _text, the ranges of __schedule and try_to_wake_up, and with irq_entries
 * the interrupt entry points (the core kernel's lines are sorted, so a
 * function ends at the next address above it). Returns true when every
 * fact is known and the rest of the file can be skipped.
 */
bool kernel_facts__line(struct kernel_facts *k, const char *line, bool irq_entries)
{
	const char *p = line;
	char name[256];
	uint64_t a;
	size_t nlen;

	if (!take_hex(&p, &a) || !take_char(&p, ' ') || !*p || p[1] != ' ')
		return false;
	p += 2;
	nlen = strcspn(p, " \t\n");
	if (strchr(p, '['))
		return true; /* modules: unsorted, and none of ours */
	if (nlen >= sizeof(name))
		return false;
	memcpy(name, p, nlen);
	name[nlen] = '\0';
	/* a function ends where the next one starts */
	if (k->sched_lo && !k->sched_hi && a > k->sched_lo)
		k->sched_hi = a;
	if (k->ttwu_lo && !k->ttwu_hi && a > k->ttwu_lo)
		k->ttwu_hi = a;
	if (k->sys_lo && !k->sys_hi && a > k->sys_lo)
		k->sys_hi = a;
	if (k->backlog_lo && !k->backlog_hi && a > k->backlog_lo)
		k->backlog_hi = a;
	if (k->wnt_lo && !k->wnt_hi && a > k->wnt_lo)
		k->wnt_hi = a;
	if (k->nr_irq && !k->irq[k->nr_irq - 1].hi && a > k->irq[k->nr_irq - 1].lo)
		k->irq[k->nr_irq - 1].hi = a;
	if (!k->text && !strcmp(name, "_text"))
		k->text = a;
	else if (!k->sched_lo && !strcmp(name, "__schedule"))
		k->sched_lo = a;
	else if (!k->ttwu_lo && !strcmp(name, "try_to_wake_up"))
		k->ttwu_lo = a;
	else if (!k->sys_lo && !strcmp(name, "do_syscall_64"))
		k->sys_lo = a;
	else if (irq_entries && !k->backlog_lo && !strcmp(name, "process_backlog"))
		k->backlog_lo = a;
	else if (irq_entries && !k->wnt_lo && !strcmp(name, "wake_up_new_task"))
		k->wnt_lo = a;
	else if (irq_entries && a && irq_entry_name(name) &&
		 k->nr_irq < sizeof(k->irq) / sizeof(k->irq[0]) &&
		 (!k->nr_irq || k->irq[k->nr_irq - 1].hi))
		k->irq[k->nr_irq++] = (struct kernel_range){ a, 0 };
	return k->text && k->sched_hi && k->ttwu_hi && k->sys_hi && !irq_entries;
}

/*
 * The state letter of a /proc/PID/stat text ("PID (COMM) S ..."), found
 * after the last ')' as the command may hold any character. 0 when the
 * text has none.
 */
char proc_stat__state(const char *text)
{
	const char *p = strrchr(text, ')');

	if (!p || p[1] != ' ' || !p[2])
		return 0;
	return p[2];
}

/* A small /proc file into buf (NUL-terminated, truncated to size - 1): its length or -errno. */
ssize_t proc_read(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (len + 1 < size) {
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}
