/* A shared module that is not a pipesched plug-in: it exports a function,
 * but not psched_plugin_init. Loading it must fail with EPLUGIN. */
#include "pipesched.h"

PSCHED_API int not_a_plugin_init(void);

int not_a_plugin_init(void)
{
    return 0;
}
