/* netaddr: CIDR text both ways, the special address classes, the policy. */
#include "../../src/core/netaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "test.h"

/* Canonical text of a parse, or "ERR: reason". */
static const char *parsed(const char *text) {
  static char out[256];
  net_cidr c;
  const char *why = NULL;
  if (net_cidr_parse(text, &c, &why) < 0) {
    snprintf(out, sizeof out, "ERR: %s", why ? why : "(no reason)");
    return out;
  }
  if (net_cidr_format(&c, out, sizeof out) < 0) return "ERR: format";
  return out;
}

static struct sockaddr_storage address(const char *ip) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  if (strchr(ip, ':')) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    s6->sin6_family = AF_INET6;
    if (inet_pton(AF_INET6, ip, &s6->sin6_addr) != 1) fprintf(stderr, "bad test address %s\n", ip);
  } else {
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    s4->sin_family = AF_INET;
    if (inet_pton(AF_INET, ip, &s4->sin_addr) != 1) fprintf(stderr, "bad test address %s\n", ip);
  }
  return ss;
}

static const char *class_of(const char *ip) {
  struct sockaddr_storage ss = address(ip);
  const char *c = net_addr_special((struct sockaddr *)&ss);
  return c ? c : "public";
}

static void accepts_blocks_and_writes_them_canonically(void) {
  CHECK_STR(parsed("10.0.0.0/8"), "10.0.0.0/8");
  CHECK_STR(parsed("1.2.3.4"), "1.2.3.4/32");
  CHECK_STR(parsed("0.0.0.0/0"), "0.0.0.0/0");
  CHECK_STR(parsed("::1"), "::1/128");
  CHECK_STR(parsed("fd00::/8"), "fd00::/8");
  CHECK_STR(parsed("[::1]"), "::1/128");
  CHECK_STR(parsed("[fd00::]/8"), "fd00::/8");
  CHECK_STR(parsed("2001:DB8:0:0::/32"), "2001:db8::/32");
  CHECK_STR(parsed("::/0"), "::/0");
  CHECK_STR(parsed("0.0.0.0"), "0.0.0.0/32");
  net_cidr c;
  CHECK(net_cidr_parse("192.168.0.0/16", &c, NULL) == 0);
  CHECK(c.family == AF_INET && c.prefix == 16 && c.addr[0] == 192 && c.addr[1] == 168);
  CHECK(net_cidr_parse("fe80::/10", &c, NULL) == 0);
  CHECK(c.family == AF_INET6 && c.prefix == 10 && c.addr[0] == 0xfe && c.addr[1] == 0x80);
}

static void refuses_bad_blocks_with_a_reason(void) {
  CHECK_STR(parsed("10.0.0.1/8"), "ERR: 10.0.0.1/8: bits set below the prefix; did you mean 10.0.0.0/8?");
  CHECK_STR(parsed("fd00::1/8"), "ERR: fd00::1/8: bits set below the prefix; did you mean fd00::/8?");
  CHECK_STR(parsed("10.0.0.0/33"), "ERR: prefix out of range (0 to 32 for IPv4)");
  CHECK_STR(parsed("::/129"), "ERR: prefix out of range (0 to 128 for IPv6)");
  CHECK_STR(parsed("10.0.0.0/-1"), "ERR: prefix out of range (0 to 32 for IPv4)");
  CHECK_STR(parsed("10.0.0.0/"), "ERR: prefix out of range (0 to 32 for IPv4)");
  CHECK_STR(parsed("10.0.0.0/8x"), "ERR: prefix out of range (0 to 32 for IPv4)");
  CHECK_STR(parsed("010.0.0.1"), "ERR: an IPv4 octet with a leading zero (octal to some tools; write it without)");
  CHECK_STR(parsed("10.0.00.1"), "ERR: an IPv4 octet with a leading zero (octal to some tools; write it without)");
  CHECK_STR(parsed("example.com"), "ERR: not an IP address or CIDR block");
  CHECK_STR(parsed("1.2.3"), "ERR: not an IP address or CIDR block");
  CHECK_STR(parsed("1.2.3.4.5"), "ERR: not an IP address or CIDR block");
  CHECK_STR(parsed("256.1.1.1"), "ERR: not an IP address or CIDR block");
  CHECK_STR(parsed("[::1"), "ERR: not an IP address or CIDR block");
  CHECK_STR(parsed("[::1]x"), "ERR: not an IP address or CIDR block");
  CHECK_STR(parsed(" 1.2.3.4"), "ERR: not an IP address or CIDR block");
  CHECK_STR(parsed(""), "ERR: empty address");
  CHECK_STR(parsed("1::2::3"), "ERR: not an IP address or CIDR block");
  CHECK_STR(parsed("0x7f.0.0.1"), "ERR: not an IP address or CIDR block");
}

static void classes_of_ipv4_addresses(void) {
  CHECK_STR(class_of("8.8.8.8"), "public");
  CHECK_STR(class_of("1.1.1.1"), "public");
  CHECK_STR(class_of("127.0.0.1"), "loopback");
  CHECK_STR(class_of("127.255.255.254"), "loopback");
  CHECK_STR(class_of("10.1.2.3"), "private");
  CHECK_STR(class_of("172.16.0.1"), "private");
  CHECK_STR(class_of("172.31.255.255"), "private");
  CHECK_STR(class_of("172.32.0.1"), "public");
  CHECK_STR(class_of("172.15.255.255"), "public");
  CHECK_STR(class_of("192.168.1.1"), "private");
  CHECK_STR(class_of("169.254.169.254"), "link-local");
  CHECK_STR(class_of("0.0.0.0"), "unspecified");
  CHECK_STR(class_of("0.1.2.3"), "unspecified");
  CHECK_STR(class_of("100.64.0.1"), "carrier-grade NAT");
  CHECK_STR(class_of("100.127.255.255"), "carrier-grade NAT");
  CHECK_STR(class_of("100.128.0.0"), "public");
  CHECK_STR(class_of("224.0.0.1"), "multicast");
  CHECK_STR(class_of("239.255.255.250"), "multicast");
  CHECK_STR(class_of("240.0.0.1"), "reserved");
  CHECK_STR(class_of("255.255.255.255"), "reserved");
  CHECK_STR(class_of("192.0.2.7"), "documentation");
  CHECK_STR(class_of("198.51.100.7"), "documentation");
  CHECK_STR(class_of("203.0.113.7"), "documentation");
  CHECK_STR(class_of("198.18.0.1"), "benchmarking");
  CHECK_STR(class_of("198.19.255.255"), "benchmarking");
  CHECK_STR(class_of("198.20.0.0"), "public");
  CHECK_STR(class_of("192.0.0.8"), "IETF protocol assignment");
  CHECK_STR(class_of("192.88.99.1"), "6to4");
}

static void classes_of_ipv6_addresses(void) {
  CHECK_STR(class_of("2606:4700::1111"), "public");
  CHECK_STR(class_of("2a00:1450::1"), "public");
  CHECK_STR(class_of("::1"), "loopback");
  CHECK_STR(class_of("::"), "unspecified");
  CHECK_STR(class_of("fe80::1"), "link-local");
  CHECK_STR(class_of("febf::1"), "link-local");
  CHECK_STR(class_of("fc00::1"), "unique-local");
  CHECK_STR(class_of("fd12:3456::1"), "unique-local");
  CHECK_STR(class_of("::ffff:8.8.8.8"), "IPv4-mapped IPv6");
  CHECK_STR(class_of("::ffff:127.0.0.1"), "IPv4-mapped IPv6");
  CHECK_STR(class_of("64:ff9b::a00:1"), "NAT64");
  CHECK_STR(class_of("2002:a00:1::"), "6to4");
  CHECK_STR(class_of("2001:0:4136:e378::1"), "Teredo");
  CHECK_STR(class_of("2001:db8::1"), "documentation");
  CHECK_STR(class_of("2001:2::1"), "benchmarking");
  CHECK_STR(class_of("ff02::1"), "multicast");
  CHECK_STR(class_of("100::1"), "discard-only");
  CHECK_STR(class_of("fec0::1"), "site-local");
  CHECK_STR(class_of("::10.0.0.1"), "reserved"); /* deprecated IPv4-compatible */
  CHECK_STR(class_of("4000::1"), "reserved");
  struct sockaddr unix_like = {.sa_family = AF_UNIX};
  CHECK_STR(net_addr_special(&unix_like), "not an IP address");
}

static net_rule rule(const char *cidr, int allow, int nports, const unsigned short *ports) {
  net_rule r;
  memset(&r, 0, sizeof r);
  if (net_cidr_parse(cidr, &r.cidr, NULL) < 0) fprintf(stderr, "bad test rule %s\n", cidr);
  r.allow = allow;
  r.nports = nports;
  for (int i = 0; i < nports; i++) r.ports[i] = ports[i];
  return r;
}

static char why[256];

static int check(const net_rule *rules, size_t n, const char *ip, int port, int need_rule) {
  struct sockaddr_storage ss = address(ip);
  return net_policy_check(rules, n, (struct sockaddr *)&ss, port, need_rule, why, sizeof why);
}

static void without_rules_public_passes_and_special_is_refused(void) {
  CHECK(check(NULL, 0, "8.8.8.8", 443, 0) == 1);
  CHECK_STR(why, "8.8.8.8:443 is a public address");
  CHECK(check(NULL, 0, "10.1.2.3", 443, 0) == 0);
  CHECK_STR(why, "10.1.2.3 is a private address and no address rule allows it");
  CHECK(check(NULL, 0, "169.254.169.254", 80, 0) == 0);
  CHECK_STR(why, "169.254.169.254 is a link-local address and no address rule allows it");
  CHECK(check(NULL, 0, "::ffff:10.0.0.1", 80, 0) == 0);
  CHECK_STR(why, "::ffff:10.0.0.1 (reaching 10.0.0.1) is a private address and no address rule allows it");
  CHECK(check(NULL, 0, "fd00::1", 80, 0) == 0);
  CHECK_STR(why, "fd00::1 is a unique-local address and no address rule allows it");
  CHECK(check(NULL, 0, "0.0.0.0", 80, 0) == 0);
  CHECK_STR(why, "0.0.0.0 (reaching 127.0.0.1) is a loopback address and no address rule allows it");
  CHECK(check(NULL, 0, "2606:4700::1111", 443, 0) == 1);
  CHECK_STR(why, "[2606:4700::1111]:443 is a public address");
}

static void an_ip_literal_needs_a_rule(void) {
  CHECK(check(NULL, 0, "8.8.8.8", 443, 1) == 0);
  CHECK_STR(why, "no address rule allows 8.8.8.8:443");
  CHECK(check(NULL, 0, "2606:4700::1111", 443, 1) == 0);
  CHECK_STR(why, "no address rule allows [2606:4700::1111]:443");
  unsigned short https[] = {443};
  net_rule rules[] = {rule("8.8.8.0/24", 1, 1, https)};
  CHECK(check(rules, 1, "8.8.8.8", 443, 1) == 1);
  CHECK_STR(why, "8.8.8.8:443 is allowed by the rule 8.8.8.0/24 port 443");
  CHECK(check(rules, 1, "8.8.8.8", 80, 1) == 0);
  CHECK_STR(why, "no address rule allows 8.8.8.8:80");
}

static void allow_rules_admit_special_addresses_on_their_ports(void) {
  unsigned short web[] = {80, 8080};
  net_rule rules[] = {rule("10.0.0.0/8", 1, 2, web), rule("::1", 1, 0, NULL)};
  CHECK(check(rules, 2, "10.9.9.9", 8080, 0) == 1);
  CHECK_STR(why, "10.9.9.9:8080 is allowed by the rule 10.0.0.0/8 ports 80,8080");
  CHECK(check(rules, 2, "10.9.9.9", 22, 0) == 0);
  CHECK_STR(why, "10.9.9.9 is a private address and no address rule allows it");
  CHECK(check(rules, 2, "11.0.0.1", 22, 0) == 1);
  CHECK(check(rules, 2, "::1", 5432, 0) == 1);
  CHECK_STR(why, "[::1]:5432 is allowed by the rule ::1/128");
  CHECK(check(rules, 2, "127.0.0.1", 5432, 0) == 0);
}

static void deny_wins_over_allow(void) {
  unsigned short ssh[] = {22};
  net_rule rules[] = {rule("10.0.0.0/8", 1, 0, NULL), rule("10.0.0.0/24", 0, 1, ssh),
                      rule("0.0.0.0/0", 0, 1, ssh)};
  CHECK(check(rules, 3, "10.0.0.5", 22, 0) == 0);
  CHECK_STR(why, "10.0.0.5:22 is denied by the rule 10.0.0.0/24 port 22");
  CHECK(check(rules, 3, "10.0.0.5", 80, 0) == 1);
  CHECK(check(rules, 3, "10.0.1.5", 22, 0) == 0);
  CHECK_STR(why, "10.0.1.5:22 is denied by the rule 0.0.0.0/0 port 22");
  /* a deny rule refuses a public address that would otherwise pass */
  net_rule deny_public[] = {rule("1.1.1.1", 0, 0, NULL), rule("1.1.1.1", 1, 0, NULL)};
  CHECK(check(deny_public, 2, "1.1.1.1", 443, 0) == 0);
  CHECK_STR(why, "1.1.1.1:443 is denied by the rule 1.1.1.1/32");
}

/* The attack this closes: deny 127/8 beside an allow-all, and the same
 * address written another way went through. */
static void rules_match_what_an_address_reaches(void) {
  net_rule rules[] = {rule("127.0.0.0/8", 0, 0, NULL), rule("169.254.0.0/16", 0, 0, NULL),
                      rule("10.0.0.0/8", 0, 0, NULL), rule("0.0.0.0/0", 1, 0, NULL), rule("::/0", 1, 0, NULL)};
  size_t n = sizeof rules / sizeof rules[0];
  const char *denied[] = {"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.1.2.3", "0.0.0.0",
                          "::127.0.0.1", "64:ff9b::7f00:1", "::ffff:0.0.0.0"};
  for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
    CHECK(check(rules, n, denied[i], 8079, 0) == 0);
    CHECK(check(rules, n, denied[i], 8079, 1) == 0);
    if (!strstr(why, "is denied by the rule")) fprintf(stderr, "    %s: %s\n", denied[i], why);
  }
  CHECK(check(rules, n, "::ffff:127.0.0.1", 8079, 0) == 0);
  CHECK_STR(why, "[::ffff:127.0.0.1]:8079 (reaching 127.0.0.1) is denied by the rule 127.0.0.0/8");
  CHECK(check(rules, n, "::ffff:11.0.0.1", 80, 1) == 1); /* reaching a public address that 0.0.0.0/0 allows */
  CHECK_STR(why, "[::ffff:11.0.0.1]:80 (reaching 11.0.0.1) is allowed by the rule 0.0.0.0/0");
  /* :: reaches ::1, which a deny on ::1 covers */
  net_rule v6[] = {rule("::1", 0, 0, NULL), rule("::/0", 1, 0, NULL)};
  CHECK(check(v6, 2, "::", 80, 1) == 0);
  CHECK_STR(why, "[::]:80 (reaching ::1) is denied by the rule ::1/128");
  /* "this host" has no address of its own: a deny on either loopback covers it */
  CHECK(check(rules, n, "::", 8079, 1) == 0);
  CHECK_STR(why, "[::]:8079 (reaching ::1) is denied by the rule 127.0.0.0/8");
  /* without rules: a mapped public address is public, a mapped private one private */
  CHECK(check(NULL, 0, "::ffff:8.8.8.8", 443, 0) == 1);
  CHECK(check(NULL, 0, "::", 80, 0) == 0);
  CHECK_STR(why, ":: (reaching ::1) is a loopback address and no address rule allows it");
  /* an IPv6 deny never covers an IPv4 address */
  net_rule deny6[] = {rule("::/0", 0, 0, NULL)};
  CHECK(check(deny6, 1, "8.8.8.8", 80, 0) == 1);
  CHECK(check(deny6, 1, "2606:4700::1111", 80, 0) == 0);
}

static void mapped_rules_are_the_ipv4_blocks_they_reach(void) {
  CHECK_STR(parsed("::ffff:127.0.0.1"), "127.0.0.1/32");
  CHECK_STR(parsed("[::ffff:10.0.0.0]/104"), "10.0.0.0/8");
  CHECK_STR(parsed("::ffff:0:0/96"), "0.0.0.0/0");
  CHECK_STR(parsed("::fffe:0:0/95"), "::fffe:0:0/95"); /* wider than the mapped block: stays IPv6 */
}

static void a_short_reason_buffer_is_safe(void) {
  char tiny[8];
  struct sockaddr_storage ss = address("10.1.2.3");
  CHECK(net_policy_check(NULL, 0, (struct sockaddr *)&ss, 80, 0, tiny, sizeof tiny) == 0);
  CHECK_STR(tiny, "10.1.2.");
  CHECK(net_policy_check(NULL, 0, (struct sockaddr *)&ss, 80, 0, NULL, 0) == 0);
}

int main(void) {
  RUN(accepts_blocks_and_writes_them_canonically);
  RUN(refuses_bad_blocks_with_a_reason);
  RUN(classes_of_ipv4_addresses);
  RUN(classes_of_ipv6_addresses);
  RUN(without_rules_public_passes_and_special_is_refused);
  RUN(an_ip_literal_needs_a_rule);
  RUN(allow_rules_admit_special_addresses_on_their_ports);
  RUN(deny_wins_over_allow);
  RUN(rules_match_what_an_address_reaches);
  RUN(mapped_rules_are_the_ipv4_blocks_they_reach);
  RUN(a_short_reason_buffer_is_safe);
  TEST_EXIT();
}
