// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tables built before a command runs: its executable (found on PATH, a
 * script's interpreter through its #! line), the dynamic loader it names
 * and the libraries it needs, found as the loader would in the usual
 * places (RPATH/RUNPATH, LD_LIBRARY_PATH, /etc/ld.so.conf.d, the default
 * directories). A process reaches its first blocking call a few
 * milliseconds after exec; building python3's table alone takes 20 ms,
 * so without this its first stacks would come without tables. A library
 * not found here is built when its mapping is seen, as any other.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>

#include "unwind/tables.h"

#define MAX_LIBS 128

struct pathset {
	char *v[MAX_LIBS];
	size_t n;
};

static bool pathset_has(const struct pathset *s, const char *p)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i], p))
			return true;
	return false;
}

static void pathset_add(struct pathset *s, const char *p)
{
	if (s->n == MAX_LIBS || pathset_has(s, p))
		return;
	s->v[s->n] = strdup(p);
	if (s->v[s->n])
		s->n++;
}

static void pathset_free(struct pathset *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	s->n = 0;
}

/* Library search directories besides the ELF's own: LD_LIBRARY_PATH, ld.so.conf.d, defaults. */
static void system_dirs(struct pathset *d)
{
	static const char *const defaults[] = {
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
		"/lib", "/usr/lib", "/usr/local/lib",
	};
	const char *llp = getenv("LD_LIBRARY_PATH");
	struct dirent *e;
	DIR *dir;

	if (llp) {
		char *copy = strdup(llp), *save = NULL;

		for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok;
		     tok = strtok_r(NULL, ":", &save))
			pathset_add(d, tok);
		free(copy);
	}
	dir = opendir("/etc/ld.so.conf.d");
	while (dir && (e = readdir(dir))) {
		char p[PATH_MAX], line[PATH_MAX];
		FILE *f;

		if (!strstr(e->d_name, ".conf"))
			continue;
		snprintf(p, sizeof(p), "/etc/ld.so.conf.d/%s", e->d_name);
		f = fopen(p, "re");
		while (f && fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n#")] = 0;
			if (line[0] == '/')
				pathset_add(d, line);
		}
		if (f)
			fclose(f);
	}
	if (dir)
		closedir(dir);
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		pathset_add(d, defaults[i]);
}

/* A 64-bit x86 ELF file? */
static bool elf_ok(const char *path)
{
	unsigned char id[20];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	bool ok;

	if (fd < 0)
		return false;
	ok = read(fd, id, sizeof(id)) == (ssize_t)sizeof(id) && !memcmp(id, ELFMAG, SELFMAG) &&
	     id[EI_CLASS] == ELFCLASS64 && id[18] == EM_X86_64;
	close(fd);
	return ok;
}

/* Expand $ORIGIN in a RUNPATH entry; origin is the ELF's directory. */
static void add_runpath(struct pathset *dirs, const char *rp, const char *origin)
{
	char *copy = strdup(rp), *save = NULL;

	for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok;
	     tok = strtok_r(NULL, ":", &save)) {
		char p[PATH_MAX];

		if (!strncmp(tok, "$ORIGIN", 7))
			snprintf(p, sizeof(p), "%s%s", origin, tok + 7);
		else if (!strncmp(tok, "${ORIGIN}", 9))
			snprintf(p, sizeof(p), "%s%s", origin, tok + 9);
		else
			snprintf(p, sizeof(p), "%s", tok);
		pathset_add(dirs, p);
	}
	free(copy);
}

/*
 * The interpreter and needed libraries of the ELF at path, resolved to
 * files, added to todo.
 */
static void deps_of(const char *path, const struct pathset *sys, struct pathset *todo)
{
	struct pathset needed = { 0 }, dirs = { 0 };
	char origin[PATH_MAX];
	size_t nph;
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	snprintf(origin, sizeof(origin), "%s", path);
	*(strrchr(origin, '/') ? strrchr(origin, '/') : origin) = 0;
	if (elf && !elf_getphdrnum(elf, &nph)) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			char interp[PATH_MAX];

			if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_INTERP || !ph.p_filesz ||
			    ph.p_filesz >= sizeof(interp))
				continue;
			if (pread(fd, interp, ph.p_filesz, ph.p_offset) == (ssize_t)ph.p_filesz) {
				interp[ph.p_filesz] = 0;
				pathset_add(todo, interp);
			}
		}
	}
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / (sh.sh_entsize ? sh.sh_entsize : 16); i++) {
			GElf_Dyn dyn;
			const char *s;

			if (!gelf_getdyn(d, i, &dyn))
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH)
				continue;
			s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED)
				pathset_add(&needed, s);
			else
				add_runpath(&dirs, s, origin);
		}
	}
	for (size_t i = 0; i < sys->n; i++)
		pathset_add(&dirs, sys->v[i]);
	for (size_t i = 0; i < needed.n; i++) {
		char p[PATH_MAX];

		if (strchr(needed.v[i], '/')) {
			pathset_add(todo, needed.v[i]);
			continue;
		}
		for (size_t j = 0; j < dirs.n; j++) {
			snprintf(p, sizeof(p), "%s/%s", dirs.v[j], needed.v[i]);
			if (elf_ok(p)) {
				pathset_add(todo, p);
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	pathset_free(&needed);
	pathset_free(&dirs);
}

/* argv0 as execvp finds it: a path with a '/', else the first match on PATH. */
static bool find_command(const char *argv0, char *out, size_t size)
{
	const char *path = getenv("PATH");
	char *copy, *save = NULL;
	bool found = false;

	if (strchr(argv0, '/')) {
		snprintf(out, size, "%s", argv0);
		return access(out, X_OK) == 0;
	}
	copy = strdup(path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok && !found;
	     tok = strtok_r(NULL, ":", &save)) {
		snprintf(out, size, "%s/%s", *tok ? tok : ".", argv0);
		found = access(out, X_OK) == 0;
	}
	free(copy);
	return found;
}

int unw_tables__preload_command(struct unw_tables *t, const char *argv0)
{
	struct pathset todo = { 0 }, sys = { 0 };
	char path[PATH_MAX], real[PATH_MAX], line[PATH_MAX];
	FILE *f;

	if (!find_command(argv0, path, sizeof(path)) || !realpath(path, real))
		return -ENOENT;
	/* a script: its interpreter */
	f = fopen(real, "re");
	if (f && fgets(line, sizeof(line), f) && line[0] == '#' && line[1] == '!') {
		char *p = line + 2;

		p += strspn(p, " \t");
		p[strcspn(p, " \t\n")] = 0;
		if (realpath(p, path))
			snprintf(real, sizeof(real), "%s", path);
	}
	if (f)
		fclose(f);
	system_dirs(&sys);
	pathset_add(&todo, real);
	for (size_t i = 0; i < todo.n; i++) {
		if (!elf_ok(todo.v[i]))
			continue;
		unw_tables__preload(t, todo.v[i]);
		deps_of(todo.v[i], &sys, &todo);
	}
	pathset_free(&todo);
	pathset_free(&sys);
	return 0;
}
