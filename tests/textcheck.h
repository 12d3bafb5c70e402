/* Strict syntax checkers for the text exports, shared by the tests (their
 * own test: test_checkers_reject_malformed_text in test_exports.c): JSON
 * (RFC 8259 grammar, no extensions) and XML well-formedness (elements,
 * attributes, entities). Enough to know that Python's json module,
 * Perfetto and an SVG viewer accept what we write, with no dependency. */
#ifndef PSCHED_TEXTCHECK_H
#define PSCHED_TEXTCHECK_H

#include <ctype.h>
#include <stddef.h>
#include <string.h>

/* ---- strict JSON checker (RFC 8259 grammar, no extensions) ---- */

static inline const char *json_value(const char *p, int depth);

static inline const char *json_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static inline const char *json_string(const char *p)
{
    if (*p++ != '"')
        return NULL;
    for (; *p != '"'; p++) {
        if ((unsigned char)*p < 0x20)
            return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int k = 1; k <= 4; k++)
                    if (!isxdigit((unsigned char)p[k]))
                        return NULL;
                p += 4;
            } else if (!strchr("\"\\/bfnrt", *p) || !*p) {
                return NULL;
            }
        }
    }
    return p + 1;
}

static inline const char *json_number(const char *p)
{
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (isdigit((unsigned char)*p))
        while (isdigit((unsigned char)*p))
            p++;
    else
        return NULL;
    if (*p == '.') {
        if (!isdigit((unsigned char)*++p))
            return NULL;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return NULL;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return p;
}

/* Object or array: members separated by ',' with nothing after the last. */
static inline const char *json_container(const char *p, int depth, char close)
{
    p = json_ws(p + 1);
    if (*p == close)
        return p + 1;
    for (;;) {
        p = json_ws(p);
        if (close == '}') {
            p = json_string(p);
            if (!p || *(p = json_ws(p)) != ':')
                return NULL;
            p++;
        }
        p = json_value(p, depth + 1);
        if (!p)
            return NULL;
        p = json_ws(p);
        if (*p == close)
            return p + 1;
        if (*p != ',')
            return NULL;
        p++;
    }
}

static inline const char *json_value(const char *p, int depth)
{
    p = json_ws(p);
    if (depth > 64)
        return NULL;
    switch (*p) {
    case '{': return json_container(p, depth, '}');
    case '[': return json_container(p, depth, ']');
    case '"': return json_string(p);
    case 't': return strncmp(p, "true", 4) ? NULL : p + 4;
    case 'f': return strncmp(p, "false", 5) ? NULL : p + 5;
    case 'n': return strncmp(p, "null", 4) ? NULL : p + 4;
    default: return json_number(p);
    }
}

static inline int json_valid(const char *text)
{
    const char *end = text ? json_value(text, 0) : NULL;
    return end && *json_ws(end) == '\0';
}

/* ---- XML well-formedness checker (elements, attributes, entities) ---- */

static inline const char *xml_name(const char *p)
{
    if (!isalpha((unsigned char)*p) && *p != '_' && *p != ':')
        return NULL;
    while (isalnum((unsigned char)*p) || strchr("_:-.", *p))
        p++;
    return p;
}

/* Character data or an attribute value up to `stop`: no '<', every '&'
 * a known entity or a character reference. */
static inline const char *xml_chars(const char *p, char stop)
{
    for (; *p && *p != stop; p++) {
        if (*p == '<' && stop != '<')
            return NULL;
        if (*p != '&')
            continue;
        static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
        size_t k, n = 0;
        for (k = 0; k < 5 && !n; k++)
            if (strncmp(p, ents[k], strlen(ents[k])) == 0)
                n = strlen(ents[k]);
        if (!n && p[1] == '#') {
            const char *q = p + 2 + (p[2] == 'x');
            while (isxdigit((unsigned char)*q))
                q++;
            n = (*q == ';' && q > p + 2) ? (size_t)(q - p) + 1 : 0;
        }
        if (!n)
            return NULL;
        p += n - 1;
    }
    return p;
}

/* Start tag after '<': name and attributes; *empty says "/>". */
static inline const char *xml_start_tag(const char *p, const char **name, size_t *len, int *empty)
{
    const char *e = xml_name(p);
    if (!e)
        return NULL;
    *name = p;
    *len = (size_t)(e - p);
    for (p = e;;) {
        const char *q = json_ws(p);
        if (*q == '>' || (q[0] == '/' && q[1] == '>')) {
            *empty = *q == '/';
            return q + 1 + *empty;
        }
        if (q == p || !(e = xml_name(q)))
            return NULL;
        p = json_ws(e);
        if (*p++ != '=' || (*(p = json_ws(p)) != '"' && *p != '\''))
            return NULL;
        char quote = *p;
        p = xml_chars(p + 1, quote);
        if (!p || *p++ != quote)
            return NULL;
    }
}

static inline int xml_well_formed(const char *p)
{
    const char *stack[64];
    size_t lens[64];
    int depth = 0, roots = 0;
    if (!p)
        return 0;
    if (strncmp(p, "<?xml", 5) == 0) {
        p = strstr(p, "?>");
        if (!p)
            return 0;
        p += 2;
    }
    while (*p) {
        if (*p != '<') {
            if (depth == 0 && !isspace((unsigned char)*p))
                return 0;
            if (!(p = xml_chars(p, '<')))
                return 0;
        } else if (strncmp(p, "<!--", 4) == 0) {
            if (!(p = strstr(p + 4, "-->")))
                return 0;
            p += 3;
        } else if (p[1] == '/') {
            if (depth == 0 || strncmp(p + 2, stack[depth - 1], lens[depth - 1]) != 0)
                return 0;
            p = json_ws(p + 2 + lens[--depth]);
            if (*p++ != '>')
                return 0;
        } else {
            const char *name;
            size_t len;
            int empty;
            if (depth == 0 && roots++)
                return 0;
            if (!(p = xml_start_tag(p + 1, &name, &len, &empty)) || depth == 64)
                return 0;
            if (!empty)
                stack[depth] = name, lens[depth++] = len;
        }
    }
    return depth == 0 && roots == 1;
}

#endif
