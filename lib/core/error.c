/* Status names and the thread-local error detail (libgit2's git_error_last). */
#include "internal.h"

#include <stdio.h>

static _Thread_local char last_error[1024];

psched_status psched__vfail(psched_status status, const char *fmt, va_list ap)
{
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    return status;
}

psched_status psched_fail(psched_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    psched__vfail(status, fmt, ap);
    va_end(ap);
    return status;
}

const char *psched_last_error(void)
{
    return last_error;
}

const char *psched_status_str(psched_status status)
{
    switch (status) {
    case PSCHED_OK: return "PSCHED_OK";
    case PSCHED_EINVAL: return "PSCHED_EINVAL";
    case PSCHED_ENOMEM: return "PSCHED_ENOMEM";
    case PSCHED_ENOTFOUND: return "PSCHED_ENOTFOUND";
    case PSCHED_EINFEASIBLE: return "PSCHED_EINFEASIBLE";
    case PSCHED_EINVALID: return "PSCHED_EINVALID";
    case PSCHED_EDEADLOCK: return "PSCHED_EDEADLOCK";
    case PSCHED_EPARSE: return "PSCHED_EPARSE";
    case PSCHED_EIO: return "PSCHED_EIO";
    case PSCHED_EPLUGIN: return "PSCHED_EPLUGIN";
    case PSCHED_EUNSUPPORTED: return "PSCHED_EUNSUPPORTED";
    case PSCHED_ESOLVER: return "PSCHED_ESOLVER";
    case PSCHED_EEXIST: return "PSCHED_EEXIST";
    }
    return "PSCHED_UNKNOWN";
}

const char *psched_version(void)
{
    return PSCHED_VERSION_STRING;
}
