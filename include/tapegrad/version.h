/* tapegrad/version.h - the library's version and the backends it was built
 * with. */
#ifndef TAPEGRAD_VERSION_H
#define TAPEGRAD_VERSION_H

#ifdef __cplusplus
extern "C" {
#endif

#define TG_VERSION_MAJOR 0
#define TG_VERSION_MINOR 1
#define TG_VERSION_PATCH 0
#define TG_VERSION_STRING "0.1.0"

/* The library's version string ("0.1.0"); may differ from TG_VERSION_STRING
 * when a program runs against a newer shared library. */
const char *tg_lib_version(void);

/* "cpu" or "cpu+cuda": the backends this build of the library contains. */
const char *tg_build_backends(void);

#ifdef __cplusplus
}
#endif
#endif
