"""Drives `exthost serve --expose catalog` with the official Python MCP SDK
client through resource subscriptions across a backend's restart, for
cli/tests/serve_resubscribe.rs.

usage: resubscribe.py STEPS_JSON COMMAND [ARG...]

Runs the steps (a JSON list) against `COMMAND ARG...` and prints one JSON
object: what each step observed, and the URI of every
`notifications/resources/updated` the client got, in arrival order.

Steps:
- {"op": "subscribe" | "unsubscribe" | "read", "uri": U};
- {"op": "procs", "dir": D}: the pids of the processes running in D;
- {"op": "kill", "dir": D}: SIGKILL them, then wait until they are reaped;
- {"op": "stopped", "tool": T}: wait until `search_tools` says T's backend
  is not started (serve has seen its process end);
- {"op": "call", "name": T, "args": {...}}: `call_tool` T;
- {"op": "updated", "uri": U}: wait until an update of U has arrived.

Every step is bounded ("timeout", 60 s by default): a wedge fails it.
"""

import json
import os
import signal
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# The process table helper of the other driver beside this one.
from client import processes_in

UPDATED = "notifications/resources/updated"


class Updates:
    """The URIs of the resource updates the client got, in arrival order."""

    def __init__(self):
        self.uris = []
        self.changed = anyio.Event()

    async def on_message(self, message):
        if getattr(message, "method", None) == UPDATED:
            self.uris.append(message.params.uri)
            self.changed.set()
            self.changed = anyio.Event()

    async def wait_for(self, uri):
        while uri not in self.uris:
            await self.changed.wait()


def text_of(result):
    return "".join(getattr(block, "text", "") or "" for block in result.content)


async def run(steps, command, args):
    updates = Updates()
    observed = []
    params = StdioServerParameters(command=command, args=args)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=updates.on_message) as session:
            await session.initialize()
            for step in steps:
                try:
                    with anyio.fail_after(step.get("timeout", 60)):
                        observed.append(await one(session, updates, step))
                except Exception as e:  # a JSON-RPC error answer, or the bound
                    error = getattr(e, "error", None)
                    observed.append({
                        "op": step["op"], "rpcError": repr(e),
                        "code": getattr(error, "code", None) if error is not None else None,
                        "data": getattr(error, "data", None) if error is not None else None,
                    })
    return {"steps": observed, "updates": updates.uris}


async def one(session, updates, step):
    op = step["op"]
    if op == "subscribe":
        await session.subscribe_resource(step["uri"])
        return {"op": op, "ok": True}
    if op == "unsubscribe":
        await session.unsubscribe_resource(step["uri"])
        return {"op": op, "ok": True}
    if op == "read":
        result = await session.read_resource(step["uri"])
        return {"op": op, "uris": [c.uri for c in result.contents]}
    if op == "procs":
        return {"op": op, "pids": processes_in(os.path.realpath(step["dir"]))}
    if op == "kill":
        pids = processes_in(os.path.realpath(step["dir"]))
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        # serve reaps its children: gone from the table, not even a zombie.
        while any(os.path.exists(f"/proc/{pid}") for pid in pids):
            await anyio.sleep(0.05)
        return {"op": op, "pids": pids}
    if op == "stopped":
        # search_tools reports whether a tool's backend runs: serve has
        # seen the killed process end once it says false, so the next
        # request meets an exited child, not a dying one.
        while True:
            result = await session.call_tool("search_tools", {"query": step["tool"]})
            found = [t for t in result.structured_content["tools"] if t["name"] == step["tool"]]
            if found and not found[0]["started"]:
                return {"op": op, "ok": True}
            await anyio.sleep(0.05)
    if op == "call":
        result = await session.call_tool(
            "call_tool", {"name": step["name"], "arguments": step.get("args", {})})
        return {"op": op, "isError": bool(result.is_error), "text": text_of(result)}
    if op == "updated":
        await updates.wait_for(step["uri"])
        return {"op": op, "seen": list(updates.uris)}
    raise ValueError(f"unknown step {op!r}")


def main():
    steps = json.loads(sys.argv[1])
    report = anyio.run(run, steps, sys.argv[2], sys.argv[3:])
    print(json.dumps(report))


if __name__ == "__main__":
    main()
