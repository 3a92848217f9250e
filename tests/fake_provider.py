#!/usr/bin/env python3
"""The fake model provider's command line (a test double, not a real API).

  python3 tests/fake_provider.py               listen on 127.0.0.1, a random free port;
                                               print the port alone on the first stdout
                                               line once ready, then serve until killed
  python3 tests/fake_provider.py --self-test   check the server against itself, exit 0/1

The server is the package tests/fake_provider/ beside this file (a folder
package is found before a module of the same name); its __init__.py is the
reference of the protocol: the control API, the steps, the wire details.
"""
import os
import sys

sys.dont_write_bytecode = True  # before the imports below: no __pycache__ left in tests/

from fake_provider.common import HOST
from fake_provider.selftest import self_test
from fake_provider.server import FakeProviderServer, Handler
from fake_provider.validate import spec


def main():
    if "--self-test" in sys.argv[1:]:
        sys.exit(self_test())
    server = FakeProviderServer((HOST, 0), Handler)
    if os.environ.get("FAKE_PROVIDER_CHECKS", "1") == "0":
        pass  # a benchmark's fake: no request checks (tests/run always checks)
    elif spec() is None:  # read before the first request, which must not pay for it
        print("fake provider: no OpenAPI spec (FAKE_PROVIDER_OPENAPI or ../shared/specs): "
              "OpenAI requests are not checked", file=sys.stderr)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
