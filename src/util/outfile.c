// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "util/outfile.h"

int outfile__open(struct outfile *of, const char *path, mode_t mode)
{
	size_t len = strlen(path) + 5;
	struct stat st;

	of->path = path;
	of->tmp = NULL;
	if (!strcmp(path, "-")) {
		of->fd = dup(STDOUT_FILENO);
		return of->fd < 0 ? -errno : 0;
	}
	if (!lstat(path, &st) && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
		of->fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		return of->fd < 0 ? -errno : 0;
	}
	of->tmp = malloc(len);
	if (!of->tmp)
		return -ENOMEM;
	snprintf(of->tmp, len, "%s.tmp", path);
	unlink(of->tmp);
	of->fd = open(of->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (of->fd < 0) {
		int err = -errno;

		free(of->tmp);
		of->tmp = NULL;
		return err;
	}
	return 0;
}

int outfile__commit(struct outfile *of, int err)
{
	if (!of->tmp)
		return err;
	if (!err && rename(of->tmp, of->path))
		err = -errno;
	if (err)
		unlink(of->tmp);
	free(of->tmp);
	of->tmp = NULL;
	return err;
}
