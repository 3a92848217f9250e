/* netaddr: address blocks, the classes of addresses a sandbox may not reach
 * unless a rule names them, and the address policy (netaddr.h says how the
 * host uses it). */
#include "netaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CIDR_TEXT_MAX = 64 };

/* ---- parsing and formatting ---- */

/* An IPv4 octet written "010" is 10 to inet_pton but 8 to inet_aton and
 * to the shells and tools that read octal; a rule must mean one thing. */
static int has_octal_looking_octet(const char *ip) {
  for (const char *p = ip; *p; p++) {
    int starts_octet = p == ip || p[-1] == '.';
    if (starts_octet && p[0] == '0' && p[1] >= '0' && p[1] <= '9') return 1;
  }
  return 0;
}

/* "[addr]", "[addr]/n", "addr", "addr/n" -> the address and the prefix text
 * (NULL when absent). Returns 0, or -1 on a bracket that does not close. */
static int split_cidr(char *text, char **addr, char **prefix) {
  *prefix = NULL;
  if (text[0] == '[') {
    char *close = strchr(text, ']');
    if (!close) return -1;
    *close = '\0';
    *addr = text + 1;
    if (close[1] == '/') *prefix = close + 2;
    else if (close[1] != '\0') return -1;
    return 0;
  }
  *addr = text;
  char *slash = strchr(text, '/');
  if (slash) *slash = '\0', *prefix = slash + 1;
  return 0;
}

/* Decimal 0..max with no sign, no space, at most 3 digits. -1 if not. */
static int parse_prefix(const char *s, int max) {
  size_t len = strlen(s);
  if (len == 0 || len > 3 || strspn(s, "0123456789") != len) return -1;
  int v = atoi(s);
  return v <= max ? v : -1;
}

static int host_bits_set(const net_cidr *c) {
  int bytes = c->family == AF_INET ? 4 : 16;
  for (int i = 0; i < bytes; i++) {
    int keep = c->prefix - i * 8; /* network bits in this byte */
    unsigned char mask = keep >= 8 ? 0xff : keep <= 0 ? 0 : (unsigned char)(0xff << (8 - keep));
    if (c->addr[i] & ~mask) return 1;
  }
  return 0;
}

static void clear_host_bits(net_cidr *c) {
  int bytes = c->family == AF_INET ? 4 : 16;
  for (int i = 0; i < bytes; i++) {
    int keep = c->prefix - i * 8;
    unsigned char mask = keep >= 8 ? 0xff : keep <= 0 ? 0 : (unsigned char)(0xff << (8 - keep));
    c->addr[i] &= mask;
  }
}

/* The reason for host bits names the block meant, so it is made per call;
 * it lives in thread-local storage until the next call in this thread. */
static const char *host_bits_reason(const char *text, net_cidr c) {
  static _Thread_local char reason[3 * CIDR_TEXT_MAX];
  char meant[CIDR_TEXT_MAX];
  clear_host_bits(&c);
  net_cidr_format(&c, meant, sizeof meant);
  snprintf(reason, sizeof reason, "%s: bits set below the prefix; did you mean %s?", text, meant);
  return reason;
}

static int refuse(const char **why, const char *reason) {
  if (why) *why = reason;
  return -1;
}

static const unsigned char MAPPED_PREFIX[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
static const unsigned char NAT64_PREFIX[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};

/* A block inside ::ffff:0:0/96 is the IPv4 block it reaches ("::ffff:10.0.0.0/104"
 * is 10.0.0.0/8): rules are matched on what an address reaches. */
static void unmap_block(net_cidr *c) {
  if (c->family != AF_INET6 || c->prefix < 96 || memcmp(c->addr, MAPPED_PREFIX, 12) != 0) return;
  memmove(c->addr, c->addr + 12, 4);
  memset(c->addr + 4, 0, 12);
  c->family = AF_INET;
  c->prefix -= 96;
}

/* The block as written (special_blocks keeps ::ffff:0:0/96 as IPv6). */
static int parse_written(const char *text, net_cidr *out, const char **why) {
  char copy[CIDR_TEXT_MAX], *addr, *prefix;
  if (!text || !*text) return refuse(why, "empty address");
  if (strlen(text) >= sizeof copy) return refuse(why, "too long for an address block");
  strcpy(copy, text);
  if (split_cidr(copy, &addr, &prefix) < 0) return refuse(why, "not an IP address or CIDR block");
  net_cidr c;
  memset(&c, 0, sizeof c);
  c.family = strchr(addr, ':') ? AF_INET6 : AF_INET;
  if (c.family == AF_INET && has_octal_looking_octet(addr))
    return refuse(why, "an IPv4 octet with a leading zero (octal to some tools; write it without)");
  if (inet_pton(c.family, addr, c.addr) != 1) return refuse(why, "not an IP address or CIDR block");
  int max = c.family == AF_INET ? 32 : 128;
  c.prefix = prefix ? parse_prefix(prefix, max) : max;
  if (c.prefix < 0)
    return refuse(why, c.family == AF_INET ? "prefix out of range (0 to 32 for IPv4)"
                                           : "prefix out of range (0 to 128 for IPv6)");
  if (host_bits_set(&c)) return refuse(why, host_bits_reason(text, c));
  *out = c;
  return 0;
}

int net_cidr_parse(const char *text, net_cidr *out, const char **why) {
  if (parse_written(text, out, why) < 0) return -1;
  unmap_block(out);
  return 0;
}

int net_cidr_format(const net_cidr *c, char *out, size_t n) {
  char ip[INET6_ADDRSTRLEN];
  if (!inet_ntop(c->family, c->addr, ip, sizeof ip)) return -1;
  int len = snprintf(out, n, "%s/%d", ip, c->prefix);
  return len < 0 || (size_t)len >= n ? -1 : len;
}

int net_cidr_contains(const net_cidr *c, int family, const unsigned char *addr) {
  if (c->family != family) return 0;
  int whole = c->prefix / 8, rest = c->prefix % 8;
  if (memcmp(c->addr, addr, (size_t)whole) != 0) return 0;
  if (rest == 0) return 1;
  unsigned char mask = (unsigned char)(0xff << (8 - rest));
  return (addr[whole] & mask) == c->addr[whole];
}

/* ---- the special classes ---- */

/* The first block that contains the address names its class, so a narrower
 * block comes before a wider one that contains it. Why each is refused: */
static const struct special_block {
  const char *cidr, *name;
} special_blocks[] = {
  /* "this network": 0.0.0.0 reaches the local host on Linux */
  {"0.0.0.0/8", "unspecified"},
  /* RFC 1918: the LAN, the Docker bridge, other containers, internal services */
  {"10.0.0.0/8", "private"},
  /* RFC 6598: the ISP's side of carrier NAT, internal to a provider */
  {"100.64.0.0/10", "carrier-grade NAT"},
  /* the host itself: its databases, its Docker socket over TCP, luagent's own ports */
  {"127.0.0.0/8", "loopback"},
  /* RFC 3927: the cloud metadata service (169.254.169.254) holds instance credentials */
  {"169.254.0.0/16", "link-local"},
  {"172.16.0.0/12", "private"},
  /* RFC 6890: DS-Lite and other protocol endpoints, never a public server */
  {"192.0.0.0/24", "IETF protocol assignment"},
  /* RFC 5737, RFC 3849, RFC 9637: examples in documents, never in use */
  {"192.0.2.0/24", "documentation"},
  /* RFC 3068: the 6to4 relay anycast embeds and forwards to IPv4 addresses */
  {"192.88.99.0/24", "6to4"},
  {"192.168.0.0/16", "private"},
  /* RFC 2544: benchmarking networks, lab equipment */
  {"198.18.0.0/15", "benchmarking"},
  {"198.51.100.0/24", "documentation"},
  {"203.0.113.0/24", "documentation"},
  /* one-to-many: not a connection to a server */
  {"224.0.0.0/4", "multicast"},
  /* 240/4 is reserved for future use; 255.255.255.255 is the limited broadcast */
  {"240.0.0.0/4", "reserved"},
  /* IPv6 */
  {"::/128", "unspecified"},
  {"::1/128", "loopback"},
  /* ::ffff:10.0.0.1 is 10.0.0.1 to a dual-stack socket: it would evade every IPv4 rule */
  {"::ffff:0:0/96", "IPv4-mapped IPv6"},
  /* RFC 6052, RFC 8215: NAT64 translates to the embedded IPv4 address, which may be private */
  {"64:ff9b::/96", "NAT64"},
  {"64:ff9b:1::/48", "NAT64"},
  /* RFC 6666: a black hole by design */
  {"100::/64", "discard-only"},
  /* RFC 4380: Teredo tunnels to an embedded IPv4 address */
  {"2001::/32", "Teredo"},
  {"2001:2::/48", "benchmarking"},
  /* RFC 6890: protocol endpoints (ORCHID, AMT, ...) */
  {"2001::/23", "IETF protocol assignment"},
  {"2001:db8::/32", "documentation"},
  /* RFC 3056: 6to4 embeds an IPv4 address (2002:0a00:0001:: is 10.0.0.1) */
  {"2002::/16", "6to4"},
  {"3fff::/20", "documentation"},
  /* RFC 4193: the IPv6 counterpart of the private ranges */
  {"fc00::/7", "unique-local"},
  /* on-link only, as 169.254/16; cloud metadata answers on fe80::a9fe:a9fe too */
  {"fe80::/10", "link-local"},
  /* RFC 3879: deprecated site-local, still routed inside some sites */
  {"fec0::/10", "site-local"},
  {"ff00::/8", "multicast"},
  /* only 2000::/3 is allocated for global unicast; the rest of ::/8 holds the
   * deprecated IPv4-compatible addresses */
  {"::/3", "reserved"},
  {"4000::/2", "reserved"},
  {"8000::/1", "reserved"},
};

/* Family and address bytes of sa; 0, or -1 for another family. */
static int sockaddr_bytes(const struct sockaddr *sa, int *family, const unsigned char **addr) {
  *family = sa->sa_family;
  if (sa->sa_family == AF_INET)
    *addr = (const unsigned char *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
  else if (sa->sa_family == AF_INET6)
    *addr = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
  else
    return -1;
  return 0;
}

static const char *special_class(int family, const unsigned char *addr) {
  for (size_t i = 0; i < sizeof special_blocks / sizeof special_blocks[0]; i++) {
    net_cidr c;
    if (parse_written(special_blocks[i].cidr, &c, NULL) == 0 && net_cidr_contains(&c, family, addr))
      return special_blocks[i].name;
  }
  return NULL;
}

int net_sockaddr_port(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET) return ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
  if (sa->sa_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
  return 0;
}

const char *net_addr_special(const struct sockaddr *sa) {
  int family;
  const unsigned char *addr;
  if (sockaddr_bytes(sa, &family, &addr) < 0) return "not an IP address";
  return special_class(family, addr);
}

/* ---- the policy ---- */

static int rule_covers(const net_rule *r, int family, const unsigned char *addr, int port) {
  if (!net_cidr_contains(&r->cidr, family, addr)) return 0;
  if (r->nports == 0) return 1;
  for (int i = 0; i < r->nports && i < 16; i++)
    if (r->ports[i] == port) return 1;
  return 0;
}

/* "10.0.0.0/8" or "10.0.0.0/8 ports 80,443" */
static void rule_text(const net_rule *r, char *out, size_t n) {
  int len = net_cidr_format(&r->cidr, out, n);
  if (len < 0) len = 0, out[0] = '\0';
  for (int i = 0; i < r->nports && i < 16 && (size_t)len < n; i++) {
    int k = snprintf(out + len, n - (size_t)len, "%s%u", i ? "," : r->nports > 1 ? " ports " : " port ",
                     r->ports[i]);
    if (k < 0) break;
    len += k;
  }
}

/* "10.1.2.3:443", "[fd00::1]:443" */
static void endpoint_text(int family, const unsigned char *addr, int port, char *ip, char *out, size_t n) {
  inet_ntop(family, addr, ip, INET6_ADDRSTRLEN);
  snprintf(out, n, family == AF_INET6 ? "[%s]:%d" : "%s:%d", ip, port);
}

/* "a private", "an unspecified": English reads "unique" with a consonant */
static const char *article(const char *word) {
  return strchr("aeioAEIO", word[0]) || strncmp(word, "unspec", 6) == 0 ? "an" : "a";
}

/* Writes the reason (when there is room for one) and returns the verdict. */
__attribute__((format(printf, 4, 5))) static int decide(int verdict, char *why, size_t whylen, const char *fmt, ...) {
  if (whylen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
  }
  return verdict;
}

static const net_rule *first_covering(const net_rule *rules, size_t n, int allow, int family,
                                      const unsigned char *addr, int port) {
  for (size_t i = 0; i < n; i++)
    if (!rules[i].allow == !allow && rule_covers(&rules[i], family, addr, port)) return &rules[i];
  return NULL;
}

/* An IPv4-mapped (::ffff:a.b.c.d) or IPv4-compatible (::a.b.c.d, but not ::
 * nor ::1) address is the IPv4 address a dual-stack socket connects to. */
static void unmap(int family, const unsigned char *addr, int *ufamily, unsigned char *uaddr) {
  static const unsigned char zero[12] = {0};
  *ufamily = family;
  memcpy(uaddr, addr, family == AF_INET ? 4 : 16);
  if (family != AF_INET6) return;
  uint32_t v4 = (uint32_t)addr[12] << 24 | (uint32_t)addr[13] << 16 | (uint32_t)addr[14] << 8 | addr[15];
  if (memcmp(addr, MAPPED_PREFIX, 12) == 0 || (memcmp(addr, zero, 12) == 0 && v4 > 1)) {
    *ufamily = AF_INET;
    memcpy(uaddr, addr + 12, 4);
  }
}

/* 0.0.0.0 or :: : "this host", with no address of its own. */
static int unspecified(int family, const unsigned char *addr) {
  static const unsigned char zero[16] = {0};
  return memcmp(addr, zero, family == AF_INET ? 4 : 16) == 0;
}

static const unsigned char LOOPBACK4[4] = {127, 0, 0, 1}, LOOPBACK6[16] = {[15] = 1};

/* What an address reaches: unmapped, and 0.0.0.0 and :: are the local host
 * (127.0.0.1, ::1), which a connect to them reaches on Linux. */
static void reach_of(int family, const unsigned char *addr, int *rfamily, unsigned char *raddr) {
  unmap(family, addr, rfamily, raddr);
  if (unspecified(*rfamily, raddr)) memcpy(raddr, *rfamily == AF_INET ? LOOPBACK4 : LOOPBACK6, *rfamily == AF_INET ? 4 : 16);
}

/* The IPv4 address a NAT64 address (64:ff9b::/96) is translated to: deny
 * rules on IPv4 blocks cover it. 1 when there is one. */
static int nat64_embedded(int family, const unsigned char *addr, unsigned char *v4) {
  if (family != AF_INET6 || memcmp(addr, NAT64_PREFIX, 12) != 0) return 0;
  memcpy(v4, addr + 12, 4);
  return 1;
}

/* The deny rule that covers the address: as it reaches, as written, as NAT64
 * translates it; and "this host" (0.0.0.0, ::) as either loopback address. */
static const net_rule *first_deny(const net_rule *rules, size_t n, int family, const unsigned char *addr,
                                  int rfamily, const unsigned char *raddr, int port) {
  const net_rule *r = first_covering(rules, n, 0, rfamily, raddr, port);
  if (!r) r = first_covering(rules, n, 0, family, addr, port);
  unsigned char v4[4], u[16];
  if (!r && nat64_embedded(family, addr, v4)) r = first_covering(rules, n, 0, AF_INET, v4, port);
  int ufamily;
  unmap(family, addr, &ufamily, u);
  if (!r && unspecified(ufamily, u)) {
    r = first_covering(rules, n, 0, AF_INET, LOOPBACK4, port);
    if (!r) r = first_covering(rules, n, 0, AF_INET6, LOOPBACK6, port);
  }
  return r;
}

int net_policy_check(const net_rule *rules, size_t n, const struct sockaddr *sa, int port,
                     int need_rule, char *why, size_t whylen) {
  int family, rfamily;
  const unsigned char *addr;
  unsigned char raddr[16];
  char ip[INET6_ADDRSTRLEN], rip[INET6_ADDRSTRLEN], where[2 * INET6_ADDRSTRLEN + 32], rule[CIDR_TEXT_MAX + 128];
  if (sockaddr_bytes(sa, &family, &addr) < 0)
    return decide(0, why, whylen, "not an IP address");
  reach_of(family, addr, &rfamily, raddr);
  endpoint_text(family, addr, port, ip, where, sizeof where);
  int reaches_other = rfamily != family || memcmp(raddr, addr, family == AF_INET ? 4 : 16) != 0;
  if (reaches_other) { /* "[::ffff:127.0.0.1]:80 (reaching 127.0.0.1)" */
    inet_ntop(rfamily, raddr, rip, sizeof rip);
    size_t len = strlen(where);
    snprintf(where + len, sizeof where - len, " (reaching %s)", rip);
  }
  const net_rule *r = first_deny(rules, n, family, addr, rfamily, raddr, port);
  if (r) {
    rule_text(r, rule, sizeof rule);
    return decide(0, why, whylen, "%s is denied by the rule %s", where, rule);
  }
  r = first_covering(rules, n, 1, rfamily, raddr, port);
  if (r) {
    rule_text(r, rule, sizeof rule);
    return decide(1, why, whylen, "%s is allowed by the rule %s", where, rule);
  }
  if (need_rule) return decide(0, why, whylen, "no address rule allows %s", where);
  const char *special = special_class(rfamily, raddr);
  if (special) {
    if (reaches_other) return decide(0, why, whylen, "%s (reaching %s) is %s %s address and no address rule allows it",
                                     ip, rip, article(special), special);
    return decide(0, why, whylen, "%s is %s %s address and no address rule allows it", ip, article(special), special);
  }
  return decide(1, why, whylen, "%s is a public address", where);
}
