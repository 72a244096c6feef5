/*
 * st.c — status messages, process-wide set-up of GSL (and curl when linked), version, st_free.
 * Not a logging facility: the library never prints.
 */
#include "common/st.h"

#include <gsl/gsl_errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef ST_HAVE_CURL
#include <curl/curl.h>
#endif

const char *st_strerror(st_status s)
{
    switch (s) {
    case ST_OK:
        return "success";
    case ST_EINVAL:
        return "invalid argument";
    case ST_ENOMEM:
        return "out of memory";
    case ST_EIO:
        return "input/output error";
    case ST_ENUMERIC:
        return "numerical failure";
    case ST_ENOTFOUND:
        return "not found";
    case ST_ESTATE:
        return "invalid state for this call";
    case ST_EFORMAT:
        return "malformed data";
    case ST_ERANGE:
        return "value out of range";
    case ST_EUNSUPPORTED:
        return "not supported";
    case ST_EDB:
        return "database error";
    case ST_EBACKEND:
        return "backend error";
    case ST_ETIMEOUT:
        return "timed out";
    case ST_EBUSY:
        return "resource busy";
    case ST_ENOSPC:
        return "no space left on device";
    case ST_EINTERNAL:
        return "internal error";
    case ST_EEMPTY:
        return "not enough data";
    case ST_ENETWORK:
        return "network error";
    }
    return "unknown status";
}

st_status st_global_init(void)
{
    gsl_set_error_handler_off();
#ifdef ST_HAVE_CURL
    if (curl_global_init(CURL_GLOBAL_ALL) != CURLE_OK)
        return ST_EINTERNAL;
#endif
    return ST_OK;
}

void st_global_cleanup(void)
{
#ifdef ST_HAVE_CURL
    curl_global_cleanup();
#endif
}

const char *st_version(void)
{
#define ST_STR2(x) #x
#define ST_STR(x)  ST_STR2(x)
    return ST_STR(ST_VERSION_MAJOR) "." ST_STR(ST_VERSION_MINOR) "." ST_STR(ST_VERSION_PATCH);
}

void st_free(void *p)
{
    free(p);
}

st_status st_errf(char *buf, st_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, ST_ERRMSG_MAX, fmt, ap);
    va_end(ap);
    return s;
}
