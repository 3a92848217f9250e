/* egress: the sandbox's one way out (DESIGN.md, "Egress").
 * `luagent-supervisor egress PORT`, a Docker exec as uid 0 of its own beside
 * serve, listens on 127.0.0.1:PORT (and [::1]:PORT when the container has
 * it) and relays every TCP connection to the host over its stdin/stdout in
 * the format of src/core/egress_frames.h; the host decides what passes and
 * makes the upstream connection. A dumb relay: it parses nothing a client
 * sends, since it runs as root. Flow control by EGRESS_WINDOW each way; up
 * to EGRESS_MAX_CONNS connections at once (accepting pauses beyond). */
#ifndef SV_EGRESS_H
#define SV_EGRESS_H

#define EGRESS_MAX_CONNS 1024

/* Relays until stdin closes. Returns the exit code: 0 the host closed stdin
 * (every connection is reset), 1 the port could not be listened on, 2 a
 * message from the host was not the format (a diagnostic on stderr). */
int egress_main(const char *port);

#endif
