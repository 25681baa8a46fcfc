/* status.c — the thread-local one-line error detail behind fp4_error(). */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char fp4_err_buf[1024];

fp4_status fp4_error(fp4_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fp4_err_buf, sizeof fp4_err_buf, fmt, ap);
    va_end(ap);
    return st;
}

const char *fp4_last_error(void) { return fp4_err_buf; }

void fp4_error_clear(void) { fp4_err_buf[0] = '\0'; }
