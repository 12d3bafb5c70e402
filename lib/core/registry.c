/* Generator registry. Built-ins register through psched_register_generator,
 * exactly like a plug-in. Entries are heap copies that never move or go
 * away, so a pointer handed out stays valid while the list grows. */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define PSCHED_BUILTIN(sym) extern const psched_generator sym;
#include "builtins.def"
#undef PSCHED_BUILTIN

static const psched_generator *const builtins[] = {
#define PSCHED_BUILTIN(sym) &sym,
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
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
        (void)add(builtins[i], false);
}

void psched__registry_init(void)
{
    pthread_once(&once, register_builtins);
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
    return PSCHED_OK;
}

static const psched_generator *find_locked(const char *name)
{
    for (size_t i = 0; i < count; i++) {
        if (strcmp(entries[i]->name, name) == 0)
            return entries[i];
    }
    return NULL;
}

psched_status psched_register_generator(const psched_generator *g)
{
    psched__registry_init();
    return add(g, true);
}

static psched_status add(const psched_generator *g, bool copy)
{
    psched_status st = check_descriptor(g);
    if (st)
        return st;
    psched_generator *owned = NULL;
    if (copy) {
        owned = psched__malloc(sizeof *owned);
        if (!owned)
            return PSCHED_ENOMEM_FAIL();
        *owned = *g;
        if (!owned->description)
            owned->description = "";
        if (!owned->constraints)
            owned->constraints = "";
    }
    pthread_rwlock_wrlock(&lock);
    if (find_locked(g->name)) {
        pthread_rwlock_unlock(&lock);
        psched__dealloc(owned);
        return psched_fail(PSCHED_EEXIST, "a generator named \"%s\" is already registered", g->name);
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
