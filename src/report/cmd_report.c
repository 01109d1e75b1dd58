// SPDX-License-Identifier: GPL-2.0-only
/* Placeholder until the reader lands (issue 3). */
#include <stdio.h>
#include "commands.h"

int cmd_report(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "offcpu report: not implemented yet; use perf report\n");
	return 1;
}

int cmd_script(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "offcpu script: not implemented yet; use perf script\n");
	return 1;
}
