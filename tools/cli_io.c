/* Messages and file I/O of the pipesched tool.
 *
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <fcntl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("pipesched: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_exit_code(psched_status status)
{
    switch (status) {
    case PSCHED_OK:
        return CLI_OK;
    case PSCHED_EINVALID:
    case PSCHED_EDEADLOCK:
    case PSCHED_EINFEASIBLE:
        return CLI_INVALID;
    default:
        return CLI_USAGE;
    }
}

int cli_fail(psched_status status, const char *context)
{
    const char *detail = psched_last_error();
    if (detail[0] == '\0')
        detail = psched_status_str(status);
    if (context)
        cli_error("%s: %s", context, detail);
    else
        cli_error("%s", detail);
    return cli_exit_code(status);
}

static int read_stream(FILE *f, const char *path, char **data, size_t *length)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len - 1, f);
        if (ferror(f)) {
            cli_error("cannot read '%s': %s", path, strerror(errno));
            free(buf);
            return CLI_USAGE;
        }
        if (feof(f)) {
            buf[len] = '\0';
            *data = buf;
            *length = len;
            return CLI_OK;
        }
        if (cap - len - 1 == 0) {
            char *grown = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
            if (!grown)
                free(buf);
            buf = grown;
            cap *= 2;
        }
    }
    cli_error("cannot read '%s': out of memory", path);
    return CLI_USAGE;
}

int cli_read_file(const char *path, char **data, size_t *length)
{
    if (strcmp(path, "-") == 0)
        return read_stream(stdin, "standard input", data, length);
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error("cannot open '%s': %s", path, strerror(errno));
        return CLI_USAGE;
    }
    int rc = read_stream(f, path, data, length);
    fclose(f);
    return rc;
}

static int write_all(int fd, const char *data, size_t length)
{
    while (length > 0) {
        ssize_t n = write(fd, data, length);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        data += n;
        length -= (size_t)n;
    }
    return 0;
}

/* "<dir>/.<base>.XXXXXX" next to @p path, so the final rename stays within
 * one file system and is atomic. */
static char *temp_template(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = slash ? slash + 1 : path;
    size_t size = dir_len + 1 + strlen(base) + sizeof ".XXXXXX";
    char *tmpl = malloc(size);
    if (tmpl)
        snprintf(tmpl, size, "%.*s.%s.XXXXXX", (int)dir_len, path, base);
    return tmpl;
}

static int write_in_place(const char *path, const char *data, size_t length)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0 || write_all(fd, data, length) != 0) {
        cli_error("--output '%s': cannot write: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return CLI_USAGE;
    }
    close(fd);
    return CLI_OK;
}

int cli_write_atomic(const char *path, const char *data, size_t length)
{
    const char *slash = strrchr(path, '/');
    if (path[0] == '\0' || (slash && slash[1] == '\0')) {
        cli_error("--output '%s': not a file name", path);
        return CLI_USAGE;
    }
    /* A device or pipe (/dev/null, /dev/stdout, a FIFO) is written in place:
     * renaming a temporary over it would replace the device with a file. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return write_in_place(path, data, length);
    char *tmp = temp_template(path);
    if (!tmp) {
        cli_error("--output '%s': out of memory", path);
        return CLI_USAGE;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        cli_error("--output '%s': cannot create a temporary file next to it: %s", path,
                  strerror(errno));
        free(tmp);
        return CLI_USAGE;
    }
    /* mkstemp creates 0600; the result should look like any new file. */
    mode_t mask = umask(0);
    umask(mask);
    int failed = fchmod(fd, 0666 & ~mask) != 0 || write_all(fd, data, length) != 0 ||
                 fsync(fd) != 0;
    int saved = errno;
    if (close(fd) != 0 && !failed) {
        failed = 1;
        saved = errno;
    }
    if (!failed && rename(tmp, path) != 0) {
        failed = 1;
        saved = errno;
    }
    if (failed) {
        unlink(tmp);
        cli_error("--output '%s': cannot write: %s", path, strerror(saved));
    }
    free(tmp);
    return failed ? CLI_USAGE : CLI_OK;
}

int cli_write_stdout(const char *data, size_t length)
{
    if (fwrite(data, 1, length, stdout) != length || fflush(stdout) != 0) {
        cli_error("cannot write to standard output: %s", strerror(errno));
        return CLI_USAGE;
    }
    return CLI_OK;
}

int cli_membuf_open(cli_membuf *m)
{
    m->data = NULL;
    m->length = 0;
    m->f = open_memstream(&m->data, &m->length);
    if (!m->f) {
        cli_error("cannot buffer the output: %s", strerror(errno));
        return CLI_USAGE;
    }
    return CLI_OK;
}

int cli_membuf_finish(cli_membuf *m, bool emit)
{
    int rc = CLI_OK;
    if (fclose(m->f) != 0) {
        cli_error("cannot buffer the output: %s", strerror(errno));
        rc = CLI_USAGE;
    } else if (emit) {
        rc = cli_write_stdout(m->data, m->length);
    }
    free(m->data);
    m->data = NULL;
    return rc;
}
