/* main: the command line. Parses arguments by name from tables and hands
 * over to the host; subcommands other than run/repl/version are Lua modules
 * (lua/luagent/cli/NAME.lua). The help texts (the usage summary, each
 * command's page, the man page) are lua/luagent/cli/help_pages.lua, printed
 * by luagent.cli.help: `luagent help [TOPIC]`, `luagent COMMAND --help`.
 * Exit status: 0 ok, 1 the recipe failed, 2 bad usage, 128+N stopped by
 * signal N (130 also when tasks did not stop after Ctrl-C). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"

/* Prints "luagent: <message> (see 'luagent help')"; returns the usage status 2. */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "luagent: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (see 'luagent help')\n");
  va_end(ap);
  return 2;
}

/* ---- options of `run` ---- */

/* Each setter stores an option's value (NULL for a flag) in the host
 * options; returns 0, or an exit status. */
static int set_setting(host_options *o, char *value) {
  const char *eq = strchr(value, '=');
  if (!eq || eq == value) return usage_error("--set '%s' is not key=value", value);
  o->settings[o->nsettings++] = value;
  return 0;
}

static int set_lua_dir(host_options *o, char *value) {
  o->lua_dir = value;
  return 0;
}

static int set_record(host_options *o, char *value) {
  o->record = value;
  return 0;
}

static int set_replay(host_options *o, char *value) {
  o->replay = value;
  return 0;
}

static int set_cache(host_options *o, char *value) {
  (void)value;
  o->cache = "on";
  return 0;
}

static int set_cache_refresh(host_options *o, char *value) {
  (void)value;
  o->cache = "refresh";
  return 0;
}

static int set_no_cache(host_options *o, char *value) {
  (void)value;
  o->cache = "off";
  return 0;
}

static int set_quiet(host_options *o, char *value) {
  (void)value;
  o->quiet = 1;
  return 0;
}

static int set_json(host_options *o, char *value) {
  (void)value;
  o->json = 1;
  return 0;
}

static int set_yes(host_options *o, char *value) {
  (void)value;
  o->yes = 1;
  return 0;
}

/* --watch is seen by cmd_run, which hands the run over to the watcher. */
static int set_watch(host_options *o, char *value) {
  (void)o, (void)value;
  return 0;
}

/* An option: its name, what its value is (for "NAME needs ..."; NULL for
 * a flag that takes none) and what it sets. A value follows as the next
 * argument, or after '=' for a long option (--set=key=value). A flag's name
 * may hold its '=' form whole (--cache=refresh). */
typedef struct run_option {
  const char *name;
  const char *value;
  int (*set)(host_options *o, char *value);
} run_option;

static const run_option RUN_OPTIONS[] = {
    {"--set", "key=value", set_setting},       {"-s", "key=value", set_setting},
    {"--lua-path", "a directory", set_lua_dir}, {"--record", "a file", set_record},
    {"--replay", "a file", set_replay},         {"-q", NULL, set_quiet},
    {"--quiet", NULL, set_quiet},               {"--json", NULL, set_json},
    {"--watch", NULL, set_watch},               {"--yes", NULL, set_yes},
    {"--cache", NULL, set_cache},               {"--cache=refresh", NULL, set_cache_refresh},
    {"--no-cache", NULL, set_no_cache},
};

/* The option `arg` names, or NULL; *inline_value is what follows '=' in
 * "--name=value" (NULL when there is no '='). */
static const run_option *find_option(char *arg, char **inline_value) {
  char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
  size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
  *inline_value = eq ? eq + 1 : NULL;
  for (size_t i = 0; eq && i < sizeof RUN_OPTIONS / sizeof RUN_OPTIONS[0]; i++) {
    if (strcmp(RUN_OPTIONS[i].name, arg) != 0) continue;
    *inline_value = NULL; /* a flag named with its value: --cache=refresh */
    return &RUN_OPTIONS[i];
  }
  for (size_t i = 0; i < sizeof RUN_OPTIONS / sizeof RUN_OPTIONS[0]; i++) {
    const run_option *opt = &RUN_OPTIONS[i];
    if (strlen(opt->name) != len || strncmp(opt->name, arg, len) != 0) continue;
    return eq && !opt->value ? NULL : opt; /* a flag takes no '=value' */
  }
  return NULL;
}

typedef struct cli {
  host_options opts;
  char **settings;
  char **args;
} cli;

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && strcmp(s + n - m, tail) == 0;
}

/* PATH with its .yaml/.yml/.lua ending (if any) replaced by .lua, in out. */
static void lua_path_of(const char *path, char *out, size_t n) {
  size_t len = strlen(path);
  const char *tails[] = {".yaml", ".yml", ".lua"};
  for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
    if (ends_with(path, tails[i])) {
      len -= strlen(tails[i]);
      break;
    }
  }
  snprintf(out, n, "%.*s.lua", (int)len, path);
}

/* A recipe named without its .lua, or by its settings file: the recipe
 * that is there, said as the command to run. */
static void say_recipe_hint(const char *path) {
  char lua[4096];
  lua_path_of(path, lua, sizeof lua);
  if (strcmp(lua, path) != 0 && access(lua, R_OK) == 0)
    fprintf(stderr, "luagent: did you mean 'luagent run %s'?\n", lua);
}

/* A recipe's YAML is its settings, not a recipe: the .lua beside it runs,
 * and reads it. An eval spec (NAME.eval.yaml) is run by luagent eval. */
static int yaml_given(const char *path) {
  if (ends_with(path, ".eval.yaml")) {
    fprintf(stderr, "luagent: %s is an eval spec: run it with 'luagent eval %s'\n", path, path);
    return 2;
  }
  char lua[4096];
  lua_path_of(path, lua, sizeof lua);
  if (access(lua, R_OK) == 0)
    fprintf(stderr, "luagent: %s holds a recipe's settings; run the recipe, which reads it: 'luagent run %s'\n", path, lua);
  else
    fprintf(stderr, "luagent: %s is a YAML file, not a recipe: a recipe is a .lua file (luagent new NAME writes one)\n", path);
  return 2;
}

/* Parses `run` arguments into c->opts. Returns 0, or an exit status. */
static int parse_run(cli *c, int argc, char **argv) {
  host_options *o = &c->opts;
  c->settings = calloc((size_t)argc + 1, sizeof(char *));
  c->args = calloc((size_t)argc + 1, sizeof(char *));
  o->settings = c->settings;
  o->argv = c->args;
  int rest = 0;
  for (int i = 0; i < argc; i++) {
    char *a = argv[i];
    if (rest || a[0] != '-' || strcmp(a, "-") == 0) {
      if (!o->script_path && !rest)
        o->script_path = a;
      else
        o->argv[o->argc++] = a;
      continue;
    }
    if (strcmp(a, "--") == 0) {
      rest = 1;
      continue;
    }
    char *value;
    const run_option *opt = find_option(a, &value);
    if (!opt) return usage_error("unknown option '%s'", a);
    if (opt->value && !value) {
      if (i + 1 >= argc) return usage_error("%s needs %s", a, opt->value);
      value = argv[++i];
    }
    int rc = opt->set(o, value);
    if (rc) return rc;
  }
  if (!o->script_path) return usage_error("%s", "run needs a recipe file, e.g. 'luagent run recipes/energy_anomaly.lua'");
  if (access(o->script_path, R_OK) != 0) {
    fprintf(stderr, "luagent: cannot open recipe '%s': %s\n", o->script_path, strerror(errno));
    say_recipe_hint(o->script_path);
    return 2;
  }
  if (ends_with(o->script_path, ".yaml") || ends_with(o->script_path, ".yml")) return yaml_given(o->script_path);
  return 0;
}

/* The host, or NULL with the failure printed and its exit status in *status
 * (2 for a bad --set/--record/--replay, 1 otherwise). */
static host *make_host(host_options *o, int *status) {
  if (!o->lua_dir) {
    const char *env = getenv("LUAGENT_PATH");
    if (env && *env) o->lua_dir = env;
  }
  char err[1024];
  host *h = host_new(o, err, sizeof err, status);
  if (!h) fprintf(stderr, "luagent: %s\n", err);
  else host_install_signal_handlers(h);
  return h;
}

/* A subcommand written in Lua: the module's main(args). */
static int cmd_module(const char *module, int argc, char **argv);

/* Is "--watch" among the options (before a "--")? */
static int wants_watch(int argc, char **argv) {
  for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], "--watch") == 0) return 1;
  return 0;
}

/* `run RECIPE --watch ...`: lua/luagent/cli/watch.lua runs the recipe again
 * on every change; its args are the recipe, then the run's own arguments
 * without --watch (already checked by parse_run). */
static int run_watched(const char *recipe, int argc, char **argv) {
  char **args = calloc((size_t)argc + 1, sizeof(char *));
  int n = 0;
  args[n++] = (char *)recipe;
  for (int i = 0, rest = 0; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) rest = 1;
    if (rest || strcmp(argv[i], "--watch") != 0) args[n++] = argv[i];
  }
  int rc = cmd_module("luagent.cli.watch", n, args);
  free(args);
  return rc;
}

/* ---- run --resume RUN ----
 * The run's folder keeps its command line (resume.argv, NUL-separated: the
 * folder it ran in, the recipe, its options, "--" and its arguments, written
 * by lua/luagent/journal.lua). A resume runs that again from that folder, with
 * this command's options after the saved ones (a later --set wins), and
 * LUAGENT_RESUME naming the run's folder: the library answers the recipe
 * from the run's journal up to where it stopped. */

/* The index of --resume / --resume=RUN among the options (before "--"), or -1. */
static int resume_option(int argc, char **argv, const char **run, int *width) {
  for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "--resume") == 0) {
      *run = i + 1 < argc ? argv[i + 1] : NULL;
      *width = 2;
      return i;
    }
    if (strncmp(argv[i], "--resume=", 9) == 0) {
      *run = argv[i] + 9;
      *width = 1;
      return i;
    }
  }
  return -1;
}

/* The run's folder: RUN itself when it is one, else RUN under the runs
 * folder ($LUAGENT_RUNS_DIR or runs); resolved into out. */
static int resume_dir(const char *run, char *out) {
  struct stat st;
  if (stat(run, &st) == 0 && S_ISDIR(st.st_mode) && realpath(run, out)) return 0;
  const char *root = getenv("LUAGENT_RUNS_DIR");
  char path[PATH_MAX + 256];
  snprintf(path, sizeof path, "%s/%s", root && *root ? root : "runs", run);
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && realpath(path, out)) return 0;
  fprintf(stderr, "luagent: no run '%s' to resume (neither a folder nor %s)\n", run, path);
  return 2;
}

/* dir/resume.argv read into *data (NUL-separated fields); their count, or -1. */
static int read_resume_argv(const char *dir, char **data) {
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/resume.argv", dir);
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  size_t n;
  while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
    len += n;
    if (len == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  if (!buf || len == 0 || buf[len - 1] != '\0') {
    free(buf);
    return -1;
  }
  int count = 0;
  for (size_t i = 0; i < len; i++) count += buf[i] == '\0';
  *data = buf;
  return count;
}

static int cmd_run(int argc, char **argv);

static int run_resumed(int argc, char **argv, const char *run, int at, int width) {
  if (!run || !*run) return usage_error("%s", "--resume needs a run: its folder (runs/<id>) or its id");
  for (int i = 0; i < argc; i++)
    if (strcmp(argv[i], "--") == 0) return usage_error("%s", "--resume runs the recipe with the arguments it had: no '--'");
  char dir[PATH_MAX];
  if (resume_dir(run, dir)) return 2;
  char *data = NULL;
  int fields = read_resume_argv(dir, &data);
  if (fields < 2) {
    fprintf(stderr, "luagent: the run %s cannot be resumed: it has no journal's command line (resume.argv); "
            "it made no model call, or it is not a run folder\n", dir);
    return 2;
  }
  char **saved = calloc((size_t)fields, sizeof(char *));
  char *p = data;
  for (int i = 0; i < fields; i++, p += strlen(p) + 1) saved[i] = p;
  /* the saved options, then this command's (a later --set wins), then the saved "--" and arguments */
  char **args = calloc((size_t)(fields + argc + 1), sizeof(char *));
  int n = 0, rest = fields;
  for (int i = 1; i < fields; i++) {
    if (strcmp(saved[i], "--") == 0) {
      rest = i;
      break;
    }
    args[n++] = saved[i];
  }
  for (int i = 0; i < argc; i++)
    if (i < at || i >= at + width) args[n++] = argv[i];
  for (int i = rest; i < fields; i++) args[n++] = saved[i];
  int rc;
  if (chdir(saved[0]) != 0) {
    fprintf(stderr, "luagent: cannot resume in %s, the folder the run ran in: %s\n", saved[0], strerror(errno));
    rc = 2;
  } else {
    setenv("LUAGENT_RESUME", dir, 1);
    rc = cmd_run(n, args);
  }
  free(args);
  free(saved);
  free(data);
  return rc;
}

static int cmd_run(int argc, char **argv) {
  const char *resume = NULL;
  int width = 0, at = getenv("LUAGENT_RESUME") ? -1 : resume_option(argc, argv, &resume, &width);
  if (at >= 0) return run_resumed(argc, argv, resume, at, width);
  cli c;
  memset(&c, 0, sizeof c);
  int rc = parse_run(&c, argc, argv);
  if (rc == 0 && wants_watch(argc, argv)) {
    rc = run_watched(c.opts.script_path, argc, argv);
  } else if (rc == 0) {
    host *h = make_host(&c.opts, &rc);
    if (h) rc = host_run_file(h, c.opts.script_path);
    host_free(h);
  }
  free(c.settings);
  free(c.args);
  return rc;
}

static int cmd_module(const char *module, int argc, char **argv) {
  host_options o;
  memset(&o, 0, sizeof o);
  int rc;
  host *h = make_host(&o, &rc);
  if (!h) return rc;
  rc = host_run_module(h, module, argc, argv);
  host_free(h);
  return rc;
}

static int cmd_repl(int argc, char **argv) {
  (void)argc, (void)argv;
  host_options o;
  memset(&o, 0, sizeof o);
  int rc;
  host *h = make_host(&o, &rc);
  if (!h) return rc;
  rc = host_repl(h);
  host_free(h);
  return rc;
}

static int cmd_version(int argc, char **argv) {
  (void)argc, (void)argv;
  printf("luagent %s\n", LUAGENT_VERSION);
  return 0;
}

/* A command: its name, and either its C handler or the Lua module
 * (lua/luagent/cli/NAME.lua) whose main(args) runs it. */
typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *module;
} command;

static const command COMMANDS[] = {
    {"run", cmd_run, NULL},           {"repl", cmd_repl, NULL},
    {"version", cmd_version, NULL},   {"--version", cmd_version, NULL},
    {"help", NULL, "luagent.cli.help"}, {"--help", NULL, "luagent.cli.help"},
    {"-h", NULL, "luagent.cli.help"},  {"sandbox", NULL, "luagent.cli.sandbox"},
    {"doctor", NULL, "luagent.cli.doctor"}, {"trace", NULL, "luagent.cli.trace"},
    {"meta", NULL, "luagent.cli.meta"},    {"cache", NULL, "luagent.cli.cache"},
    {"eval", NULL, "luagent.cli.eval"},    {"new", NULL, "luagent.cli.new"},
    {"runs", NULL, "luagent.cli.runs"},
    {"approve", NULL, "luagent.cli.approve"},
};

/* Is this `luagent COMMAND --help` (or -h) for a command with a help page? */
static int wants_page(const command *c, int argc, char **argv) {
  return argc == 3 && c->name[0] != '-' && strcmp(c->name, "help") != 0 &&
         (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0);
}

int main(int argc, char **argv) {
  if (argc < 2) return cmd_module("luagent.cli.usage", 0, argv + 1);
  for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++) {
    const command *c = &COMMANDS[i];
    if (strcmp(argv[1], c->name) != 0) continue;
    if (wants_page(c, argc, argv)) return cmd_module("luagent.cli.help", 1, argv + 1);
    if (c->module) return cmd_module(c->module, argc - 2, argv + 2);
    return c->run(argc - 2, argv + 2);
  }
  return usage_error("unknown command '%s'", argv[1]);
}
