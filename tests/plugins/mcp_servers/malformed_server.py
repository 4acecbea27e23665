"""A "server" that answers every JSON-RPC line with something that is not JSON-RPC."""

import sys

for _line in sys.stdin:
    sys.stdout.write("this is not JSON-RPC {\n")
    sys.stdout.flush()
