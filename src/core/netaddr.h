/* netaddr: IP addresses and the address rules of sandbox egress.
 *
 * The host checks every upstream connection of a sandbox at the moment it
 * opens the socket, against the address it is about to connect to (after
 * its own DNS resolution), so a name that resolves to a private address is
 * caught as surely as a literal. Pure C, no I/O. */
#ifndef LUAGENT_NETADDR_H
#define LUAGENT_NETADDR_H

#include <stddef.h>
#include <sys/socket.h>

/* An address block. family is AF_INET (addr[0..3] used, prefix 0..32) or
 * AF_INET6 (prefix 0..128). Bits below the prefix are always zero. */
typedef struct net_cidr {
  int family;
  unsigned char addr[16];
  int prefix;
} net_cidr;

/* Parses "10.0.0.0/8", "1.2.3.4" (= /32), "::1" (= /128), "fd00::/8", "[::1]"
 * or "[fd00::]/8". A block inside ::ffff:0:0/96 becomes the IPv4 block it
 * reaches ("::ffff:127.0.0.1" is 127.0.0.1/32). Returns 0, or -1 with *why
 * (when why is not NULL; the text stays valid until the next call in this
 * thread) naming the problem: junk, a prefix out of range, host bits set below
 * the prefix, an IPv4 octet with a leading zero (read as octal by some tools). */
int net_cidr_parse(const char *text, net_cidr *out, const char **why);

/* Canonical text ("10.0.0.0/8", "fd00::/8"; a full-length prefix is still
 * written). Returns the length, or -1 when n is too small. */
int net_cidr_format(const net_cidr *c, char *out, size_t n);

/* Does the block contain the address (same family only; net_policy_check
 * unmaps addresses first)? addr has 4 or 16 bytes. */
int net_cidr_contains(const net_cidr *c, int family, const unsigned char *addr);

/* The port of an AF_INET or AF_INET6 address (host order); 0 for another family. */
int net_sockaddr_port(const struct sockaddr *sa);

/* NULL for a public unicast address, else its class: "loopback", "private",
 * "link-local", "unique-local", "IPv4-mapped IPv6", "unspecified",
 * "carrier-grade NAT", "multicast", "reserved", "broadcast",
 * "documentation", "benchmarking", "IETF protocol assignment", "NAT64",
 * "6to4", "Teredo", "discard-only", "site-local". Also for an address of
 * another family than AF_INET/AF_INET6 ("not an IP address"). */
const char *net_addr_special(const struct sockaddr *sa);

/* One address rule: the block, allow (1) or deny (0), and its ports
 * (nports 0: every port). */
typedef struct net_rule {
  net_cidr cidr;
  int allow;
  int nports;
  unsigned short ports[16];
} net_rule;

/* May the host connect to sa, port? Returns 1 (allowed) or 0 (refused), and
 * in why (when whylen > 0) one line naming the address and the rule or the
 * class that decided, e.g. "10.1.2.3:443 allowed by rule 10.0.0.0/8" or
 * "10.1.2.3 is a private address and no address rule allows it".
 * Rules and classes are matched on what the address reaches: an IPv4-mapped
 * (::ffff:a.b.c.d) or IPv4-compatible (::a.b.c.d) address is that IPv4
 * address, 0.0.0.0 is 127.0.0.1 and :: is ::1 (both connect to the local host);
 * a deny rule also covers the address as written, and a NAT64 address
 * (64:ff9b::/96) by the IPv4 address it is translated to.
 *   a deny rule covering (address, port) refuses: deny wins;
 *   else an allow rule covering it admits;
 *   else with need_rule (the target was an IP literal) it is refused;
 *   else a special address is refused and a public one admitted. */
int net_policy_check(const net_rule *rules, size_t n, const struct sockaddr *sa, int port,
                     int need_rule, char *why, size_t whylen);

#endif
