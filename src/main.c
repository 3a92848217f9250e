/* main: the command line. Parses arguments and hands over to the host;
 * subcommands other than run/repl/version/help are Lua modules
 * (lua/luagent/cli/NAME.lua). Exit status: 0 ok, 1 the recipe failed,
 * 2 bad usage, 128+N stopped by signal N. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

static const char USAGE[] =
    "usage: luagent <command> [options]\n"
    "\n"
    "  run RECIPE.lua [--set key=value]... [-- args]   run a recipe\n"
    "      --set key=value   a setting (dotted keys nest; values typed like YAML)\n"
    "      --lua-path DIR    load the luagent Lua library from DIR instead of the binary\n"
    "      --record FILE     save the model exchanges of this run\n"
    "      --replay FILE     answer model calls from a recording (no network)\n"
    "      -q, --quiet       no live view      --json   events as JSON lines\n"
    "  sandbox build [--offline] | ls | prune            the sandbox image; leftover sandboxes\n"
    "  trace show|html TRACE.jsonl                       read a run's trace\n"
    "  doctor                                            check Docker, the image and API keys\n"
    "  repl                                              a Lua prompt with every primitive loaded\n"
    "  version                                           print the version\n"
    "\n"
    "Environment: LUAGENT_PATH (like --lua-path), DOCKER_HOST, OPENAI_API_KEY,\n"
    "OPENAI_BASE_URL, ANTHROPIC_API_KEY.\n";

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "luagent: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, " (see 'luagent help')\n");
  return 2;
}

typedef struct cli {
  host_options opts;
  char **settings;
  char **args;
} cli;

/* Parses `run` arguments into c->opts. Returns 0, or an exit status. */
static int parse_run(cli *c, int argc, char **argv) {
  host_options *o = &c->opts;
  c->settings = calloc((size_t)argc + 1, sizeof(char *));
  c->args = calloc((size_t)argc + 1, sizeof(char *));
  o->settings = c->settings;
  o->argv = c->args;
  int rest = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    int has_value = i + 1 < argc;
    if (rest || a[0] != '-' || strcmp(a, "-") == 0) {
      if (!o->script_path && !rest)
        o->script_path = a;
      else
        o->argv[o->argc++] = argv[i];
    } else if (strcmp(a, "--") == 0) {
      rest = 1;
    } else if (strcmp(a, "--set") == 0 || strcmp(a, "-s") == 0) {
      if (!has_value) return usage_error("%s needs key=value", a);
      const char *kv = argv[++i];
      const char *eq = strchr(kv, '=');
      if (!eq || eq == kv) return usage_error("--set '%s' is not key=value", kv);
      o->settings[o->nsettings++] = argv[i];
    } else if (strncmp(a, "--set=", 6) == 0) {
      const char *eq = strchr(a + 6, '=');
      if (!eq || eq == a + 6) return usage_error("--set '%s' is not key=value", a + 6);
      o->settings[o->nsettings++] = argv[i] + 6;
    } else if (strcmp(a, "--lua-path") == 0) {
      if (!has_value) return usage_error("%s needs a directory", a);
      o->lua_dir = argv[++i];
    } else if (strcmp(a, "--record") == 0 || strcmp(a, "--replay") == 0) {
      if (!has_value) return usage_error("%s needs a file", a);
      if (a[3] == 'e' && a[4] == 'c') o->record = argv[++i];
      else o->replay = argv[++i];
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      o->quiet = 1;
    } else if (strcmp(a, "--json") == 0) {
      o->json = 1;
    } else {
      return usage_error("unknown option '%s'", a);
    }
  }
  if (!o->script_path) return usage_error("%s", "run needs a recipe file, e.g. 'luagent run recipes/energy_anomaly.lua'");
  if (access(o->script_path, R_OK) != 0) {
    fprintf(stderr, "luagent: cannot open recipe '%s': %s\n", o->script_path, strerror(errno));
    return 2;
  }
  return 0;
}

static host *make_host(host_options *o) {
  if (!o->lua_dir) {
    const char *env = getenv("LUAGENT_PATH");
    if (env && *env) o->lua_dir = env;
  }
  char err[512];
  host *h = host_new(o, err, sizeof err);
  if (!h) fprintf(stderr, "luagent: %s\n", err);
  else host_install_signal_handlers(h);
  return h;
}

static int cmd_run(int argc, char **argv) {
  cli c;
  memset(&c, 0, sizeof c);
  int rc = parse_run(&c, argc, argv);
  if (rc == 0) {
    host *h = make_host(&c.opts);
    rc = h ? host_run_file(h, c.opts.script_path) : 1;
    host_free(h);
  }
  free(c.settings);
  free(c.args);
  return rc;
}

static int cmd_module(const char *module, int argc, char **argv) {
  host_options o;
  memset(&o, 0, sizeof o);
  host *h = make_host(&o);
  if (!h) return 1;
  int rc = host_run_module(h, module, argc, argv);
  host_free(h);
  return rc;
}

static int cmd_repl(void) {
  host_options o;
  memset(&o, 0, sizeof o);
  host *h = make_host(&o);
  if (!h) return 1;
  int rc = host_repl(h);
  host_free(h);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(USAGE, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "run") == 0) return cmd_run(argc - 2, argv + 2);
  if (strcmp(cmd, "repl") == 0) return cmd_repl();
  if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
    printf("luagent %s\n", LUAGENT_VERSION);
    return 0;
  }
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
    fputs(USAGE, stdout);
    return 0;
  }
  if (strcmp(cmd, "sandbox") == 0) return cmd_module("luagent.cli.sandbox", argc - 2, argv + 2);
  if (strcmp(cmd, "doctor") == 0) return cmd_module("luagent.cli.doctor", argc - 2, argv + 2);
  if (strcmp(cmd, "meta") == 0) return cmd_module("luagent.cli.meta", argc - 2, argv + 2);
  if (strcmp(cmd, "trace") == 0) return cmd_module("luagent.cli.trace", argc - 2, argv + 2);
  return usage_error("unknown command '%s'", cmd);
}
