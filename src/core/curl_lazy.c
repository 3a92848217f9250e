/* curl_lazy: libcurl, loaded on first use.
 *
 * Linking libcurl pulls in some thirty shared libraries (TLS, Kerberos,
 * LDAP, SSH...) whose loading costs about 4.5 ms, five times the start-up of
 * lua5.4 itself. A recipe that never does I/O should not pay that, so the
 * binary does not link libcurl: these definitions of the curl functions we
 * use dlopen("libcurl.so.4") the first time one is called and forward to it.
 * The rest of the code calls curl as usual. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define CURL_FUNCTIONS(X)                                                                        \
  X(CURLcode, curl_global_init, (long flags))                                                    \
  X(CURL *, curl_easy_init, (void))                                                              \
  X(void, curl_easy_cleanup, (CURL * h))                                                         \
  X(CURLcode, curl_easy_setopt, (CURL * h, CURLoption opt, ...))                                 \
  X(CURLcode, curl_easy_getinfo, (CURL * h, CURLINFO info, ...))                                 \
  X(CURLcode, curl_easy_pause, (CURL * h, int bitmask))                                          \
  X(const char *, curl_easy_strerror, (CURLcode code))                                           \
  X(struct curl_slist *, curl_slist_append, (struct curl_slist * list, const char *s))           \
  X(void, curl_slist_free_all, (struct curl_slist * list))                                       \
  X(CURLM *, curl_multi_init, (void))                                                            \
  X(CURLMcode, curl_multi_setopt, (CURLM * m, CURLMoption opt, ...))                             \
  X(CURLMcode, curl_multi_add_handle, (CURLM * m, CURL * h))                                     \
  X(CURLMcode, curl_multi_remove_handle, (CURLM * m, CURL * h))                                  \
  X(CURLMcode, curl_multi_poll, (CURLM * m, struct curl_waitfd * fds, unsigned n, int ms, int *numfds)) \
  X(CURLMcode, curl_multi_perform, (CURLM * m, int *running))                                    \
  X(CURLMsg *, curl_multi_info_read, (CURLM * m, int *queued))                                   \
  X(CURLMcode, curl_multi_cleanup, (CURLM * m))                                                  \
  X(CURLMcode, curl_multi_socket_action, (CURLM * m, curl_socket_t s, int ev, int *running))     \
  X(CURLcode, curl_easy_send, (CURL * h, const void *data, size_t n, size_t *sent))             \
  X(CURLcode, curl_easy_recv, (CURL * h, void *data, size_t n, size_t *got))                    \
  X(char *, curl_version, (void))

#define DECLARE_POINTER(ret, name, args) static ret(*real_##name) args;
CURL_FUNCTIONS(DECLARE_POINTER)

static void load_libcurl(void) {
  static int loaded;
  if (loaded) return;
  void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "luagent: cannot load libcurl: %s\n"
                    "luagent: install it with: apt-get install -y libcurl4\n", dlerror());
    exit(1);
  }
#define RESOLVE(ret, name, args)                                                \
  real_##name = (ret(*) args)dlsym(lib, #name);                                 \
  if (!real_##name) {                                                           \
    fprintf(stderr, "luagent: libcurl.so.4 lacks %s (too old?)\n", #name);      \
    exit(1);                                                                    \
  }
  CURL_FUNCTIONS(RESOLVE)
  loaded = 1;
}

CURLcode curl_global_init(long flags) { return load_libcurl(), real_curl_global_init(flags); }
CURL *curl_easy_init(void) { return load_libcurl(), real_curl_easy_init(); }
void curl_easy_cleanup(CURL *h) { real_curl_easy_cleanup(h); }
CURLcode curl_easy_pause(CURL *h, int bitmask) { return real_curl_easy_pause(h, bitmask); }
const char *curl_easy_strerror(CURLcode code) { return load_libcurl(), real_curl_easy_strerror(code); }
struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s) {
  return load_libcurl(), real_curl_slist_append(list, s);
}
void curl_slist_free_all(struct curl_slist *list) {
  if (list) real_curl_slist_free_all(list);
}
CURLM *curl_multi_init(void) { return load_libcurl(), real_curl_multi_init(); }
CURLMcode curl_multi_add_handle(CURLM *m, CURL *h) { return real_curl_multi_add_handle(m, h); }
CURLMcode curl_multi_remove_handle(CURLM *m, CURL *h) { return real_curl_multi_remove_handle(m, h); }
CURLMcode curl_multi_poll(CURLM *m, struct curl_waitfd *fds, unsigned n, int ms, int *numfds) {
  return real_curl_multi_poll(m, fds, n, ms, numfds);
}
CURLMcode curl_multi_perform(CURLM *m, int *running) { return real_curl_multi_perform(m, running); }
CURLMsg *curl_multi_info_read(CURLM *m, int *queued) { return real_curl_multi_info_read(m, queued); }
CURLMcode curl_multi_cleanup(CURLM *m) { return real_curl_multi_cleanup(m); }
CURLMcode curl_multi_socket_action(CURLM *m, curl_socket_t s, int ev, int *running) {
  return real_curl_multi_socket_action(m, s, ev, running);
}
CURLcode curl_easy_send(CURL *h, const void *data, size_t n, size_t *sent) { return real_curl_easy_send(h, data, n, sent); }
CURLcode curl_easy_recv(CURL *h, void *data, size_t n, size_t *got) { return real_curl_easy_recv(h, data, n, got); }
char *curl_version(void) { return load_libcurl(), real_curl_version(); }

/* The option number says the type of the one variadic argument. */
CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...) {
  va_list ap;
  va_start(ap, opt);
  CURLcode rc;
  if (opt < CURLOPTTYPE_OBJECTPOINT)
    rc = real_curl_easy_setopt(h, opt, va_arg(ap, long));
  else if (opt < CURLOPTTYPE_FUNCTIONPOINT || opt >= CURLOPTTYPE_BLOB)
    rc = real_curl_easy_setopt(h, opt, va_arg(ap, void *));
  else if (opt < CURLOPTTYPE_OFF_T)
    rc = real_curl_easy_setopt(h, opt, va_arg(ap, void (*)(void)));
  else
    rc = real_curl_easy_setopt(h, opt, va_arg(ap, curl_off_t));
  va_end(ap);
  return rc;
}

CURLMcode curl_multi_setopt(CURLM *m, CURLMoption opt, ...) {
  va_list ap;
  va_start(ap, opt);
  CURLMcode rc;
  if (opt < CURLOPTTYPE_OBJECTPOINT)
    rc = real_curl_multi_setopt(m, opt, va_arg(ap, long));
  else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
    rc = real_curl_multi_setopt(m, opt, va_arg(ap, void *));
  else if (opt < CURLOPTTYPE_OFF_T)
    rc = real_curl_multi_setopt(m, opt, va_arg(ap, void (*)(void)));
  else
    rc = real_curl_multi_setopt(m, opt, va_arg(ap, curl_off_t));
  va_end(ap);
  return rc;
}

CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...) {
  va_list ap;
  va_start(ap, info);
  CURLcode rc = real_curl_easy_getinfo(h, info, va_arg(ap, void *));
  va_end(ap);
  return rc;
}
