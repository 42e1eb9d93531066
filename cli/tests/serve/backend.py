"""A small MCP stdio server (plain JSON-RPC lines, standard library only)
that the serve tests put behind `exthost serve`, for what the real servers
cannot be made to do on demand.

Tools: `pid` (its process id), `slow` (a progress notification every 50 ms
until cancelled or 200 steps; a `notifications/cancelled` for it is
appended to the file named by argv[1]), `change` (switches to a second tool
set and sends `notifications/tools/list_changed`), `crash` (exits at once).
"""

import json
import os
import sys
import threading
import time

LOG = sys.argv[1] if len(sys.argv) > 1 else os.devnull
lock = threading.Lock()
cancelled = set()
tool_set = ["pid", "slow", "change", "crash"]


def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def tool(name):
    return {
        "name": name,
        "description": f"The fixture's {name} tool.",
        "inputSchema": {"type": "object", "properties": {}},
    }


def text(value):
    return {"content": [{"type": "text", "text": str(value)}], "isError": False}


def slow(request_id, token):
    for step in range(200):
        if request_id in cancelled:
            return
        if token is not None:
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": token, "progress": step, "total": 200,
                             "message": f"step {step}"}})
        time.sleep(0.05)
    send({"jsonrpc": "2.0", "id": request_id, "result": text("done")})


for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    request_id = message.get("id")
    params = message.get("params") or {}
    if request_id is None:
        if method == "notifications/cancelled":
            cancelled.add(params.get("requestId"))
            with open(LOG, "a") as log:
                log.write(json.dumps(params.get("requestId")) + "\n")
        continue
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {"listChanged": True}},
                  "serverInfo": {"name": "serve-test-backend", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [tool(name) for name in tool_set]}
    elif method == "ping":
        result = {}
    elif method == "tools/call":
        name = params.get("name")
        token = (params.get("_meta") or {}).get("progressToken")
        if name == "pid":
            result = text(os.getpid())
        elif name == "slow":
            threading.Thread(target=slow, args=(request_id, token), daemon=True).start()
            continue
        elif name == "change":
            tool_set = ["pid", "slow", "change", "crash", "added"]
            send({"jsonrpc": "2.0", "id": request_id, "result": text("changed")})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            continue
        elif name == "crash":
            os._exit(7)
        else:
            result = text(name)
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32601, "message": f"unknown method {method}"}})
        continue
    send({"jsonrpc": "2.0", "id": request_id, "result": result})
