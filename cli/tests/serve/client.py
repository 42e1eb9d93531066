"""Drives `exthost serve` with the official Python MCP SDK (a real client
nobody here wrote), for cli/tests/serve.rs.

usage: client.py EXTHOST DIR STEPS_JSON [SERVE_ARG...]

Runs the steps (a JSON list) in order against `EXTHOST serve DIR
SERVE_ARG...` and prints one JSON object: what each step observed, then,
after the client closed the server's stdin, the processes left.
"""

import json
import os
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def processes_in(directory):
    """Processes whose working directory is `directory` or below it."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd == directory or cwd.startswith(directory + "/"):
            found.append(int(pid))
    return found


def result_json(result):
    text = "".join(getattr(block, "text", "") or "" for block in result.content)
    return {
        "isError": bool(result.is_error),
        "text": text,
        "structured": result.structured_content,
        "content": [block.model_dump(mode="json", exclude_none=True) for block in result.content],
    }


async def run(exthost, directory, steps, serve_args):
    list_changed = anyio.Event()
    observed = []

    async def on_message(message):
        name = type(getattr(message, "root", message)).__name__
        if "ToolListChanged" in name:
            list_changed.set()

    params = StdioServerParameters(command=exthost, args=["serve", directory, *serve_args])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            observed.append({"op": "initialize", "listChanged": bool(
                init.capabilities.tools and init.capabilities.tools.list_changed)})
            for step in steps:
                observed.append(await one(session, step, list_changed))
    # The client closed serve's stdin and waited for it to exit.
    deadline = time.monotonic() + 10
    left = processes_in(directory)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = processes_in(directory)
    return {"steps": observed, "left": left}


async def one(session, step, list_changed):
    op = step["op"]
    if op == "list":
        result = await session.list_tools()
        dumped = json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True))
        return {"op": op, "names": [t.name for t in result.tools], "bytes": len(dumped),
                "tools": {t.name: {"description": t.description, "inputSchema": t.input_schema}
                          for t in result.tools}}
    if op == "procs":
        return {"op": op, "counts": {d: len(processes_in(d)) for d in step["dirs"]}}
    if op == "call":
        try:
            result = await session.call_tool(step["name"], step.get("args", {}))
        except Exception as e:  # a JSON-RPC error answer
            error = getattr(e, "error", None)
            return {"op": op, "rpcError": str(e),
                    "data": getattr(error, "data", None) if error is not None else None}
        return {"op": op, **result_json(result)}
    if op == "concurrent":
        results = [None] * len(step["calls"])

        async def call(i, c):
            results[i] = result_json(await session.call_tool(c["name"], c.get("args", {})))

        async with anyio.create_task_group() as group:
            for i, c in enumerate(step["calls"]):
                group.start_soon(call, i, c)
        return {"op": op, "results": results}
    if op == "cancel":
        progress = []
        enough = anyio.Event()
        outcome = {}

        async def on_progress(value, total, message):
            progress.append(value)
            if len(progress) >= step.get("after_progress", 3):
                enough.set()

        async with anyio.create_task_group() as group:
            async def call():
                with anyio.CancelScope() as scope:
                    outcome["scope"] = scope
                    await session.call_tool(step["name"], step.get("args", {}),
                                            progress_callback=on_progress)
                    outcome["finished"] = True
            group.start_soon(call)
            with anyio.fail_after(step.get("timeout", 20)):
                await enough.wait()
            outcome["scope"].cancel()
        return {"op": op, "progress": len(progress), "finished": outcome.get("finished", False)}
    if op == "wait_list_changed":
        try:
            with anyio.fail_after(step.get("timeout", 10)):
                await list_changed.wait()
            return {"op": op, "seen": True}
        except TimeoutError:
            return {"op": op, "seen": False}
    if op == "wait_procs":
        # Polls until every folder has `count` processes or the time is up.
        with anyio.move_on_after(step.get("timeout", 30)):
            while not all(len(processes_in(d)) == step["count"] for d in step["dirs"]):
                await anyio.sleep(0.05)
        return {"op": op, "counts": {d: len(processes_in(d)) for d in step["dirs"]}}
    if op == "sleep":
        await anyio.sleep(step["seconds"])
        return {"op": op}
    raise ValueError(f"unknown step {op!r}")


def main():
    exthost, directory, steps = sys.argv[1], os.path.realpath(sys.argv[2]), json.loads(sys.argv[3])
    report = anyio.run(run, exthost, directory, steps, sys.argv[4:])
    print(json.dumps(report))


if __name__ == "__main__":
    main()
