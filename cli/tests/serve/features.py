"""Drives an MCP server with the official Python MCP SDK (a real client
nobody here wrote) through prompts, resources, argument completion and
the client features a server may use (sampling, roots, elicitation), for
cli/tests/serve_offered.rs.

usage: features.py CAPABLE STEPS_JSON COMMAND [ARG...]

CAPABLE is "capable" (the client declares sampling, roots and
elicitation, each answered by a callback below) or "bare" (none). Runs the
steps (a JSON list) against `COMMAND ARG...` and prints one JSON object:
what each step observed, and what each callback was asked.
"""

import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp import types

# The process table helper of the other driver beside this one.
from client import processes_in

ROOT = "file:///tmp/exthost-test-root"


def dump(value):
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run(capable, steps, command, args):
    asked = {"sampling": [], "roots": 0, "elicitation": []}

    async def sampling(context, params):
        asked["sampling"].append(dump(params))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled by the test client"),
            model="test-model",
            stop_reason="endTurn",
        )

    async def roots(context):
        asked["roots"] += 1
        return types.ListRootsResult(roots=[types.Root(uri=ROOT, name="test root")])

    async def elicitation(context, params):
        asked["elicitation"].append(dump(params))
        return types.ElicitResult(action="decline")

    callbacks = (
        {"sampling_callback": sampling, "list_roots_callback": roots,
         "elicitation_callback": elicitation}
        if capable else {}
    )
    observed = []
    params = StdioServerParameters(command=command, args=args)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, **callbacks) as session:
            init = await session.initialize()
            observed.append({"op": "initialize", "capabilities": dump(init.capabilities)})
            for step in steps:
                try:
                    with anyio.fail_after(step.get("timeout", 60)):
                        observed.append(await one(session, step))
                except Exception as e:  # a JSON-RPC error answer
                    error = getattr(e, "error", None)
                    observed.append({
                        "op": step["op"], "rpcError": str(e),
                        "code": getattr(error, "code", None) if error is not None else None,
                        "data": getattr(error, "data", None) if error is not None else None,
                    })
    return {"steps": observed, "asked": asked}


async def one(session, step):
    op = step["op"]
    if op == "procs":
        return {"op": op, "count": len(processes_in(os.path.realpath(step["dir"])))}
    if op == "prompts":
        return {"op": op, "prompts": [dump(p) for p in (await session.list_prompts()).prompts]}
    if op == "resources":
        return {"op": op, "resources": [dump(r) for r in (await session.list_resources()).resources]}
    if op == "templates":
        result = await session.list_resource_templates()
        return {"op": op, "templates": [dump(t) for t in result.resource_templates]}
    if op == "prompt":
        return {"op": op, "result": dump(await session.get_prompt(step["name"], step.get("args")))}
    if op == "read":
        return {"op": op, "result": dump(await session.read_resource(step["uri"]))}
    if op == "subscribe":
        await session.subscribe_resource(step["uri"])
        await session.unsubscribe_resource(step["uri"])
        return {"op": op, "ok": True}
    if op == "complete":
        ref = (types.PromptReference(type="ref/prompt", name=step["prompt"])
               if "prompt" in step
               else types.ResourceTemplateReference(type="ref/resource", uri=step["template"]))
        result = await session.complete(ref, step["argument"], step.get("context"))
        return {"op": op, "result": dump(result)}
    if op == "tools":
        return {"op": op, "names": [t.name for t in (await session.list_tools()).tools]}
    if op == "call":
        result = await session.call_tool(step["name"], step.get("args", {}))
        text = "".join(getattr(block, "text", "") or "" for block in result.content)
        return {"op": op, "isError": bool(result.is_error), "text": text}
    raise ValueError(f"unknown step {op!r}")


def main():
    capable, steps = sys.argv[1] == "capable", json.loads(sys.argv[2])
    report = anyio.run(run, capable, steps, sys.argv[3], sys.argv[4:])
    print(json.dumps(report))


if __name__ == "__main__":
    main()
