/* Generator registry. Built-ins register through psched_register_generator,
 * exactly like a plug-in. Entries are heap copies that never move or go
 * away, so a pointer handed out stays valid while the list grows. */
#include "internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* builtins.def names each built-in by its file stem; the descriptor is
 * psched_gen_<stem>. */
#define PSCHED_BUILTIN(stem) extern const psched_generator psched_gen_##stem;
#include "builtins.def"
#undef PSCHED_BUILTIN

static const psched_generator *const builtins[] = {
#define PSCHED_BUILTIN(stem) &psched_gen_##stem,
#include "builtins.def"
#undef PSCHED_BUILTIN
};

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
/* The first entries live in static storage, so registering the built-ins
 * never allocates and cannot be lost to an allocation failure. */
#define FIXED_ENTRIES 64
static const psched_generator *fixed_entries[FIXED_ENTRIES];
static const psched_generator **entries = fixed_entries;
static size_t count, cap = FIXED_ENTRIES;

static psched_status add(const psched_generator *g, bool copy);

/* Runs once, before any other registry access; built-ins take the same
 * checks as a plug-in's descriptor, but need no copy: they are static. */
static void register_builtins(void)
{
    /* Built-ins are registered as they are (no copy): each states its
     * default_chunks (>= 1), as the registered copy of a plug-in's does. */
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
        (void)add(builtins[i], false);
}

void psched__registry_init(void)
{
    pthread_once(&once, register_builtins);
}

/* ASCII only: names must not change meaning with the locale. */
static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static bool same_name(const char *a, const char *b)
{
    for (; *a && lower(*a) == lower(*b); a++, b++)
        ;
    return lower(*a) == lower(*b);
}

/* Names and option keys: [a-z0-9-]; aliases also take capitals, since
 * they are other projects' class names ("Interleaved1F1B"). */
static psched_status check_word(const char *what, const char *gen, const char *word,
                                bool capitals)
{
    if (!word)
        return psched_fail(PSCHED_EINVAL, "%s of generator \"%s\" is NULL", what, gen);
    size_t n = strlen(word);
    if (n < 1 || n > 31)
        return psched_fail(PSCHED_EINVAL, "%s \"%.40s\" of generator \"%s\" must be 1..31 "
                                          "characters", what, word, gen);
    for (size_t i = 0; i < n; i++) {
        char c = word[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
              (capitals && c >= 'A' && c <= 'Z')))
            return psched_fail(PSCHED_EINVAL, "%s \"%s\" of generator \"%s\" may only use %s",
                               what, word, gen, capitals ? "[A-Za-z0-9-]" : "[a-z0-9-]");
    }
    return PSCHED_OK;
}

static psched_status check_name(const char *name)
{
    if (!name)
        return psched_fail(PSCHED_EINVAL, "generator name is NULL");
    size_t n = strlen(name);
    if (n < 1 || n > 31)
        return psched_fail(PSCHED_EINVAL, "generator name \"%.40s\" must be 1..31 characters", name);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return psched_fail(PSCHED_EINVAL, "generator name \"%s\" may only use [a-z0-9-]", name);
    }
    return PSCHED_OK;
}

/* Bounds that keep every list a descriptor points to small and finite. */
#define MAX_ALIASES 16
#define MAX_OPTIONS 32

static psched_status check_aliases(const psched_generator *g)
{
    if (!g->aliases)
        return PSCHED_OK;
    size_t n = 0;
    for (; g->aliases[n]; n++) {
        if (n == MAX_ALIASES)
            return psched_fail(PSCHED_EINVAL, "generator \"%s\" has more than %d aliases",
                               g->name, MAX_ALIASES);
        psched_status st = check_word("alias", g->name, g->aliases[n], true);
        if (st)
            return st;
        for (size_t j = 0; j < n; j++) {
            if (same_name(g->aliases[j], g->aliases[n]))
                return psched_fail(PSCHED_EINVAL, "generator \"%s\" lists alias \"%s\" twice",
                                   g->name, g->aliases[n]);
        }
    }
    return PSCHED_OK;
}

static psched_status check_options(const psched_generator *g)
{
    if (g->option_count > MAX_OPTIONS)
        return psched_fail(PSCHED_EINVAL, "generator \"%s\" option_count (%u) must be <= %d",
                           g->name, g->option_count, MAX_OPTIONS);
    if (g->option_count && !g->options)
        return psched_fail(PSCHED_EINVAL, "generator \"%s\" declares %u options but options is "
                                          "NULL", g->name, g->option_count);
    for (uint32_t i = 0; i < g->option_count; i++) {
        const psched_generator_option_desc *o = &g->options[i];
        psched_status st = check_word("option", g->name, o->name, false);
        if (st)
            return st;
        for (uint32_t j = 0; j < i; j++) {
            if (strcmp(g->options[j].name, o->name) == 0)
                return psched_fail(PSCHED_EINVAL, "generator \"%s\" declares option \"%s\" twice",
                                   g->name, o->name);
        }
        if (o->min > o->max)
            return psched_fail(PSCHED_EINVAL, "generator \"%s\" option \"%s\": min (%" PRId64
                                              ") must be <= max (%" PRId64 ")",
                               g->name, o->name, o->min, o->max);
        if (!(o->flags & PSCHED_OPTION_DEFAULT_FROM_PLAN) &&
            (o->default_value < o->min || o->default_value > o->max))
            return psched_fail(PSCHED_EINVAL, "generator \"%s\" option \"%s\": default (%" PRId64
                                              ") must be in [%" PRId64 ", %" PRId64 "]",
                               g->name, o->name, o->default_value, o->min, o->max);
        if (o->flags & ~(uint32_t)PSCHED_OPTION_DEFAULT_FROM_PLAN)
            return psched_fail(PSCHED_EINVAL, "generator \"%s\" option \"%s\": unknown flags "
                                              "0x%x", g->name, o->name, (unsigned)o->flags);
    }
    return PSCHED_OK;
}

static psched_status check_descriptor(const psched_generator *g)
{
    if (!g)
        return psched_fail(PSCHED_EINVAL, "generator descriptor is NULL");
    if (g->abi_version > PSCHED_GENERATOR_ABI || g->abi_version == 0)
        return psched_fail(PSCHED_EPLUGIN,
                           "generator abi_version (%u) is not supported: this library accepts 1..%u",
                           g->abi_version, PSCHED_GENERATOR_ABI);
    psched_status st = check_name(g->name);
    if (st)
        return st;
    if (!g->generate)
        return psched_fail(PSCHED_EINVAL, "generator \"%s\" has no generate function", g->name);
    if (g->placement < PSCHED_PLACEMENT_LOOP || g->placement > PSCHED_PLACEMENT_CUSTOM)
        return psched_fail(PSCHED_EINVAL, "generator \"%s\" placement (%d) must be loop, vshape "
                                          "or custom", g->name, (int)g->placement);
    if (g->chains > 2)
        return psched_fail(PSCHED_EINVAL, "generator \"%s\" chains (%u) must be 0, 1 or 2",
                           g->name, g->chains);
    if (g->default_chunks > PSCHED_MAX_CHUNKS)
        return psched_fail(PSCHED_EINVAL, "generator \"%s\" default_chunks (%u) must be <= %u",
                           g->name, g->default_chunks, PSCHED_MAX_CHUNKS);
    /* Only ABI 2 descriptors have the fields below; an ABI 1 copy has them
     * zeroed (see add). */
    if (g->abi_version >= 2) {
        st = check_aliases(g);
        if (!st)
            st = check_options(g);
    }
    return st;
}

/* Does entry e answer to `name` (its name or an alias, any case)? */
static bool answers_to(const psched_generator *e, const char *name)
{
    if (same_name(e->name, name))
        return true;
    for (size_t a = 0; e->aliases && e->aliases[a]; a++) {
        if (same_name(e->aliases[a], name))
            return true;
    }
    return false;
}

static const psched_generator *find_locked(const char *name)
{
    for (size_t i = 0; i < count; i++) {
        if (answers_to(entries[i], name))
            return entries[i];
    }
    return NULL;
}

/* A name or alias of g another entry already answers to (NULL: none).
 * g's own alias equal to its name ("1F1B" for 1f1b) is no conflict. */
static const char *taken_locked(const psched_generator *g)
{
    if (find_locked(g->name))
        return g->name;
    for (size_t a = 0; g->aliases && g->aliases[a]; a++) {
        if (find_locked(g->aliases[a]))
            return g->aliases[a];
    }
    return NULL;
}

psched_status psched_register_generator(const psched_generator *g)
{
    psched__registry_init();
    return add(g, true);
}

/* Bytes of the descriptor an ABI 1 plug-in passes: everything before the
 * fields ABI 2 appended. */
#define DESCRIPTOR_V1_SIZE offsetof(psched_generator, aliases)

static psched_status add(const psched_generator *g, bool copy)
{
    /* Read no byte beyond what the plug-in's header version declares. */
    psched_generator v1;
    if (g && g->abi_version == 1) {
        memset(&v1, 0, sizeof v1);
        memcpy(&v1, g, DESCRIPTOR_V1_SIZE);
        g = &v1;
        copy = true;
    }
    psched_status st = check_descriptor(g);
    if (st)
        return st;
    psched_generator *owned = NULL;
    if (copy) {
        owned = psched__malloc(sizeof *owned);
        if (!owned)
            return PSCHED_ENOMEM_FAIL();
        *owned = *g;
        /* 0 means 1 (psched_generate's rule), said once here so that no
         * caller re-derives it. */
        if (owned->default_chunks == 0)
            owned->default_chunks = 1;
        if (!owned->description)
            owned->description = "";
        if (!owned->constraints)
            owned->constraints = "";
    }
    pthread_rwlock_wrlock(&lock);
    const char *taken = taken_locked(g);
    if (taken) {
        pthread_rwlock_unlock(&lock);
        psched__dealloc(owned);
        if (taken == g->name)
            return psched_fail(PSCHED_EEXIST, "a generator named \"%s\" is already registered",
                               g->name);
        return psched_fail(PSCHED_EEXIST, "alias \"%s\" of generator \"%s\" is already a "
                                          "registered name or alias", taken, g->name);
    }
    if (count == cap) {
        size_t ncap = cap * 2;
        const psched_generator **e = psched__reallocarray(NULL, ncap, sizeof *e);
        if (!e) {
            pthread_rwlock_unlock(&lock);
            psched__dealloc(owned);
            return PSCHED_ENOMEM_FAIL();
        }
        memcpy(e, entries, count * sizeof *e);
        if (entries != fixed_entries)
            psched__dealloc((void *)entries);
        entries = e;
        cap = ncap;
    }
    entries[count++] = owned ? owned : g;
    pthread_rwlock_unlock(&lock);
    return PSCHED_OK;
}

psched_status psched_generator_find(const char *name, const psched_generator **out)
{
    if (!name || !out)
        return psched_fail(PSCHED_EINVAL, "generator name or output pointer is NULL");
    psched__registry_init();
    pthread_rwlock_rdlock(&lock);
    const psched_generator *g = find_locked(name);
    if (g) {
        pthread_rwlock_unlock(&lock);
        *out = g;
        return PSCHED_OK;
    }
    char known[512] = "";
    size_t at = 0;
    for (size_t i = 0; i < count && at < sizeof known; i++)
        at += (size_t)snprintf(known + at, sizeof known - at, "%s%s", i ? ", " : "",
                               entries[i]->name);
    pthread_rwlock_unlock(&lock);
    return psched_fail(PSCHED_ENOTFOUND, "unknown schedule \"%.64s\"; known: %s", name, known);
}

size_t psched_generator_count(void)
{
    psched__registry_init();
    pthread_rwlock_rdlock(&lock);
    size_t n = count;
    pthread_rwlock_unlock(&lock);
    return n;
}

const psched_generator *psched_generator_at(size_t index)
{
    psched__registry_init();
    pthread_rwlock_rdlock(&lock);
    const psched_generator *g = index < count ? entries[index] : NULL;
    pthread_rwlock_unlock(&lock);
    return g;
}

psched_status psched_generator_alias(const char *generator, size_t index, const char **alias)
{
    if (!alias)
        return psched_fail(PSCHED_EINVAL, "alias output pointer is NULL");
    *alias = NULL;
    const psched_generator *g;
    psched_status st = psched_generator_find(generator, &g);
    if (st)
        return st;
    for (size_t a = 0; g->aliases && g->aliases[a]; a++) {
        if (a == index) {
            *alias = g->aliases[a];
            break;
        }
    }
    return PSCHED_OK;
}

psched_status psched_generator_option_count(const char *generator, size_t *count_out)
{
    if (!count_out)
        return psched_fail(PSCHED_EINVAL, "option count output pointer is NULL");
    *count_out = 0;
    const psched_generator *g;
    psched_status st = psched_generator_find(generator, &g);
    if (st)
        return st;
    *count_out = g->option_count;
    return PSCHED_OK;
}

psched_status psched_generator_option(const char *generator, size_t index,
                                      psched_option_info *info)
{
    if (!info)
        return psched_fail(PSCHED_EINVAL, "option info pointer is NULL");
    if (info->version != PSCHED_OPTION_INFO_VERSION)
        return psched_fail(PSCHED_EINVAL, "option info version (%u) must be %u",
                           info->version, PSCHED_OPTION_INFO_VERSION);
    const psched_generator *g;
    psched_status st = psched_generator_find(generator, &g);
    if (st)
        return st;
    if (index >= g->option_count)
        return psched_fail(PSCHED_ENOTFOUND, "option index (%zu) must be < %u, the options "
                           "generator \"%s\" declares", index, g->option_count, g->name);
    const psched_generator_option_desc *o = &g->options[index];
    info->flags = o->flags;
    info->name = o->name;
    info->description = o->description ? o->description : "";
    info->min = o->min;
    info->max = o->max;
    info->default_value = o->default_value;
    return PSCHED_OK;
}
