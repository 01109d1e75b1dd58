/* SPDX-License-Identifier: GPL-2.0-only */
/* The vDSO image of this process (see vdso.c). */
#ifndef OFFCPU_SYMBOLS_VDSO_H
#define OFFCPU_SYMBOLS_VDSO_H

#include <stddef.h>

#define VDSO_NAME "[vdso]"

/* A malloc'd copy of this process's vDSO mapping: 0, or negative errno. */
int vdso__self(void **image, size_t *len);

#endif
