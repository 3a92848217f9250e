/* luagent-supervisor: the only program that runs commands inside a luagent
 * sandbox session. A static binary with no dependency on the image; see
 * DESIGN.md beside this file.
 *   luagent-supervisor init                PID 1 of the session (init.h)
 *   luagent-supervisor serve [UID:GID [NPROC [DROP_ENV_PREFIX]]]  the command server (serve.h)
 *   luagent-supervisor pack PATH [MAX_BYTES [MAX_ENTRIES]]   a tar of PATH on stdout (pack.h)
 *   luagent-supervisor unpack DIR [MAX_BYTES]   a tar on stdin extracted under DIR (unpack.h)
 *   luagent-supervisor egress PORT         the relay of sandbox connections to the host (egress.h)
 *   luagent-supervisor version */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"
#include "frames.h"
#include "init.h"
#include "pack.h"
#include "serve.h"
#include "unpack.h"

/* A byte count: decimal digits only; -1 otherwise. */
static long long byte_count(const char *s) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  return *s >= '0' && *s <= '9' && !*end && errno == 0 ? v : -1;
}

static int usage(void) {
  fprintf(stderr, "usage: luagent-supervisor init | serve [UID:GID [NPROC [DROP_ENV_PREFIX]]] | pack PATH [MAX_BYTES [MAX_ENTRIES]]"
                  " | unpack DIR [MAX_BYTES] | egress PORT | version\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  const char *mode = argv[1];
  if (strcmp(mode, "init") == 0) return init_main();
  if (strcmp(mode, "serve") == 0) return serve_main(argc > 2 ? argv[2] : NULL, argc > 3 ? atol(argv[3]) : 0, argc > 4 ? argv[4] : NULL);
  if (strcmp(mode, "pack") == 0 && argc > 2) {
    pack_spec spec = {argv[2], argc > 3 ? atoll(argv[3]) : 0, argc > 4 ? atoll(argv[4]) : 0};
    return pack_main(&spec);
  }
  if (strcmp(mode, "unpack") == 0 && (argc == 3 || argc == 4)) {
    long long max = argc == 4 ? byte_count(argv[3]) : 0;
    if (max >= 0) return unpack_main(argv[2], max);
  }
  if (strcmp(mode, "egress") == 0 && argc == 3) return egress_main(argv[2]);
  if (strcmp(mode, "version") == 0) {
    printf("luagent-supervisor protocol %s\n", SV_VERSION);
    return 0;
  }
  return usage();
}
