/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An output file written whole or not at all: PATH.tmp is created fresh
 * (an old one removed first, never written through a link planted there:
 * O_EXCL | O_NOFOLLOW), renamed to PATH once complete, removed on failure.
 * "-" is standard output (a duplicate of its descriptor). A PATH that is a
 * character device or a FIFO (/dev/null, a pipe) is written directly: a
 * rename would put a regular file in its place (as root, in /dev).
 */
#ifndef OFFCPU_UTIL_OUTFILE_H
#define OFFCPU_UTIL_OUTFILE_H

#include <stdbool.h>
#include <sys/types.h>

struct outfile {
	const char *path;
	char *tmp;    /* PATH.tmp, NULL for standard output */
	int fd;       /* to write to; the caller closes it (directly or through a FILE) */
};

/* Open of->fd for path with mode (less the umask): 0 or negative errno. */
int outfile__open(struct outfile *of, const char *path, mode_t mode);

/*
 * After the caller closed of->fd: with err 0, move the file into place;
 * otherwise remove it. Returns err, or the rename's negative errno.
 */
int outfile__commit(struct outfile *of, int err);

#endif
