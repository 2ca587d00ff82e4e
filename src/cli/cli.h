/* softverbs CLI: the subcommand table's entries and the helpers they share. */
#ifndef SV_CLI_H
#define SV_CLI_H

#include <stdbool.h>
#include <stddef.h>

#define SV_CLI_DEV_DIR   "/dev/infiniband"
#define SV_CLI_RUN_DIR   "/run/softverbs"     /* softverbs setup's persistent tree */
#define SV_CLI_SYSFS     SV_CLI_RUN_DIR "/sysfs"
/* softverbs run's private tree: inside the namespace's own tmpfs, hidden. */
#define SV_CLI_NS_SYSFS  SV_CLI_DEV_DIR "/.softverbs-sysfs"

struct sv_cli_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	const char *usage;
};

extern const char *sv_cli_prog;

int sv_cli_run(int argc, char **argv);
int sv_cli_setup(int argc, char **argv);
int sv_cli_status(int argc, char **argv);     /* status.c */
int sv_cli_stat(int argc, char **argv);       /* stat.c */

/* sysfs.c: the sysfs-like tree describing the device, under root. */
int sv_sysfs_write(const char *root);
const char *sv_dev_name(void);

/* files.c */
int sv_mkdir_p(const char *path, unsigned mode);
int sv_write_file(const char *dir, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int sv_rm_rf(const char *path);
int sv_lib_dir(char *buf, size_t size);
bool sv_is_chardev(const char *path);

/* ns.c: a private mount namespace where /dev/infiniband is ours and
 * /sys/class shows root's class/infiniband and class/infiniband_verbs. */
int sv_ns_enter(void);
int sv_ns_dev_infiniband(const char *dev_name);
int sv_ns_sys_class(const char *root);

#endif
