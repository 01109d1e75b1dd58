// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include "commands.h"

int cmd_record(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "offcpu record: not implemented yet\n");
	return 1;
}
