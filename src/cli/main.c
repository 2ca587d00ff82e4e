/* softverbs: one command for everything around the library, one table of subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

const char *sv_cli_prog = "softverbs";

static int cmd_help(int argc, char **argv);

static const struct sv_cli_cmd cmds[] = {
	{ "run", sv_cli_run, "Run a program on softverbs (library path, device node, sysfs tree)",
	  "run [--pcap DIR] [--] PROGRAM [ARGS...]" },
	{ "setup", sv_cli_setup, "Create (or --remove) the device node and sysfs tree for all users (root)",
	  "setup [--remove]" },
	{ "status", sv_cli_status, "Show the processes using softverbs: QPs, CQs, SRQs, MRs, channels, counters",
	  "status [--json]" },
	{ "stat", sv_cli_stat, "Show every QP's counters, or with -w their rates each SECONDS",
	  "stat [-w SECONDS] [-n COUNT]" },
	{ "help", cmd_help, "Show the subcommands, or one subcommand's usage", "help [COMMAND]" },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static const struct sv_cli_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < NCMDS; i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

static void show_usage(FILE *f)
{
	fprintf(f, "Usage: %s COMMAND [ARGS...]\n\nCommands:\n", sv_cli_prog);
	for (size_t i = 0; i < NCMDS; i++)
		fprintf(f, "  %-7s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\n`%s help COMMAND` shows a command's usage; `%s --version` the version.\n",
		sv_cli_prog, sv_cli_prog);
}

static int cmd_help(int argc, char **argv)
{
	const struct sv_cli_cmd *c;

	if (argc < 2) {
		show_usage(stdout);
		return 0;
	}
	c = find_cmd(argv[1]);
	if (!c) {
		fprintf(stderr, "%s: no command '%s'\n", sv_cli_prog, argv[1]);
		return 1;
	}
	printf("Usage: %s %s\n\n%s.\n", sv_cli_prog, c->usage, c->summary);
	return 0;
}

int main(int argc, char **argv)
{
	const struct sv_cli_cmd *c;

	if (argc < 2) {
		show_usage(stderr);
		return 1;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("softverbs %s\n", SV_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_help(1, argv);
	c = find_cmd(argv[1]);
	if (!c) {
		fprintf(stderr, "%s: no command '%s'\n\n", sv_cli_prog, argv[1]);
		show_usage(stderr);
		return 1;
	}
	return c->fn(argc - 1, argv + 1);
}
