/* embedded: the Lua library (as bytecode) and the sandbox image files, compiled into the
 * binary by tools/embed.sh (build/embedded.c), so an installed luagent is
 * one self-contained file. */
#ifndef LUAGENT_EMBEDDED_H
#define LUAGENT_EMBEDDED_H

#include <stddef.h>

typedef struct embedded_file {
  const char *name; /* module name ("luagent.agent") or asset path ("sandbox/Dockerfile") */
  const char *path; /* source path, for chunk names in tracebacks */
  const unsigned char *data;
  size_t size;
} embedded_file;

extern const embedded_file luagent_modules[]; /* ends with a NULL name */
extern const embedded_file luagent_assets[];

#endif
