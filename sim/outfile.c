/* outfile.c: opening a command's output files safely.  See outfile.h. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "outfile.h"
#include "setup.h"

int outfile_optlike(const char *opt, const char *path)
{
    if (path[0] != '-' || !path[1]) return 0;   /* "--quiet" after --csv: an option taken for a name, and lost */
    setup_msg(stderr, "pacesim: %s%s%s: an output named like an option (%s lacks its value?); for a file of that name "
              "give ./%s", opt ? opt : "", opt ? " " : "", path, opt ? opt : "an option before it", path);
    return 1;
}

FILE *outfile_open(const char *path)
{
    if (!strcmp(path, "-")) return stdout;
    if (!*path) {
        setup_msg(stderr, "pacesim: an output named by an empty file name (give a path, or - for stdout)");
        return NULL;
    }
    if (outfile_optlike(NULL, path)) return NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
    int fl = fd < 0 ? -1 : fcntl(fd, F_GETFL);
    FILE *f = fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        int er = errno;
        if (fd >= 0) close(fd);
        if (er == ENXIO) setup_msg(stderr, "%s: cannot write: a FIFO that no process reads", path);
        else setup_msg(stderr, "%s: %s", path, strerror(er));
    }
    return f;
}

/* path's directory (its inode) and last name: 0, or -1 where the directory does not exist. */
static int dir_and_name(const char *path, struct stat *dir, const char **name)
{
    const char *slash = strrchr(path, '/');
    char d[4096];
    if (!slash) snprintf(d, sizeof d, ".");
    else if ((size_t)(slash - path) >= sizeof d) return -1;
    else snprintf(d, sizeof d, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    *name = slash ? slash + 1 : path;
    return stat(d, dir);
}

int outfile_same(const char *a, const char *b)
{
    struct stat sa, sb;
    const char *na, *nb;
    if (!strcmp(a, b)) return 1;
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea || eb) return 0;
    return dir_and_name(a, &sa, &na) == 0 && dir_and_name(b, &sb, &nb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino && !strcmp(na, nb);
}
