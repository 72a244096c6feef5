/*
 * supervisor.c — where the CLI's controllers find scaletune-supervise: next to the running
 * scaletune (build/ or the installed bin/), read from /proc/self/exe. Not found (another
 * layout, no /proc): NULL, and the library forks its supervisors instead (runner.h,
 * runner_options.supervisor), which works the same and costs the controller more CPU.
 */
#include "cli/cli.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

const char *cli_supervisor(char *buf, size_t cap)
{
    static const char name[] = "scaletune-supervise";
    if (cap < sizeof(name) + 1)
        return NULL;
    ssize_t n = readlink("/proc/self/exe", buf, cap - sizeof(name) - 1);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return NULL;
    memcpy(slash + 1, name, sizeof(name));
    return access(buf, X_OK) == 0 ? buf : NULL;
}
