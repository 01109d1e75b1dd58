// SPDX-License-Identifier: GPL-2.0-only
/*
 * C++ names through libstdc++'s __cxa_demangle (C linkage), Rust legacy
 * names through the same then their "::h<16 hex>" hash dropped and their
 * $..$ escapes decoded. Rust v0 ("_R...") names are left mangled.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/sym_internal.h"

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* "::h" + 16 hex digits at the very end: a Rust legacy hash. */
static bool rust_hash_suffix(const char *s, size_t len)
{
	size_t i;

	if (len < 19 || memcmp(s + len - 19, "::h", 3) != 0)
		return false;
	for (i = len - 16; i < len; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

static const struct {
	const char *esc;
	char c;
} rust_escapes[] = {
	{ "$SP$", '@' }, { "$BP$", '*' }, { "$RF$", '&' }, { "$LT$", '<' },
	{ "$GT$", '>' }, { "$LP$", '(' }, { "$RP$", ')' }, { "$C$", ',' },
};

/* Decode Rust legacy escapes in place ($u7e$, $LT$, "..", leading "_$"); the output never
 * grows. */
static void rust_unescape(char *s)
{
	char *w = s, *r = s;
	size_t i;

	while (*r) {
		if (*r == '$') {
			for (i = 0; i < sizeof(rust_escapes) / sizeof(rust_escapes[0]); i++) {
				size_t n = strlen(rust_escapes[i].esc);

				if (strncmp(r, rust_escapes[i].esc, n) == 0) {
					*w++ = rust_escapes[i].c;
					r += n;
					break;
				}
			}
			if (i < sizeof(rust_escapes) / sizeof(rust_escapes[0]))
				continue;
			if (r[1] == 'u') {
				char *end;
				unsigned long v = strtoul(r + 2, &end, 16);

				if (end > r + 2 && *end == '$' && v > 0 && v < 0x80) {
					*w++ = (char)v;
					r = end + 1;
					continue;
				}
			}
		} else if (r[0] == '.' && r[1] == '.') {
			*w++ = ':';
			*w++ = ':';
			r += 2;
			continue;
		} else if (r[0] == '_' && r[1] == '$' && (r == s || (r >= s + 2 && r[-1] == ':' && r[-2] == ':'))) {
			r++; /* "_$" starts a path segment that begins with an escape */
			continue;
		}
		*w++ = *r++;
	}
	*w = '\0';
}

int sym_demangle(const char *name, char **out)
{
	int status = 0;
	size_t len;

	*out = NULL;
	if (!name || name[0] != '_' || name[1] != 'Z')
		return -ENOENT; /* not Itanium-mangled; Rust v0 (_R) stays as it is */
	*out = __cxa_demangle(name, NULL, NULL, &status);
	if (!*out || status != 0) {
		free(*out);
		*out = NULL;
		return status == -1 ? -ENOMEM : -ENOENT; /* -1: its allocation failed */
	}
	len = strlen(*out);
	if (strncmp(name, "_ZN", 3) == 0 && rust_hash_suffix(*out, len)) {
		(*out)[len - 19] = '\0';
		rust_unescape(*out);
	}
	return 0;
}
