/* Messages and file I/O of the pipesched tool.
 *
 * SPDX-License-Identifier: MIT
 */
#if defined(__linux__)
#define _GNU_SOURCE /* sync_file_range */
#endif
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Length of the well-formed UTF-8 sequence at @p s (at most @p n bytes
 * available), 0 when the bytes there are not one (overlong forms,
 * surrogates and code points above U+10FFFF included). */
static size_t utf8_sequence(const unsigned char *s, size_t n)
{
    size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
    if (s[0] < 0xc2 || s[0] > 0xf4 || n < len)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
        return 0;
    return len;
}

/* Messages stay on one line a terminal can show: control bytes and bytes
 * that are not UTF-8 become \xNN, and a long message keeps its head (what
 * is wrong) and its tail (the rule) around " ... ". */
enum { MESSAGE_MAX = 288 /* + "pipesched: " stays under 300 */, HEAD = 170 };

char *cli_clean_message(const char *text)
{
    size_t n = strlen(text);
    char *out = malloc(4 * n + 1);
    if (!out)
        return NULL;
    const unsigned char *s = (const unsigned char *)text;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = s[i] >= 0x80 ? utf8_sequence(s + i, n - i) : 1;
        if (len == 0 || s[i] < 0x20 || s[i] == 0x7f) {
            o += (size_t)sprintf(out + o, "\\x%02x", s[i]);
            i++;
        } else {
            memcpy(out + o, s + i, len);
            o += len;
            i += len;
        }
    }
    out[o] = '\0';
    if (o > MESSAGE_MAX) {
        /* cut at character boundaries, never inside a UTF-8 sequence */
        size_t head = HEAD, tail = o - (MESSAGE_MAX - HEAD - 5);
        while (head > 0 && ((unsigned char)out[head] & 0xc0) == 0x80)
            head--;
        while (tail < o && ((unsigned char)out[tail] & 0xc0) == 0x80)
            tail++;
        memcpy(out + head, " ... ", 5);
        memmove(out + head + 5, out + tail, o - tail + 1);
    }
    return out;
}

void cli_error(const char *fmt, ...)
{
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *raw = n >= 0 ? malloc((size_t)n + 1) : NULL;
    char *clean = NULL;
    if (raw) {
        vsnprintf(raw, (size_t)n + 1, fmt, again);
        clean = cli_clean_message(raw);
    }
    fprintf(stderr, "pipesched: %s\n", clean ? clean : "out of memory while reporting an error");
    free(clean);
    free(raw);
    va_end(again);
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

const char *cli_size_text(size_t bytes, char buf[32])
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    size_t u = 0;
    while (u + 1 < sizeof units / sizeof units[0] && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, 32, "%zu %s", bytes, units[u]);
    return buf;
}

/* Where the text check stands: line and column of the next byte, and
 * whether the previous chunk ended in a CR. */
typedef struct text_scan {
    size_t offset, line, column;
    bool pending_cr;
} text_scan;

/* Check bytes [from, to) of @p buf; on the first byte no text file holds,
 * print the error and return CLI_USAGE. Bytes >= 0x80 are left to the
 * parsers, which name the line and column of malformed UTF-8. */
static int scan_text(text_scan *t, const char *path, const unsigned char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++, t->offset++) {
        unsigned char c = buf[i];
        if (t->pending_cr && c != '\n') {
            cli_error("%s: carriage return without a line feed at byte offset %zu (line %zu): "
                      "lines end with LF or CR LF; CR-only line endings are not read",
                      path, t->offset - 1, t->line);
            return CLI_USAGE;
        }
        t->pending_cr = c == '\r';
        if (c == '\n') {
            t->line++;
            t->column = 1;
            continue;
        }
        if (c == 0 || (c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) {
            if (c == 0)
                cli_error("%s: NUL byte at byte offset %zu (line %zu, column %zu): not a text "
                          "file", path, t->offset, t->line, t->column);
            else
                cli_error("%s: control byte 0x%02x at byte offset %zu (line %zu, column %zu): "
                          "not a text file", path, c, t->offset, t->line, t->column);
            return CLI_USAGE;
        }
        t->column++;
    }
    return CLI_OK;
}

static int too_large(const char *path, size_t cap)
{
    char buf[32];
    cli_error("%s: larger than the %s input cap (docs/cli.md)", path, cli_size_text(cap, buf));
    return CLI_USAGE;
}

/* Read in chunks, checking each as it arrives, so that /dev/zero or a
 * binary file stops at its first bad byte instead of filling memory. */
static int read_stream(FILE *f, const char *path, size_t cap, char **data, size_t *length)
{
    enum { CHUNK = 1 << 16 };
    size_t size = 0, len = 0;
    char *buf = NULL;
    text_scan t = {0, 1, 1, false};
    for (;;) {
        if (size - len < CHUNK + 1) {
            size_t grown = size ? size * 2 : CHUNK + 1;
            char *p = realloc(buf, grown);
            if (!p) {
                free(buf);
                cli_error("cannot read '%s': out of memory", path);
                return CLI_USAGE;
            }
            buf = p;
            size = grown;
        }
        size_t n = fread(buf + len, 1, CHUNK, f);
        if (ferror(f)) {
            cli_error("cannot read '%s': %s", path, strerror(errno));
            free(buf);
            return CLI_USAGE;
        }
        if (scan_text(&t, path, (const unsigned char *)buf + len, n) != CLI_OK) {
            free(buf);
            return CLI_USAGE;
        }
        len += n;
        if (len > cap) {
            free(buf);
            return too_large(path, cap);
        }
        if (n == 0 || feof(f))
            break;
    }
    if (t.pending_cr) {
        /* a file ending in CR without LF: the last line ends CR-only */
        free(buf);
        cli_error("%s: carriage return without a line feed at byte offset %zu (line %zu): "
                  "lines end with LF or CR LF; CR-only line endings are not read",
                  path, t.offset - 1, t.line);
        return CLI_USAGE;
    }
    /* A UTF-8 byte order mark (Windows editors write one) is not content:
     * every reader of the tool drops it, the same way. */
    if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0) {
        memmove(buf, buf + 3, len - 3);
        len -= 3;
    }
    buf[len] = '\0';
    *data = buf;
    *length = len;
    return CLI_OK;
}

int cli_read_file(const char *path, size_t cap, char **data, size_t *length)
{
    if (strcmp(path, "-") == 0)
        return read_stream(stdin, "standard input", cap, data, length);
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error("cannot open '%s': %s", path, strerror(errno));
        return CLI_USAGE;
    }
    /* A regular file's size is known before reading it. */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (uintmax_t)st.st_size > cap) {
        fclose(f);
        return too_large(path, cap);
    }
    int rc = read_stream(f, path, cap, data, length);
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

void cli_stream_init(cli_stream *s, const char *path)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    s->fd = -1;
}

/* The file the pieces go to: a temporary next to the path, or the path
 * itself when it is a device or pipe (as cli_write_atomic). */
static int stream_open(cli_stream *s)
{
    const char *path = s->path, *slash = strrchr(path, '/');
    if (path[0] == '\0' || (slash && slash[1] == '\0')) {
        cli_error("--output '%s': not a file name", path);
        s->usage = true;
        return -1;
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        s->fd = open(path, O_WRONLY);
        if (s->fd < 0)
            s->err = errno;
        return s->fd < 0 ? -1 : 0;
    }
    s->tmp = temp_template(path);
    if (!s->tmp) {
        s->err = ENOMEM;
        return -1;
    }
    s->fd = mkstemp(s->tmp);
    if (s->fd < 0) {
        cli_error("--output '%s': cannot create a temporary file next to it: %s", path,
                  strerror(errno));
        s->usage = true;
        free(s->tmp);
        s->tmp = NULL;
        return -1;
    }
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(s->fd, 0666 & ~mask) != 0) {
        s->err = errno;
        return -1;
    }
    return 0;
}

int cli_stream_write(void *stream, const char *data, size_t length)
{
    cli_stream *s = stream;
    if (s->err || s->usage)
        return -1;
    if (!s->path) {
        if (fwrite(data, 1, length, stdout) != length) {
            s->err = errno ? errno : EIO;
            return -1;
        }
        return 0;
    }
    if (s->fd < 0 && stream_open(s) != 0)
        return -1;
    if (write_all(s->fd, data, length) != 0) {
        s->err = errno;
        return -1;
    }
    s->written += length;
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    /* Start writing back what is written every 64 MiB, so the fsync at
     * the end waits for the last stretch only, not for the whole file: a
     * hint (its failure is fsync's to report). */
    if (s->tmp && s->written - s->synced >= ((uint64_t)64 << 20)) {
        (void)sync_file_range(s->fd, (off_t)s->synced, (off_t)(s->written - s->synced),
                              SYNC_FILE_RANGE_WRITE);
        s->synced = s->written;
    }
#endif
    return 0;
}

int cli_stream_finish(cli_stream *s, bool commit)
{
    if (!s->path) {
        if (commit && !s->err && fflush(stdout) != 0)
            s->err = errno;
        if (commit && s->err) {
            cli_error("cannot write to standard output: %s", strerror(s->err));
            return CLI_USAGE;
        }
        return CLI_OK;
    }
    if (commit && !s->err && !s->usage && s->fd < 0)
        stream_open(s); /* nothing was written: an empty file */
    if (commit && !s->err && !s->usage && s->tmp && fsync(s->fd) != 0)
        s->err = errno;
    if (s->fd >= 0 && close(s->fd) != 0 && !s->err)
        s->err = errno;
    s->fd = -1;
    if (commit && !s->err && !s->usage && s->tmp && rename(s->tmp, s->path) != 0)
        s->err = errno;
    bool failed = s->err || s->usage;
    if (s->tmp && (failed || !commit))
        unlink(s->tmp);
    free(s->tmp);
    s->tmp = NULL;
    if (commit && s->err && !s->usage)
        cli_error("--output '%s': cannot write: %s", s->path, strerror(s->err));
    return commit && failed ? CLI_USAGE : CLI_OK;
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
