/* SPDX-License-Identifier: GPL-2.0-only */
/* Entry points of the subcommands; argv[0] is the subcommand's name. */
#ifndef OFFCPU_COMMANDS_H
#define OFFCPU_COMMANDS_H

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_script(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_timeline(int argc, char **argv);

#endif
