// SPDX-License-Identifier: GPL-2.0-only
/*
 * Symbolizer tests on fixture binaries built here with cc/g++ into a temp
 * directory. Expected values come from the fixtures themselves: symbol
 * addresses and segments read with libelf, line numbers found in the
 * generated source, build ids from readelf.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/build_id.h"
#include "symbols/sym_internal.h"
#include "symbols/symbolizer.h"
#include "symbols/vdso.h"

static char tmpdir[] = "/tmp/offcpu-symtest-XXXXXX";

/* The C fixture. Line numbers the tests need are found by searching for markers. */
static const char fixture_c[] =
	"#include <stdlib.h>\n"
	"volatile int sink;\n"
	"__attribute__((noinline)) int fixture_alpha(int x)\n"
	"{\n"
	"\tsink = x * 3;\n"
	"\treturn sink + 1;\n"
	"}\n"
	"__attribute__((noinline)) static int fixture_beta(int x)\n"
	"{\n"
	"\tint i, r = 0;\n"
	"\tfor (i = 0; i < x; i++)\n"
	"\t\tr += sink * i;\n"
	"\treturn r;\n"
	"}\n"
	"static inline __attribute__((always_inline)) int fixture_inl(int x)\n"
	"{\n"
	"\tsink = x * 7; /* INL_BODY */\n"
	"\tsink = sink * x + 5;\n"
	"\treturn sink;\n"
	"}\n"
	"__attribute__((noinline)) int fixture_gamma(int x)\n"
	"{\n"
	"\tint r = fixture_inl(x); /* INL_CALL */\n"
	"\treturn r + sink;\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\t(void)argv;\n"
	"\treturn fixture_alpha(argc) + fixture_beta(argc) + fixture_gamma(argc);\n"
	"}\n";

static const char fixture_lib_c[] =
	"volatile int lib_sink;\n"
	"__attribute__((noinline)) int fixture_lib_exported(int x)\n"
	"{\n"
	"\tlib_sink = x + 11;\n"
	"\treturn lib_sink * 2;\n"
	"}\n";

static const char fixture_cc[] =
	"volatile int cc_sink;\n"
	"namespace ns {\n"
	"struct Widget {\n"
	"\tint frob(int x);\n"
	"};\n"
	"__attribute__((noinline)) int Widget::frob(int x)\n"
	"{\n"
	"\tcc_sink = x * 5;\n"
	"\treturn cc_sink;\n"
	"}\n"
	"}\n"
	"int main(int argc, char **)\n"
	"{\n"
	"\tns::Widget w;\n"
	"\treturn w.frob(argc);\n"
	"}\n";

/*
 * Alias groups (several names, one start, one size) where perf's choice
 * (choose_best_symbol) has one answer whatever the symbol table order:
 * al_g_*: STB_GLOBAL __al_g beats a local and a weak with fewer
 * underscores and longer names; __al_nw_*: a local beats a weak one;
 * al_us: fewer leading underscores beat a longer name; al_len: the longer
 * of two globals; al_tab_impl: hidden, so a local of .symtab only, beats
 * its weak export al_tab, which is all .dynsym has.
 */
static const char fixture_alias_c[] =
	"volatile int al_sink;\n"
	"static __attribute__((noinline, used)) int al_g_impl(int x) { al_sink = x + 1; return al_sink; }\n"
	"extern __typeof(al_g_impl) al_g_weak_and_longest __attribute__((weak, alias(\"al_g_impl\")));\n"
	"extern __typeof(al_g_impl) __al_g __attribute__((alias(\"al_g_impl\")));\n"
	"static __attribute__((noinline, used)) int __al_nw_impl(int x) { al_sink = x + 2; return al_sink; }\n"
	"extern __typeof(__al_nw_impl) al_nw_weak_and_longer __attribute__((weak, alias(\"__al_nw_impl\")));\n"
	"static __attribute__((noinline, used)) int al_us(int x) { al_sink = x + 3; return al_sink; }\n"
	"static __typeof(al_us) __al_us_longer __attribute__((alias(\"al_us\"), used));\n"
	"__attribute__((noinline)) int al_len(int x) { al_sink = x + 4; return al_sink; }\n"
	"extern __typeof(al_len) al_len_longer __attribute__((alias(\"al_len\")));\n"
	"__attribute__((noinline, visibility(\"hidden\"))) int al_tab_impl(int x) { al_sink = x + 5; return al_sink; }\n"
	"extern __typeof(al_tab_impl) al_tab __attribute__((weak, alias(\"al_tab_impl\")));\n";

/* Two IFUNCs of the library itself called through its PLT, between libc calls. */
static const char fixture_ifunc_c[] =
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"static int add1_impl(int x) { return x + 1; }\n"
	"static void *add1_resolve(void) { return (void *)add1_impl; }\n"
	"int add1(int x) __attribute__((ifunc(\"add1_resolve\"), visibility(\"hidden\")));\n"
	"static int add2_impl(int x) { return x + 2; }\n"
	"static void *add2_resolve(void) { return (void *)add2_impl; }\n"
	"int add2(int x) __attribute__((ifunc(\"add2_resolve\"), visibility(\"hidden\")));\n"
	"int use(int x, char *p)\n"
	"{\n"
	"\tx = add1(x);\n"
	"\tmemset(p, 0, (size_t)x);\n"
	"\tx = add2(x);\n"
	"\tp = malloc((size_t)x);\n"
	"\tfree(p);\n"
	"\treturn (int)strlen(p) + x;\n"
	"}\n";

/* Calls into libc through the PLT. */
static const char fixture_plt_c[] =
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tprintf(\"%zu\\n\", strlen(argv[0]));\n"
	"\tif (argc > 5)\n"
	"\t\tabort();\n"
	"\treturn 0;\n"
	"}\n";

static const char *tpath(const char *name)
{
	static char buf[8][512];
	static int next;
	char *b = buf[next++ % 8];

	snprintf(b, sizeof(buf[0]), "%s/%s", tmpdir, name);
	return b;
}

static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

/* Line (1-based) of the first line of src containing marker. */
static unsigned int line_of(const char *src, const char *marker)
{
	const char *p = strstr(src, marker), *q;
	unsigned int line = 1;

	assert_non_null(p);
	for (q = src; q < p; q++)
		line += *q == '\n';
	return line;
}

/* Where a symbol of the fixture sits: read with libelf, independently of the symbolizer. */
struct fsym {
	uint64_t vaddr, size;
	uint64_t seg_vaddr, seg_off; /* the PT_LOAD holding it */
};

static int fixture_sym(const char *path, const char *name, struct fsym *out)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t phnum, i;
	int fd, found = 0;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;

			gelf_getsym(d, (int)i, &s);
			if (s.st_value && strcmp(elf_strptr(elf, sh.sh_link, s.st_name), name) == 0) {
				out->vaddr = s.st_value;
				out->size = s.st_size;
				found = 1;
			}
		}
	}
	if (found && elf_getphdrnum(elf, &phnum) == 0) {
		found = 0;
		for (i = 0; i < phnum; i++) {
			GElf_Phdr ph;

			gelf_getphdr(elf, (int)i, &ph);
			if (ph.p_type == PT_LOAD && out->vaddr >= ph.p_vaddr &&
			    out->vaddr < ph.p_vaddr + ph.p_filesz) {
				out->seg_vaddr = ph.p_vaddr;
				out->seg_off = ph.p_offset;
				found = 1;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return found;
}

/* A process mapping of the symbol's segment the way the kernel makes one:
 * page-aligned start at load bias + segment address, pgoff the page-aligned offset. */
struct fmap {
	uint64_t start, pgoff;
};

static uint64_t fixture_ip(const struct fsym *s, uint64_t bias, uint64_t delta, struct fmap *m)
{
	m->start = bias + (s->seg_vaddr & ~0xfffULL);
	m->pgoff = s->seg_off & ~0xfffULL;
	return bias + s->vaddr + delta;
}

static int read_build_id_readelf(const char *path, uint8_t *out)
{
	char cmd[1024], line[512];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char *b = strstr(line, "Build ID: ");
		unsigned int byte;

		if (!b)
			continue;
		for (b += 10; n < 64 && sscanf(b, "%2x", &byte) == 1; b += 2)
			out[n++] = (uint8_t)byte;
	}
	pclose(p);
	return n;
}

/* Line number binutils' addr2line gives for vaddr in path (reference for srcline). */
static unsigned int addr2line_line(const char *path, uint64_t vaddr)
{
	char cmd[1024], out[1024], *colon;
	unsigned int line = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "addr2line -e '%s' %lx", path, (unsigned long)vaddr);
	p = popen(cmd, "r");
	assert_non_null(p);
	if (fgets(out, sizeof(out), p) && (colon = strrchr(out, ':')))
		line = (unsigned int)strtoul(colon + 1, NULL, 10);
	pclose(p);
	return line;
}

static char *hex(const uint8_t *id, int n)
{
	static char buf[2 * SYM_BUILD_ID_MAX + 1];

	return build_id__hex(id, (size_t)n, buf);
}

static int group_setup(void **state)
{
	uint8_t id[64];
	int n;
	char h[129];

	(void)state;
	if (!mkdtemp(tmpdir))
		return -1;
	write_file(tpath("fixture.c"), fixture_c, sizeof(fixture_c) - 1);
	write_file(tpath("lib.c"), fixture_lib_c, sizeof(fixture_lib_c) - 1);
	write_file(tpath("fixture.cc"), fixture_cc, sizeof(fixture_cc) - 1);
	write_file(tpath("plt.c"), fixture_plt_c, sizeof(fixture_plt_c) - 1);
	write_file(tpath("ifunc.c"), fixture_ifunc_c, sizeof(fixture_ifunc_c) - 1);
	if (sh("cd %s && cc -O1 -fPIC -shared -o libifunc.so ifunc.c", tmpdir))
		return -1;
	if (sh("cd %s && cc -O1 -fPIE -pie -o plt-pie plt.c && cc -O1 -fno-pie -no-pie -o plt-nopie plt.c && "
	       "cc -O1 -fPIC -shared -o libplt.so plt.c && cp plt-pie plt-stripped && strip plt-stripped",
	       tmpdir))
		return -1;
	/* A C++ call through the PLT: a mangled name, demangled before "@plt". */
	if (sh("cd %s && printf 'namespace ns { int ext(int x) { return x + 1; } }\\n' > ext.cc && "
	       "printf 'namespace ns { int ext(int); }\\nint main(int c, char **) { return ns::ext(c); }\\n' > cxxplt.cc && "
	       "g++ -O1 -fPIC -shared -o libcxxext.so ext.cc && g++ -O1 -o cxxplt cxxplt.cc -L. -lcxxext",
	       tmpdir))
		return -1;
	if (sh("cd %s && cc -O2 -g -fPIE -pie -Wl,--build-id -o pie fixture.c", tmpdir) ||
	    sh("cd %s && cc -O2 -g -fno-pie -no-pie -Wl,--build-id -o nopie fixture.c", tmpdir) ||
	    sh("cd %s && cc -O2 -g -fPIC -shared -Wl,--build-id -o libfix.so lib.c", tmpdir) ||
	    sh("cd %s && g++ -O1 -g -o cxx fixture.cc", tmpdir))
		return -1;
	/* Stripped copy whose debug file sits in debug/.build-id/xx/yyyy.debug. */
	if (sh("cd %s && cp pie stripped && objcopy --only-keep-debug stripped stripped.dbg && "
	       "strip --strip-all stripped", tmpdir))
		return -1;
	n = read_build_id_readelf(tpath("stripped"), id);
	if (n <= 0)
		return -1;
	build_id__hex(id, (size_t)n, h);
	if (sh("cd %s && mkdir -p debug/.build-id/%.2s emptydebug && mv stripped.dbg debug/.build-id/%.2s/%s.debug",
	       tmpdir, h, h, h + 2))
		return -1;
	/* Stripped copy found through .gnu_debuglink in .debug/ beside it, another build. */
	if (sh("cd %s && cc -O2 -g -fPIE -pie -Wl,--build-id -DLINKED -o linked fixture.c && "
	       "cp linked linked.full && mkdir -p .debug && objcopy --only-keep-debug linked .debug/linked.dbg && "
	       "strip --strip-all linked && objcopy --add-gnu-debuglink=.debug/linked.dbg linked",
	       tmpdir))
		return -1;
	/* A stripped library keeps its exported functions in .dynsym. */
	if (sh("cd %s && cp libfix.so libfix-stripped.so && strip --strip-all libfix-stripped.so", tmpdir))
		return -1;
	/* The alias library, whole and stripped; the debug file of the stripped one by build id. */
	write_file(tpath("alias.c"), fixture_alias_c, sizeof(fixture_alias_c) - 1);
	if (sh("cd %s && cc -O2 -g -fPIC -shared -Wl,--build-id -o libalias.so alias.c && "
	       "cp libalias.so libalias-stripped.so && objcopy --only-keep-debug libalias.so libalias.dbg && "
	       "strip --strip-all libalias-stripped.so", tmpdir))
		return -1;
	n = read_build_id_readelf(tpath("libalias.so"), id);
	if (n <= 0)
		return -1;
	build_id__hex(id, (size_t)n, h);
	if (sh("cd %s && mkdir -p aliasdebug/.build-id/%.2s && mv libalias.dbg aliasdebug/.build-id/%.2s/%s.debug",
	       tmpdir, h, h, h + 2))
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	sh("rm -rf '%s'", tmpdir);
	return 0;
}

static struct symbolizer *new_sym(bool srcline, bool inlines, bool demangle, const char *debug_dir)
{
	struct symbolizer_opts o = {
		.srcline = srcline,
		.inlines = inlines,
		.demangle = demangle,
		.kallsyms = tpath("kallsyms"),
		.debug_dir = debug_dir ? debug_dir : tpath("emptydebug"),
		.perfmap_dir = tmpdir,
		.buildid_dir = tpath("cache"),
	};
	struct symbolizer *s = symbolizer__new(&o);

	assert_non_null(s);
	return s;
}

/* Resolve sym+delta of file at load bias; expect that name and offset. */
static void expect_sym(struct symbolizer *s, struct sym_dso *d, const char *file, const char *symfile,
		       const char *name, uint64_t bias, uint64_t delta)
{
	struct sym_frame f[4];
	struct fsym fs;
	struct fmap m;
	uint64_t ip;
	int n;

	assert_true(fixture_sym(symfile ? symfile : file, name, &fs));
	assert_true(delta < fs.size);
	ip = fixture_ip(&fs, bias, delta, &m);
	n = symbolizer__resolve(s, d, m.start, m.pgoff, ip, f, 4);
	assert_int_equal(n, 1);
	assert_non_null(f[0].sym);
	assert_string_equal(f[0].sym, name);
	assert_int_equal(f[0].offset, delta);
	assert_false(f[0].inlined);
}

static void test_pie(void **state)
{
	struct symbolizer *s = new_sym(false, false, false, NULL);
	struct sym_dso *d = symbolizer__dso(s, tpath("pie"), NULL, 0);
	struct sym_frame f[2];
	struct fsym fs;
	struct fmap m;

	(void)state;
	assert_non_null(d);
	assert_null(sym_dso__warning(d));
	assert_string_equal(sym_dso__name(d), tpath("pie"));
	expect_sym(s, d, tpath("pie"), NULL, "fixture_alpha", 0x555555554000ULL, 0);
	expect_sym(s, d, tpath("pie"), NULL, "fixture_alpha", 0x555555554000ULL, 3);
	expect_sym(s, d, tpath("pie"), NULL, "fixture_beta", 0x7f0000000000ULL, 5);
	expect_sym(s, d, tpath("pie"), NULL, "main", 0x555555554000ULL, 1);
	/* Same file offset from another process (another bias): same answer, from the cache. */
	expect_sym(s, d, tpath("pie"), NULL, "fixture_beta", 0x555555554000ULL, 5);
	/* The same DSO is returned for the same path. */
	assert_ptr_equal(symbolizer__dso(s, tpath("pie"), NULL, 0), d);
	/* An ip below the mapping, and one in the ELF header, resolve to nothing. */
	assert_true(fixture_sym(tpath("pie"), "fixture_alpha", &fs));
	fixture_ip(&fs, 0x555555554000ULL, 0, &m);
	assert_int_equal(symbolizer__resolve(s, d, m.start, m.pgoff, m.start - 1, f, 2), 0);
	assert_int_equal(symbolizer__resolve(s, d, 0x555555554000ULL, 0, 0x555555554000ULL, f, 2), 0);
	symbolizer__free(s);
}

/*
 * Files queued for the preload thread answer as files loaded on demand:
 * taken once loaded, while loading (waited for) or before the thread got
 * to them (loaded by the caller); the same DSO for the same key; with
 * their warnings; a queued file never asked for is freed with the
 * symbolizer (ASan's leak check).
 */
static void test_preload(void **state)
{
	uint8_t id[64];
	int n = read_build_id_readelf(tpath("nopie"), id);

	(void)state;
	assert_true(n > 0);
	for (int round = 0; round < 3; round++) {
		struct symbolizer *s = new_sym(false, false, false, NULL);
		struct sym_dso *d, *bad;

		assert_int_equal(symbolizer__preload(s, tpath("pie"), NULL, 0), 0);
		assert_int_equal(symbolizer__preload(s, tpath("pie"), NULL, 0), 0); /* once */
		assert_int_equal(symbolizer__preload(s, tpath("pie"), id, (size_t)n), 0); /* another build */
		assert_int_equal(symbolizer__preload(s, tpath("libfix.so"), NULL, 0), 0);
		assert_int_equal(symbolizer__preload(s, tpath("nopie"), NULL, 0), 0); /* never asked */
		symbolizer__preload_start(s);
		/* no more once it runs */
		assert_int_equal(symbolizer__preload(s, tpath("linked"), NULL, 0), -EINVAL);
		if (round == 1)
			usleep(20000); /* the thread most likely done: taken loaded */
		d = symbolizer__dso(s, tpath("pie"), NULL, 0); /* round 0: most likely not begun */
		assert_non_null(d);
		assert_null(sym_dso__warning(d));
		expect_sym(s, d, tpath("pie"), NULL, "fixture_alpha", 0x555555554000ULL, 3);
		expect_sym(s, d, tpath("pie"), NULL, "main", 0x555555554000ULL, 1);
		assert_ptr_equal(symbolizer__dso(s, tpath("pie"), NULL, 0), d);
		bad = symbolizer__dso(s, tpath("pie"), id, (size_t)n);
		assert_ptr_not_equal(bad, d);
		assert_non_null(sym_dso__warning(bad));
		assert_non_null(strstr(sym_dso__warning(bad), "mismatch"));
		d = symbolizer__dso(s, tpath("libfix.so"), NULL, 0);
		expect_sym(s, d, tpath("libfix.so"), NULL, "fixture_lib_exported", 0x7f1234560000ULL, 4);
		/* a file not queued is loaded on demand as before */
		d = symbolizer__dso(s, tpath("linked"), NULL, 0);
		expect_sym(s, d, tpath("linked"), tpath("linked.full"), "fixture_beta", 0x555555554000ULL, 1);
		symbolizer__free(s); /* round 2: freed while the thread may still be loading */
	}
}

static void test_nopie(void **state)
{
	struct symbolizer *s = new_sym(false, false, false, NULL);
	struct sym_dso *d = symbolizer__dso(s, tpath("nopie"), NULL, 0);
	struct fsym fs;

	(void)state;
	assert_null(sym_dso__warning(d));
	assert_true(fixture_sym(tpath("nopie"), "fixture_alpha", &fs));
	assert_true(fs.seg_vaddr >= 0x400000); /* really linked at a fixed address */
	expect_sym(s, d, tpath("nopie"), NULL, "fixture_alpha", 0, 2);
	expect_sym(s, d, tpath("nopie"), NULL, "fixture_gamma", 0, 0);
	symbolizer__free(s);
}

static void test_shared_lib_dynsym(void **state)
{
	struct symbolizer *s = new_sym(false, false, false, NULL);
	struct sym_dso *d = symbolizer__dso(s, tpath("libfix.so"), NULL, 0);
	struct sym_dso *ds = symbolizer__dso(s, tpath("libfix-stripped.so"), NULL, 0);

	(void)state;
	expect_sym(s, d, tpath("libfix.so"), NULL, "fixture_lib_exported", 0x7f1234560000ULL, 4);
	/* No .symtab and no debug file: the exported function still resolves from .dynsym. */
	assert_null(sym_dso__warning(ds));
	expect_sym(s, ds, tpath("libfix-stripped.so"), tpath("libfix.so"), "fixture_lib_exported",
		   0x7f1234560000ULL, 4);
	symbolizer__free(s);
}

static void test_stripped_build_id_debug(void **state)
{
	struct symbolizer *s = new_sym(false, false, false, tpath("debug"));
	struct symbolizer *s2 = new_sym(false, false, false, NULL);
	struct sym_dso *d = symbolizer__dso(s, tpath("stripped"), NULL, 0);
	struct sym_dso *d2 = symbolizer__dso(s2, tpath("stripped"), NULL, 0);
	struct sym_frame f[2];
	struct fsym fs;
	struct fmap m;
	uint64_t ip;

	(void)state;
	/* Symbol positions come from the unstripped twin (same link). */
	assert_false(fixture_sym(tpath("stripped"), "fixture_beta", &fs));
	expect_sym(s, d, tpath("stripped"), tpath("pie"), "fixture_beta", 0x555555554000ULL, 6);
	expect_sym(s, d, tpath("stripped"), tpath("pie"), "fixture_alpha", 0x555555554000ULL, 0);
	/* Without the debug dir the static function is unknown. */
	assert_true(fixture_sym(tpath("pie"), "fixture_beta", &fs));
	ip = fixture_ip(&fs, 0x555555554000ULL, 6, &m);
	assert_int_equal(symbolizer__resolve(s2, d2, m.start, m.pgoff, ip, f, 2), 0);
	symbolizer__free(s2);
	symbolizer__free(s);
}

static void test_missing_file_by_build_id(void **state)
{
	struct symbolizer *s = new_sym(false, false, false, tpath("debug"));
	uint8_t id[64];
	int n = read_build_id_readelf(tpath("stripped"), id);
	struct sym_dso *d, *d2;

	(void)state;
	assert_true(n > 0);
	/* The recorded file is gone; its debug file (by build id) stands in. */
	d = symbolizer__dso(s, tpath("gone/stripped"), id, (size_t)n);
	assert_null(sym_dso__warning(d));
	expect_sym(s, d, tpath("gone/stripped"), tpath("pie"), "fixture_beta", 0x555555554000ULL, 2);
	/* Gone and no debug file either: a warning naming the build id. */
	id[0] ^= 0xff;
	d2 = symbolizer__dso(s, tpath("gone/other"), id, (size_t)n);
	assert_non_null(sym_dso__warning(d2));
	assert_non_null(strstr(sym_dso__warning(d2), hex(id, n)));
	symbolizer__free(s);
}

static void test_debuglink(void **state)
{
	struct symbolizer *s = new_sym(false, false, false, NULL);
	struct sym_dso *d = symbolizer__dso(s, tpath("linked"), NULL, 0);

	(void)state;
	assert_null(sym_dso__warning(d));
	expect_sym(s, d, tpath("linked"), tpath("linked.full"), "fixture_beta", 0x555555554000ULL, 1);
	symbolizer__free(s);
}

static void test_build_id_mismatch(void **state)
{
	struct symbolizer *s = new_sym(false, false, false, tpath("debug"));
	uint8_t id[64], padded[20] = { 0 };
	int n = read_build_id_readelf(tpath("pie"), id);
	struct sym_dso *good, *bad, *pad;
	struct sym_frame f[2];
	struct fsym fs;
	struct fmap m;
	uint64_t ip;

	(void)state;
	assert_int_equal(n, 20);
	assert_int_equal(sym_read_build_id(tpath("pie"), padded, sizeof(padded)), n);
	assert_memory_equal(padded, id, (size_t)n);

	good = symbolizer__dso(s, tpath("pie"), id, (size_t)n);
	assert_null(sym_dso__warning(good));
	expect_sym(s, good, tpath("pie"), NULL, "fixture_alpha", 0x555555554000ULL, 1);

	/* A build id from another build (the non-PIE one) for the same path. */
	n = read_build_id_readelf(tpath("nopie"), id);
	assert_int_equal(n, 20);
	bad = symbolizer__dso(s, tpath("pie"), id, (size_t)n);
	assert_ptr_not_equal(bad, good);
	assert_non_null(sym_dso__warning(bad));
	assert_non_null(strstr(sym_dso__warning(bad), "mismatch"));
	assert_non_null(strstr(sym_dso__warning(bad), hex(id, n)));
	assert_true(fixture_sym(tpath("pie"), "fixture_alpha", &fs));
	ip = fixture_ip(&fs, 0x555555554000ULL, 1, &m);
	assert_int_equal(symbolizer__resolve(s, bad, m.start, m.pgoff, ip, f, 2), 0);

	/* A shorter (16-byte) real id zero-padded to 20 by the recorder still matches. */
	n = read_build_id_readelf(tpath("pie"), id);
	memset(id + 16, 0, 4);
	pad = symbolizer__dso(s, tpath("pie"), id, 20);
	assert_non_null(sym_dso__warning(pad)); /* the file's id has non-zero bytes there */
	assert_int_equal(build_id__equal(id, 16, id, 20), 1);
	symbolizer__free(s);
}

static void test_read_build_id(void **state)
{
	uint8_t a[64], b[64];
	int n = read_build_id_readelf(tpath("libfix.so"), a);

	(void)state;
	assert_true(n > 0);
	assert_int_equal(sym_read_build_id(tpath("libfix.so"), b, sizeof(b)), n);
	assert_memory_equal(a, b, (size_t)n);
	assert_int_equal(sym_read_build_id(tpath("nonexistent"), b, sizeof(b)), -ENOENT);
	assert_int_equal(sym_read_build_id(tpath("fixture.c"), b, sizeof(b)), -ENOEXEC);
	/* Short buffers get a truncated id, never an overflow. */
	assert_int_equal(sym_read_build_id(tpath("libfix.so"), b, 4), 4);
	assert_memory_equal(a, b, 4);
}

static void test_srcline(void **state)
{
	struct symbolizer *s = new_sym(true, false, false, NULL);
	struct sym_dso *d = symbolizer__dso(s, tpath("pie"), NULL, 0);
	struct sym_frame f[4];
	struct fsym fs;
	struct fmap m;
	uint64_t ip;
	int n;

	(void)state;
	assert_true(fixture_sym(tpath("pie"), "fixture_alpha", &fs));
	ip = fixture_ip(&fs, 0x555555554000ULL, 0, &m);
	n = symbolizer__resolve(s, d, m.start, m.pgoff, ip, f, 4);
	assert_int_equal(n, 1);
	assert_string_equal(f[0].sym, "fixture_alpha");
	assert_non_null(f[0].srcfile);
	assert_non_null(strstr(f[0].srcfile, "fixture.c"));
	/* The entry address belongs to the first statement, as binutils' addr2line says too. */
	assert_int_equal(f[0].line, line_of(fixture_c, "sink = x * 3"));
	assert_int_equal(f[0].line, addr2line_line(tpath("pie"), fs.vaddr));
	symbolizer__free(s);
}

static void test_inlines(void **state)
{
	struct symbolizer *s = new_sym(true, true, false, NULL);
	struct sym_dso *d = symbolizer__dso(s, tpath("pie"), NULL, 0);
	unsigned int body = line_of(fixture_c, "INL_BODY"), call = line_of(fixture_c, "INL_CALL");
	struct sym_frame f[4];
	struct fsym fs;
	struct fmap m;
	uint64_t ip, k;
	int n, seen = 0;

	(void)state;
	assert_true(fixture_sym(tpath("pie"), "fixture_gamma", &fs));
	/* Somewhere in fixture_gamma lies the inlined body of fixture_inl. */
	for (k = 0; k < fs.size; k++) {
		ip = fixture_ip(&fs, 0x555555554000ULL, k, &m);
		n = symbolizer__resolve(s, d, m.start, m.pgoff, ip, f, 4);
		assert_true(n >= 1);
		assert_string_equal(f[n - 1].sym, "fixture_gamma");
		assert_int_equal(f[n - 1].offset, k);
		if (n != 2)
			continue;
		seen++;
		assert_string_equal(f[0].sym, "fixture_inl");
		assert_true(f[0].inlined);
		assert_false(f[1].inlined);
		assert_true(f[0].line >= body && f[0].line <= body + 2);
		assert_non_null(f[1].srcfile);
		assert_int_equal(f[1].line, call);
	}
	assert_true(seen > 0);
	/* With one slot only, the real function is the one kept. */
	for (k = 0; k < fs.size; k++) {
		ip = fixture_ip(&fs, 0x555555554000ULL, k, &m);
		assert_int_equal(symbolizer__resolve(s, d, m.start, m.pgoff, ip, f, 1), 1);
		assert_string_equal(f[0].sym, "fixture_gamma");
	}
	symbolizer__free(s);
}

static void test_cxx_demangle(void **state)
{
	struct symbolizer *s = new_sym(false, false, true, NULL);
	struct symbolizer *raw = new_sym(false, false, false, NULL);
	struct sym_dso *d = symbolizer__dso(s, tpath("cxx"), NULL, 0);
	struct sym_dso *dr = symbolizer__dso(raw, tpath("cxx"), NULL, 0);
	struct sym_frame f[2];
	struct fsym fs;
	struct fmap m;
	uint64_t ip;

	(void)state;
	assert_true(fixture_sym(tpath("cxx"), "_ZN2ns6Widget4frobEi", &fs));
	ip = fixture_ip(&fs, 0x555555554000ULL, 2, &m);
	assert_int_equal(symbolizer__resolve(s, d, m.start, m.pgoff, ip, f, 2), 1);
	assert_string_equal(f[0].sym, "ns::Widget::frob(int)");
	assert_int_equal(f[0].offset, 2);
	assert_int_equal(symbolizer__resolve(raw, dr, m.start, m.pgoff, ip, f, 2), 1);
	assert_string_equal(f[0].sym, "_ZN2ns6Widget4frobEi");
	symbolizer__free(raw);
	symbolizer__free(s);
}

static void expect_demangle(const char *in, const char *want)
{
	char *out;
	int err = sym_demangle(in, &out);

	assert_int_equal(err, want ? 0 : -ENOENT);

	if (!want) {
		assert_null(out);
		return;
	}
	assert_non_null(out);
	assert_string_equal(out, want);
	free(out);
}

static void test_demangle_rust_and_more(void **state)
{
	(void)state;
	/* Rust legacy: Itanium nesting, a 17h<16 hex> hash, $-escapes and "..". */
	expect_demangle("_ZN4core3ptr13drop_in_place17h0123456789abcdefE", "core::ptr::drop_in_place");
	expect_demangle("_ZN5alloc3vec16Vec$LT$T$C$A$GT$4push17h00112233aabbccddE",
			"alloc::vec::Vec<T,A>::push");
	expect_demangle("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17hfedcba9876543210E",
			"std::rt::lang_start::{{closure}}");
	expect_demangle("_ZN4test7a..b..c17h0123456789abcdefE", "test::a::b::c");
	/* C++ keeps a trailing 17h... segment when it is not a Rust hash. */
	expect_demangle("_ZN2ns6Widget4frobEi", "ns::Widget::frob(int)");
	expect_demangle("_Z3fooi", "foo(int)");
	/* Rust v0, plain C and garbage stay as they are. */
	expect_demangle("_RNvCs1234_7mycrate3foo", NULL);
	expect_demangle("main", NULL);
	expect_demangle("_Z", NULL);
	expect_demangle("_ZN3foo", NULL);
	expect_demangle("", NULL);
}

/* The name given to the start+1 of member's alias group (positions read from symfile). */
static void expect_alias(struct symbolizer *s, struct sym_dso *d, const char *symfile,
			 const char *member, const char *want)
{
	struct sym_frame f[2];
	struct fsym fs;
	struct fmap m;
	uint64_t ip;

	assert_true(fixture_sym(symfile, member, &fs));
	ip = fixture_ip(&fs, 0x7f5500000000ULL, 1, &m);
	assert_int_equal(symbolizer__resolve(s, d, m.start, m.pgoff, ip, f, 2), 1);
	assert_non_null(f[0].sym);
	assert_string_equal(f[0].sym, want);
	assert_int_equal(f[0].offset, 1);
}

static void test_elf_aliases(void **state)
{
	struct symbolizer *s = new_sym(false, false, false, NULL);
	struct symbolizer *sd = new_sym(false, false, false, tpath("aliasdebug"));
	struct sym_dso *d = symbolizer__dso(s, tpath("libalias.so"), NULL, 0);
	struct sym_dso *ds = symbolizer__dso(s, tpath("libalias-stripped.so"), NULL, 0);
	struct sym_dso *dd = symbolizer__dso(sd, tpath("libalias-stripped.so"), NULL, 0);
	const char *lib = tpath("libalias.so");

	(void)state;
	assert_null(sym_dso__warning(d));
	/* .symtab: global over weak and local, whatever the names. */
	expect_alias(s, d, lib, "al_g_impl", "__al_g");
	expect_alias(s, d, lib, "al_g_weak_and_longest", "__al_g");
	/* Non-weak (here local) over weak. */
	expect_alias(s, d, lib, "al_nw_weak_and_longer", "__al_nw_impl");
	/* Fewer leading underscores over a longer name. */
	expect_alias(s, d, lib, "__al_us_longer", "al_us");
	/* Then the longer name. */
	expect_alias(s, d, lib, "al_len", "al_len_longer");
	/* The hidden (local) name of .symtab over its weak export. */
	expect_alias(s, d, lib, "al_tab", "al_tab_impl");

	/* Stripped, no debug file: perf falls back to .dynsym, and so do we. */
	assert_null(sym_dso__warning(ds));
	expect_alias(s, ds, lib, "al_tab_impl", "al_tab");
	expect_alias(s, ds, lib, "al_g_impl", "__al_g");
	expect_alias(s, ds, lib, "al_nw_weak_and_longer", "al_nw_weak_and_longer");
	/* Stripped with its debug file: that file's .symtab, as perf prefers it. */
	assert_null(sym_dso__warning(dd));
	expect_alias(sd, dd, lib, "al_tab", "al_tab_impl");
	expect_alias(sd, dd, lib, "al_nw_weak_and_longer", "__al_nw_impl");
	symbolizer__free(sd);
	symbolizer__free(s);
}

static struct sym_entry ent(uint64_t start, uint64_t size, const char *name, uint8_t bind, uint32_t seq)
{
	return (struct sym_entry){ .start = start, .size = size, .name = name, .bind = bind, .seq = seq };
}

/* The rule engine alone, on orders a linker would not let a test choose. */
static void test_alias_rule(void **state)
{
	struct sym_entry e[] = {
		/* Given out of order: the sort must keep input order within a start. */
		ent(0x4000, 8, "dup_a", STB_GLOBAL, 7),
		ent(0x1000, 0, "zero_global_but_long", STB_GLOBAL, 0),
		ent(0x1000, 0x10, "__sized", STB_LOCAL, 1),
		ent(0x2000, 0x10, "sized_local", STB_LOCAL, 2),
		ent(0x2000, 0, "last_zero_gl", STB_GLOBAL, 3),
		ent(0x3000, 8, "SyS_read", STB_GLOBAL, 4),
		ent(0x3000, 8, "sys_read", STB_GLOBAL, 5),
		ent(0x4000, 8, "dup_b", STB_GLOBAL, 8),
		ent(0x5000, 0, "tail", STB_GLOBAL, 9),
		ent(0x3000, 8, "xys_read", STB_GLOBAL, 6),
	};
	size_t n;

	(void)state;
	n = sym_entries__finish(e, sizeof(e) / sizeof(e[0]), 0x40, sym_entry__perf_prefer);
	assert_int_equal(n, 5);
	/* A zero-sized alias followed by one of its start stays zero-sized and loses. */
	assert_string_equal(e[0].name, "__sized");
	assert_int_equal(e[0].size, 0x10);
	/* The last alias of a run is sized to the next start: then binding decides. */
	assert_string_equal(e[1].name, "last_zero_gl");
	assert_int_equal(e[1].size, 0x1000);
	/* Full tie: the first seen, unless it is a "SyS" name. */
	assert_string_equal(e[2].name, "sys_read");
	assert_string_equal(e[3].name, "dup_a");
	assert_string_equal(e[4].name, "tail");
	assert_int_equal(e[4].size, 0x40);

	/* Pairwise, each rule in its order (> 0: the newcomer a wins). */
	{
		struct sym_entry w = ent(1, 8, "a", STB_WEAK, 1), g = ent(1, 8, "__b_longer_name", STB_GLOBAL, 0);
		struct sym_entry l = ent(1, 8, "b", STB_LOCAL, 0), z = ent(1, 0, "c", STB_GLOBAL, 0);
		struct sym_entry u = ent(1, 8, "_bb", STB_LOCAL, 1), ll = ent(1, 8, "bbb", STB_LOCAL, 1);

		assert_true(sym_entry__perf_prefer(&w, &z) > 0);  /* sized over zero-sized */
		assert_true(sym_entry__perf_prefer(&w, &l) < 0);  /* non-weak over weak */
		assert_true(sym_entry__perf_prefer(&g, &l) > 0);  /* global over local */
		assert_true(sym_entry__perf_prefer(&u, &l) < 0);  /* fewer underscores */
		assert_true(sym_entry__perf_prefer(&ll, &l) > 0); /* longer name */
		assert_true(sym_entry__perf_prefer(&l, &l) < 0);  /* tie: the kept one stays */
	}
}

/* kallsyms has no sizes: only the last alias of a run gets one, so perf names the run by it. */
static void test_kallsyms_aliases(void **state)
{
	static const char text[] =
		"ffffffff81000000 T _text\n"
		"ffffffff81000000 T startup_64\n"
		"ffffffff81000100 T memcpy\n"
		"ffffffff81000100 T __memcpy\n"
		"ffffffff81000100 T __pi_memcpy\n"
		"ffffffff81000200 W weak_last\n"
		"ffffffff81000300 t local_fn\n"
		"ffffffff81000300 T __global_fn\n"
		"ffffffff81000400 T end_fn\n";
	struct ksyms *k = ksyms__parse(text, sizeof(text) - 1);
	const struct sym_entry *e;

	(void)state;
	assert_non_null(k);
	assert_int_equal(ksyms__nr(k), 5);
	assert_int_equal(ksyms__text(k), 0xffffffff81000000ULL);
	e = ksyms__find(k, 0xffffffff81000004ULL);
	assert_string_equal(e->name, "startup_64");
	e = ksyms__find(k, 0xffffffff810001aaULL);
	assert_string_equal(e->name, "__pi_memcpy");
	assert_int_equal(e->start, 0xffffffff81000100ULL);
	assert_int_equal(e->size, 0x100);
	e = ksyms__find(k, 0xffffffff81000200ULL);
	assert_string_equal(e->name, "weak_last");
	assert_int_equal(e->bind, STB_WEAK);
	e = ksyms__find(k, 0xffffffff81000310ULL);
	assert_string_equal(e->name, "__global_fn");
	assert_int_equal(e->bind, STB_GLOBAL);
	ksyms__free(k);
}

static const char kallsyms_fixture[] =
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 T fix_startup\n"
	"ffffffff81000100 T fix_func_a\n"
	"garbage line without fields\n"
	"ffffffff81000200 t fix_func_b\n"
	"zzzzzzzzzzzzzzzz T not_hex\n"
	"ffffffff81000280 D fix_data\n"
	"ffffffff81000400 W fix_func_c\n"
	"ffffffff81000500 T fix_last\n"
	"ffffffffc0001000 t fixmod_open\t[fixmod]\n"
	"ffffffffc0001100 T fixmod_read\t[fixmod]\n"
	"ffffffffc0002000 t other_fn\t[othermod]\n"
	"1ffffffff81000000000 T overlong\n"
	"ffffffff81000600 T";

static void test_kallsyms_fixture(void **state)
{
	struct symbolizer *s;
	struct sym_frame f;
	const char *mod;

	(void)state;
	write_file(tpath("kallsyms"), kallsyms_fixture, sizeof(kallsyms_fixture) - 1);
	s = new_sym(false, false, false, NULL);
	assert_int_equal(symbolizer__resolve_kernel(s, 0xffffffff81000150ULL, &f, &mod), 1);
	assert_string_equal(f.sym, "fix_func_a");
	assert_int_equal(f.offset, 0x50);
	assert_string_equal(mod, "[kernel.kallsyms]");
	/* fix_func_b runs to the next text symbol: the data symbol is not one. */
	assert_int_equal(symbolizer__resolve_kernel(s, 0xffffffff810003ffULL, &f, &mod), 1);
	assert_string_equal(f.sym, "fix_func_b");
	assert_int_equal(f.offset, 0x1ff);
	assert_int_equal(symbolizer__resolve_kernel(s, 0xffffffff81000404ULL, &f, &mod), 1);
	assert_string_equal(f.sym, "fix_func_c");
	assert_int_equal(symbolizer__resolve_kernel(s, 0xffffffffc0001108ULL, &f, &mod), 1);
	assert_string_equal(f.sym, "fixmod_read");
	assert_int_equal(f.offset, 8);
	assert_string_equal(mod, "[fixmod]");
	assert_int_equal(symbolizer__resolve_kernel(s, 0xffffffffc0002010ULL, &f, &mod), 1);
	assert_string_equal(mod, "[othermod]");
	/* Below everything. */
	assert_int_equal(symbolizer__resolve_kernel(s, 0x1000, &f, &mod), 0);
	assert_null(f.sym);

	/* The recording's kernel sat 16 MB higher (KASLR): kernel addresses shift, modules do not. */
	symbolizer__set_kernel_text(s, 0xffffffff82000000ULL);
	assert_int_equal(symbolizer__resolve_kernel(s, 0xffffffff82000150ULL, &f, &mod), 1);
	assert_string_equal(f.sym, "fix_func_a");
	assert_int_equal(f.offset, 0x50);
	assert_string_equal(mod, "[kernel.kallsyms]");
	assert_int_equal(symbolizer__resolve_kernel(s, 0xffffffffc0001004ULL, &f, &mod), 1);
	assert_string_equal(f.sym, "fixmod_open");
	assert_string_equal(mod, "[fixmod]");
	symbolizer__free(s);
}

static void test_kallsyms_real(void **state)
{
	struct symbolizer_opts o = { .kallsyms = "/proc/kallsyms" };
	struct symbolizer *s;
	uint64_t addr = 0, text = 0, a;
	char line[512], name[256], type;
	struct sym_frame f;
	const char *mod;
	FILE *k;

	(void)state;
	k = fopen("/proc/kallsyms", "r");
	if (!k)
		skip();
	while (fgets(line, sizeof(line), k)) {
		if (sscanf(line, "%lx %c %255s", &a, &type, name) != 3)
			continue;
		if (!strcmp(name, "schedule") && (type == 'T' || type == 't'))
			addr = a;
		if (!strcmp(name, "_text"))
			text = a;
	}
	fclose(k);
	if (!addr)
		skip(); /* kptr_restrict hides addresses */
	s = symbolizer__new(&o);
	assert_non_null(s);
	symbolizer__set_kernel_text(s, text);
	assert_int_equal(symbolizer__resolve_kernel(s, addr + 4, &f, &mod), 1);
	assert_string_equal(f.sym, "schedule");
	assert_int_equal(f.offset, 4);
	assert_string_equal(mod, "[kernel.kallsyms]");
	symbolizer__free(s);
}

/*
 * Every line of a big kallsyms is read whole, wherever the reads split it:
 * a 2.4 MB file of 60 000 symbols, names of 1 to 60 characters, some in
 * modules, each found at its own address with its own name; then every
 * text symbol of /proc/kallsyms found at its own start. (A reader that
 * took a full buffer's last part-line as a line lost two symbols at each
 * 256 KiB boundary.)
 */
static void test_kallsyms_every_line(void **state)
{
	const size_t n = 60000;
	uint64_t base = 0xffffffff81000000ULL, a, prev = 0;
	char line[512], name[256], type, *text = malloc(n * 96);
	const struct sym_entry *e;
	size_t len = 0, lost = 0;
	struct ksyms *k;
	int err;
	FILE *f;

	(void)state;
	assert_non_null(text);
	for (size_t i = 0; i < n; i++) {
		int nl = 1 + (int)(i * 7 % 60);

		len += (size_t)sprintf(text + len, "%016" PRIx64 " %c s%zu_%.*s%s\n", base + i * 16,
				       i % 3 ? 't' : 'T', i, nl, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefgh",
				       i >= n - 100 ? "\t[mod]" : "");
	}
	write_file(tpath("kallsyms-big"), text, len);
	k = ksyms__load(tpath("kallsyms-big"), &err);
	assert_non_null(k);
	assert_int_equal(ksyms__nr(k), n);
	for (size_t i = 0; i < n; i++) {
		char want[96];

		snprintf(want, sizeof(want), "s%zu_", i);
		e = ksyms__find(k, base + i * 16 + 3);
		assert_non_null(e);
		assert_true(e->start == base + i * 16);
		assert_int_equal(strncmp(e->name, want, strlen(want)), 0);
		assert_int_equal(strlen(e->name), strlen(want) + 1 + i * 7 % 60);
		assert_int_equal(e->module != NULL, i >= n - 100);
	}
	ksyms__free(k);
	free(text);

	f = fopen("/proc/kallsyms", "r");
	k = ksyms__load("/proc/kallsyms", &err);
	if (!f || !k) {
		if (f)
			fclose(f);
		ksyms__free(k);
		skip();
	}
	/* kallsyms changes as BPF programs come and go: a few may differ, not dozens */
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 " %c %255s", &a, &type, name) != 3 || !a ||
		    (type != 't' && type != 'T' && type != 'w' && type != 'W'))
			continue;
		e = ksyms__find(k, a);
		lost += !e || (e->start != a && a != prev);
		prev = a;
	}
	fclose(f);
	assert_true(ksyms__nr(k) == 0 || lost < 10);
	ksyms__free(k);
}

static void test_perfmap(void **state)
{
	static const char map[] =
		"7f0000001000 40 jit_func_one\n"
		"7f0000001040 20 LJava/lang/String;hashCode (compiled)\r\n"
		"0x7f0000002000 0x100 with_prefix\n"
		"nonsense\n"
		"7f0000003000 zz bad_size\n"
		"7f0000004000 0 zero_size\n"
		"7f0000001000 40 jit_func_one_rejitted\n"
		"7f0000005000 10\n"
		"ffffffffffffff00 200 wraps\n"
		"7f0000006000 10 _Z3fooi\n";
	struct symbolizer *s;
	struct sym_frame f;

	(void)state;
	write_file(tpath("perf-4242.map"), map, sizeof(map) - 1);
	s = new_sym(false, false, true, NULL);
	/* Written later at the same start: the re-JITted one. */
	assert_int_equal(symbolizer__resolve_perfmap(s, 4242, 0x7f0000001010ULL, &f), 1);
	assert_string_equal(f.sym, "jit_func_one_rejitted");
	assert_int_equal(f.offset, 0x10);
	assert_int_equal(symbolizer__resolve_perfmap(s, 4242, 0x7f000000105fULL, &f), 1);
	assert_string_equal(f.sym, "LJava/lang/String;hashCode (compiled)");
	assert_int_equal(f.offset, 0x1f);
	assert_int_equal(symbolizer__resolve_perfmap(s, 4242, 0x7f0000001060ULL, &f), 0);
	assert_int_equal(symbolizer__resolve_perfmap(s, 4242, 0x7f00000020ffULL, &f), 1);
	assert_string_equal(f.sym, "with_prefix");
	assert_int_equal(symbolizer__resolve_perfmap(s, 4242, 0x7f0000003000ULL, &f), 0);
	assert_int_equal(symbolizer__resolve_perfmap(s, 4242, 0x7f0000004000ULL, &f), 0);
	assert_int_equal(symbolizer__resolve_perfmap(s, 4242, 0x7f0000005000ULL, &f), 0);
	assert_int_equal(symbolizer__resolve_perfmap(s, 4242, 0x7f0000006004ULL, &f), 1);
	assert_string_equal(f.sym, "foo(int)");
	/* No map for this pid, asked twice. */
	assert_int_equal(symbolizer__resolve_perfmap(s, 4243, 0x7f0000001010ULL, &f), 0);
	assert_int_equal(symbolizer__resolve_perfmap(s, 4243, 0x7f0000001010ULL, &f), 0);
	assert_null(f.sym);
	symbolizer__free(s);
}

/* The outside-input parsers on garbage: no crash, no leak, bounded results. */
static void test_parsers_garbage(void **state)
{
	static const char *samples[] = {
		"", "\n\n\n", "ffff", "ffff T", "ffff T \n", "ffff T x [", "ffff T x [m",
		"0 T _text\n0 T a\n0 t b\n", "1 2", "1 2 ", "1 2 n", "\t\t\t", "0x", "0x 0x x",
		"ffffffffffffffffff 1 n", "\0\0\0 1 2 nul",
	};
	uint64_t rnd = 0x9e3779b97f4a7c15ULL;
	char buf[4096];
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		struct ksyms *k = ksyms__parse(samples[i], strlen(samples[i]));
		struct perfmap *m = perfmap__parse(samples[i], strlen(samples[i]));

		assert_non_null(k);
		assert_non_null(m);
		ksyms__find(k, 0);
		ksyms__find(k, UINT64_MAX);
		perfmap__find(m, 1);
		ksyms__free(k);
		perfmap__free(m);
	}
	/* All-zero addresses (kptr_restrict) resolve nothing. */
	{
		struct ksyms *k = ksyms__parse(samples[7], strlen(samples[7]));

		assert_int_equal(ksyms__nr(k), 0);
		ksyms__free(k);
	}
	for (i = 0; i < 2000; i++) {
		size_t len = (rnd >> 7) % sizeof(buf);
		struct ksyms *k;
		struct perfmap *m;

		for (j = 0; j < len; j++) {
			rnd = rnd * 6364136223846793005ULL + 1442695040888963407ULL;
			/* Mostly the alphabet of the formats, to reach deep into the parsers. */
			buf[j] = "0123456789abcdefxX TtWw[]\n\t_\r"[(rnd >> 33) % 30];
			if (!((rnd >> 20) & 63))
				buf[j] = (char)(rnd >> 40);
		}
		k = ksyms__parse(buf, len);
		m = perfmap__parse(buf, len);
		assert_non_null(k);
		assert_non_null(m);
		for (j = 0; j < 16; j++) {
			const struct sym_entry *e = ksyms__find(k, rnd ^ (j << 8));

			if (e)
				assert_true(strlen(e->name) < len + 1);
			e = perfmap__find(m, (rnd >> 3) ^ j);
			if (e)
				assert_true(strlen(e->name) < len + 1);
		}
		ksyms__free(k);
		perfmap__free(m);
	}
}

/* ELF garbage: truncated and corrupted copies of a real binary. */
static void test_elf_garbage(void **state)
{
	struct symbolizer *s = new_sym(true, true, true, NULL);
	struct sym_frame f[4];
	char name[64];
	int i;

	(void)state;
	for (i = 0; i < 12; i++) {
		struct sym_dso *d;
		uint64_t ip;

		snprintf(name, sizeof(name), "bad%d", i);
		if (i < 6)
			sh("cd %s && head -c %d pie > %s", tmpdir, 64 + i * 997, name);
		else
			sh("cd %s && cp pie %s && printf '\\377\\377\\377\\377\\377\\377\\377\\377' | "
			   "dd of=%s bs=1 seek=%d conv=notrunc status=none",
			   tmpdir, name, name, 32 + (i - 6) * 8);
		d = symbolizer__dso(s, tpath(name), NULL, 0);
		assert_non_null(d);
		for (ip = 0x1000; ip < 0x3000; ip += 0x40)
			assert_true(symbolizer__resolve(s, d, 0x1000, 0x1000, ip, f, 4) >= 0);
	}
	symbolizer__free(s);
}

/* A FIFO where a recording names a file (an ELF, a perf map, kallsyms) is
 * refused at once: opening it for reading would block until a writer came. */
static void test_fifo_paths(void **state)
{
	struct symbolizer *s = new_sym(false, false, false, NULL);
	uint8_t id[SYM_BUILD_ID_MAX];
	struct sym_frame f[2];
	struct sym_dso *d;
	char *buf = NULL;
	size_t len;
	int err = 0;

	(void)state;
	sh("cd %s && rm -f fifo && mkfifo fifo", tmpdir);
	assert_int_equal(sym_read_file(tpath("fifo"), 1 << 20, &buf, &len), -EINVAL);
	assert_null(perfmap__load(tpath("fifo"), &err));
	assert_int_equal(err, -EINVAL);
	assert_null(ksyms__load(tpath("fifo"), &err));
	assert_true(sym_read_build_id(tpath("fifo"), id, sizeof(id)) < 0);
	d = symbolizer__dso(s, tpath("fifo"), NULL, 0);
	assert_non_null(d);
	assert_non_null(sym_dso__warning(d));
	assert_int_equal(symbolizer__resolve(s, d, 0x1000, 0, 0x1100, f, 2), 0);
	symbolizer__free(s);
}

/* ---- PLT stubs: named "sym@plt" at the addresses objdump gives them ---- */

/* The PT_LOAD holding vaddr, read with libelf. */
static int seg_of(const char *path, uint64_t vaddr, struct fsym *out)
{
	size_t phnum, i;
	int fd, found = 0;
	Elf *elf;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_getphdrnum(elf, &phnum) == 0)
		for (i = 0; i < phnum; i++) {
			GElf_Phdr ph;

			gelf_getphdr(elf, (int)i, &ph);
			if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
				out->vaddr = vaddr;
				out->seg_vaddr = ph.p_vaddr;
				out->seg_off = ph.p_offset;
				found = 1;
			}
		}
	elf_end(elf);
	close(fd);
	return found;
}

/* The frame symbolizer s gives vaddr + delta of file (one frame, named), in f[0]. */
static void resolve_vaddr(struct symbolizer *s, struct sym_dso *d, const char *file, uint64_t vaddr,
			  uint64_t delta, struct sym_frame f[2])
{
	struct fsym fs = { 0 };
	struct fmap m;
	uint64_t ip;

	assert_true(seg_of(file, vaddr, &fs));
	ip = fixture_ip(&fs, 0x7f0000000000ULL, delta, &m);
	assert_int_equal(symbolizer__resolve(s, d, m.start, m.pgoff, ip, f, 2), 1);
	assert_non_null(f[0].sym);
}

/*
 * Every "<name@plt>:" label objdump prints for the PLT of file resolves to
 * that name; objdump's "<*ABS*+0xRESOLVER@plt>" (an IRELATIVE stub, which
 * perf names after the IFUNC) to "IFUNC@plt", IFUNC the name of the
 * resolver's address.
 */
static int expect_plt(struct symbolizer *s, const char *file, bool demangle)
{
	struct sym_dso *d = symbolizer__dso(s, file, NULL, 0);
	char cmd[1024], line[1024];
	int n = 0;
	FILE *p;

	assert_null(sym_dso__warning(d));
	snprintf(cmd, sizeof(cmd), "objdump -d %s -j .plt -j .plt.sec '%s' 2>/dev/null",
		 demangle ? "-C" : "", file);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long addr;
		char name[512], *end;
		struct sym_frame f[2];

		/* "0000000000001030 <free@plt>:" */
		if (sscanf(line, "%llx <%511[^\n]", &addr, name) != 2 || !(end = strstr(name, "@plt>:")))
			continue;
		end[4] = '\0';
		if (!strncmp(name, "*ABS*+0x", 8)) {
			resolve_vaddr(s, d, file, strtoull(name + 8, NULL, 16), 0, f);
			snprintf(name, sizeof(name), "%.400s@plt", f[0].sym);
		}
		resolve_vaddr(s, d, file, addr, 2, f);
		assert_string_equal(f[0].sym, name);
		assert_int_equal(f[0].offset, 2);
		n++;
	}
	pclose(p);
	return n;
}

static void test_plt_names(void **state)
{
	struct symbolizer *s = new_sym(false, false, false, NULL);
	struct symbolizer *sd = new_sym(false, false, true, NULL);

	(void)state;
	assert_true(expect_plt(s, tpath("plt-pie"), false) >= 3); /* printf, strlen, abort */
	assert_true(expect_plt(s, tpath("plt-nopie"), false) >= 3);
	assert_true(expect_plt(s, tpath("libplt.so"), false) >= 3);
	assert_true(expect_plt(s, tpath("plt-stripped"), false) >= 3); /* .dynsym only */
	assert_true(expect_plt(sd, tpath("cxxplt"), true) >= 1);   /* ns::ext(int)@plt */
	/* IFUNCs of its own: IRELATIVE relocations listed last, their stubs among the others */
	assert_true(expect_plt(s, tpath("libifunc.so"), false) >= 6);
	/* Debian's libc is built so: its stubs are named by GOT slot, not relocation order */
	if (access("/usr/lib/x86_64-linux-gnu/libc.so.6", R_OK) == 0)
		assert_true(expect_plt(s, "/usr/lib/x86_64-linux-gnu/libc.so.6", false) >= 40);
	symbolizer__free(s);
	symbolizer__free(sd);
}

/* ---- the vDSO ---- */

/* Address of a function of an ELF image in memory, from its .dynsym (libelf). */
static uint64_t image_sym(void *image, size_t len, const char *name)
{
	Elf *elf = elf_memory(image, len);
	Elf_Scn *scn = NULL;
	uint64_t v = 0;

	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			gelf_getsym(d, (int)i, &sym);
			if (!strcmp(elf_strptr(elf, sh.sh_link, sym.st_name), name))
				v = sym.st_value;
		}
	}
	elf_end(elf);
	return v;
}

/* The build id note's bytes inside the image (to make a vDSO of another build). */
static uint8_t *image_build_id(void *image, size_t len, size_t *n)
{
	uint8_t id[64];
	Elf *elf = elf_memory(image, len);
	int r = elf__build_id(elf, id, sizeof(id));
	uint8_t *p;

	elf_end(elf);
	assert_true(r > 0);
	*n = (size_t)r;
	for (p = image; p + r <= (uint8_t *)image + len; p++)
		if (!memcmp(p, id, (size_t)r))
			return p;
	fail();
	return NULL;
}

static void expect_vdso(struct symbolizer *s, struct sym_dso *d, uint64_t at, const char *name)
{
	const uint64_t base = 0x7ffff7fc1000ULL;
	struct sym_frame f[2];

	assert_true(at != 0);
	assert_int_equal(symbolizer__resolve(s, d, base, 0, base + at + 3, f, 2), 1);
	assert_string_equal(f[0].sym, name);
	assert_int_equal(f[0].offset, 3);
}

static void test_vdso(void **state)
{
	char hex[129], dir[600];
	uint8_t other[64], *bidp;
	struct symbolizer *s;
	struct sym_dso *d;
	struct sym_frame f[2];
	void *image, *copy;
	uint64_t cg, gtod;
	size_t len, n;

	(void)state;
	if (vdso__self(&image, &len))
		skip();
	cg = image_sym(image, len, "__vdso_clock_gettime");
	gtod = image_sym(image, len, "__vdso_gettimeofday");

	/* No build id recorded (as in offcpu's own recordings): this process's image. */
	s = new_sym(false, false, false, NULL);
	d = symbolizer__dso(s, VDSO_NAME, NULL, 0);
	assert_null(sym_dso__warning(d));
	expect_vdso(s, d, cg, "__vdso_clock_gettime");
	expect_vdso(s, d, gtod, "__vdso_gettimeofday");
	symbolizer__free(s);

	/* Another build of the vDSO: its build id changed, the code kept. */
	copy = malloc(len);
	memcpy(copy, image, len);
	bidp = image_build_id(copy, len, &n);
	for (size_t i = 0; i < n; i++)
		bidp[i] ^= 0x5a;
	memcpy(other, bidp, n);

	/* Recorded with that build id, found nowhere: not named, and said so. */
	s = new_sym(false, false, false, NULL);
	d = symbolizer__dso(s, VDSO_NAME, other, n);
	assert_non_null(sym_dso__warning(d));
	assert_int_equal(symbolizer__resolve(s, d, 0x7ffff7fc1000ULL, 0, 0x7ffff7fc1000ULL + cg, f, 2), 0);
	symbolizer__free(s);

	/* The recording carries it (offcpu record writes its copy). */
	s = new_sym(false, false, false, NULL);
	assert_int_equal(symbolizer__add_image(s, VDSO_NAME, other, n, copy, len), 0);
	d = symbolizer__dso(s, VDSO_NAME, other, n);
	assert_null(sym_dso__warning(d));
	expect_vdso(s, d, cg, "__vdso_clock_gettime");
	symbolizer__free(s);

	/* perf's build-id cache has it: CACHE/[vdso]/HEX/vdso and .build-id/HE/X... */
	build_id__hex(other, n, hex);
	snprintf(dir, sizeof(dir), "%s/[vdso]/%s", tpath("cache"), hex);
	assert_int_equal(sh("mkdir -p '%s'", dir), 0);
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/vdso");
	write_file(dir, copy, len);
	s = new_sym(false, false, false, NULL);
	d = symbolizer__dso(s, VDSO_NAME, other, n);
	assert_null(sym_dso__warning(d));
	expect_vdso(s, d, gtod, "__vdso_gettimeofday");
	symbolizer__free(s);
	sh("rm -rf '%s'", tpath("cache"));
	free(copy);
	free(image);
}

/* ---- the kernel: only the recorded kernel's kallsyms names its addresses ---- */

static void write_notes(const char *path, const uint8_t *id, size_t n)
{
	uint8_t buf[64] = { 0 };
	uint32_t h[3] = { 4, (uint32_t)n, 3 /* NT_GNU_BUILD_ID */ };

	memcpy(buf, h, 12);
	memcpy(buf + 12, "GNU", 4);
	memcpy(buf + 16, id, n);
	write_file(path, (const char *)buf, 16 + ((n + 3) & ~3u));
}

static void test_kernel_build_id(void **state)
{
	static const uint8_t running[20] = { 1, 2, 3 }, recorded[20] = { 9, 8, 7 };
	struct symbolizer_opts o = {
		.debug_dir = tpath("emptydebug"),
		.buildid_dir = tpath("kcache"),
		.kernel_notes = tpath("notes"),
	};
	char hex[41], dir[600];
	struct symbolizer *s;
	struct sym_frame f;
	const char *mod;

	(void)state;
	write_notes(tpath("notes"), running, sizeof(running));
	/* another kernel recorded, no copy of its kallsyms: nothing named, a warning */
	s = symbolizer__new(&o);
	symbolizer__set_kernel_build_id(s, recorded, sizeof(recorded));
	assert_int_equal(symbolizer__resolve_kernel(s, 0xffffffff81000150ULL, &f, &mod), 0);
	assert_non_null(symbolizer__kernel_warning(s));
	symbolizer__free(s);
	/* perf's build-id cache has that kernel's kallsyms: named from it */
	build_id__hex(recorded, sizeof(recorded), hex);
	snprintf(dir, sizeof(dir), "%s/[kernel.kallsyms]/%s", tpath("kcache"), hex);
	assert_int_equal(sh("mkdir -p '%s'", dir), 0);
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/kallsyms");
	write_file(dir, kallsyms_fixture, sizeof(kallsyms_fixture) - 1);
	s = symbolizer__new(&o);
	symbolizer__set_kernel_build_id(s, recorded, sizeof(recorded));
	assert_int_equal(symbolizer__resolve_kernel(s, 0xffffffff81000150ULL, &f, &mod), 1);
	assert_string_equal(f.sym, "fix_func_a");
	assert_null(symbolizer__kernel_warning(s));
	symbolizer__free(s);
	/* the running kernel recorded: /proc/kallsyms, no warning */
	s = symbolizer__new(&o);
	symbolizer__set_kernel_build_id(s, running, sizeof(running));
	symbolizer__resolve_kernel(s, 0xffffffff81000150ULL, &f, &mod);
	assert_null(symbolizer__kernel_warning(s));
	symbolizer__free(s);
	/* a kallsyms given explicitly is the user's word: used whatever the build ids */
	o.kallsyms = tpath("kallsyms");
	write_file(tpath("kallsyms"), kallsyms_fixture, sizeof(kallsyms_fixture) - 1);
	s = symbolizer__new(&o);
	symbolizer__set_kernel_build_id(s, recorded, sizeof(recorded));
	assert_int_equal(symbolizer__resolve_kernel(s, 0xffffffff81000150ULL, &f, &mod), 1);
	assert_null(symbolizer__kernel_warning(s));
	symbolizer__free(s);
	sh("rm -rf '%s'", tpath("kcache"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pie),
		cmocka_unit_test(test_nopie),
		cmocka_unit_test(test_preload),
		cmocka_unit_test(test_shared_lib_dynsym),
		cmocka_unit_test(test_stripped_build_id_debug),
		cmocka_unit_test(test_missing_file_by_build_id),
		cmocka_unit_test(test_debuglink),
		cmocka_unit_test(test_build_id_mismatch),
		cmocka_unit_test(test_read_build_id),
		cmocka_unit_test(test_srcline),
		cmocka_unit_test(test_inlines),
		cmocka_unit_test(test_cxx_demangle),
		cmocka_unit_test(test_demangle_rust_and_more),
		cmocka_unit_test(test_elf_aliases),
		cmocka_unit_test(test_alias_rule),
		cmocka_unit_test(test_kallsyms_aliases),
		cmocka_unit_test(test_kallsyms_fixture),
		cmocka_unit_test(test_kallsyms_real),
		cmocka_unit_test(test_kallsyms_every_line),
		cmocka_unit_test(test_perfmap),
		cmocka_unit_test(test_parsers_garbage),
		cmocka_unit_test(test_elf_garbage),
		cmocka_unit_test(test_fifo_paths),
		cmocka_unit_test(test_plt_names),
		cmocka_unit_test(test_vdso),
		cmocka_unit_test(test_kernel_build_id),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
