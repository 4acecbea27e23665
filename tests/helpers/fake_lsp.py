"""Pieces of the small language servers the LSP tests run (Python scripts speaking LSP over
stdio): a script imports ``json`` and ``sys``, sets up what it needs, then continues
:data:`MESSAGE_LOOP` with its own ``if method == ...`` branches (indented four spaces) and ends
with :data:`SHUTDOWN`."""

#: ``send(message)``, and a loop reading one framed message into ``message`` and ``method``
MESSAGE_LOOP = r"""
stdin, stdout = sys.stdin.buffer, sys.stdout.buffer

def send(message):
    body = json.dumps(message).encode()
    stdout.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stdout.flush()

while True:
    length = 0
    while True:
        line = stdin.readline()
        if not line:
            sys.exit(0)
        if not line.strip():
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    message = json.loads(stdin.read(length))
    method = message.get("method")
"""

#: the last branches: answer ``shutdown``, leave at ``exit``
SHUTDOWN = r"""
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": message["id"], "result": None})
    elif method == "exit":
        sys.exit(0)
"""
