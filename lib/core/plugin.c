/* Plug-in loading: dlopen a shared object and run its init symbol, which
 * registers generators through the public interface. */
#include "internal.h"

#include <dlfcn.h>
#include <stdio.h>

psched_status psched_plugin_load(const char *path)
{
    if (!path || !*path)
        return psched_fail(PSCHED_EINVAL, "plug-in path is NULL or empty");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return psched_fail(PSCHED_EPLUGIN, "cannot load plug-in \"%s\": %s", path,
                           why ? why : "unknown dlopen error");
    }
    psched_plugin_init_fn init;
    /* POSIX allows converting dlsym's object pointer to a function pointer. */
    *(void **)&init = dlsym(h, PSCHED_PLUGIN_INIT_SYMBOL);
    if (!init) {
        dlclose(h);
        return psched_fail(PSCHED_EPLUGIN, "plug-in \"%s\" does not export %s", path,
                           PSCHED_PLUGIN_INIT_SYMBOL);
    }
    psched__registry_init();
    psched_status st = init();
    if (st) {
        /* Generators it registered before failing stay valid, so the object stays loaded. */
        char detail[700];
        snprintf(detail, sizeof detail, "%s", psched_last_error());
        return psched_fail(PSCHED_EPLUGIN, "plug-in \"%s\" init failed with %s: %s", path,
                           psched_status_str(st), detail);
    }
    return PSCHED_OK;
}
