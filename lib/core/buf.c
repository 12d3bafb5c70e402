/* Growable text buffer used by the exporters. An allocation failure latches
 * so writers can append freely and check once at the end. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void psched__buf_append(psched_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) {
            if (cap > SIZE_MAX / 2) {
                b->failed = true;
                return;
            }
            cap *= 2;
        }
        char *d = psched__realloc(b->data, cap);
        if (!d) {
            b->failed = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void psched__buf_puts(psched_buf *b, const char *s)
{
    psched__buf_append(b, s, strlen(s));
}

void psched__buf_printf(psched_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        psched__buf_append(b, small, (size_t)n);
        return;
    }
    char *big = psched__malloc((size_t)n + 1);
    if (!big) {
        b->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    psched__buf_append(b, big, (size_t)n);
    psched__dealloc(big);
}

psched_status psched__buf_finish(psched_buf *b, char **text, size_t *length)
{
    if (!b->failed && !b->data)
        psched__buf_append(b, "", 0);
    if (b->failed) {
        psched__dealloc(b->data);
        b->data = NULL;
        return PSCHED_ENOMEM_FAIL();
    }
    *text = b->data;
    if (length)
        *length = b->len;
    b->data = NULL;
    return PSCHED_OK;
}

void psched__buf_json_num(psched_buf *b, double x)
{
    if (isfinite(x))
        psched__buf_printf(b, "%.17g", x == 0 ? 0.0 : x); /* no "-0" */
    else
        psched__buf_puts(b, "null");
}

void psched__buf_json_str(psched_buf *b, const char *s)
{
    psched__buf_append(b, "\"", 1);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            char esc[2] = {'\\', (char)ch};
            psched__buf_append(b, esc, 2);
        } else if (ch < 0x20) {
            psched__buf_printf(b, "\\u%04x", ch);
        } else {
            psched__buf_append(b, s, 1);
        }
    }
    psched__buf_append(b, "\"", 1);
}
