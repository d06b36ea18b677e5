"""The MCP server: the tracker's questions as tools an assistant can call (Model Context Protocol).

A consumer at the API's level: the same request schemas (api.routes.*), the same service functions
(tracker.market.service, tracker.estimate.service, tracker.plan.service, …) and the same error bodies.
`build_server` makes the server; `gpu-tracker mcp` runs it over stdio, or over streamable HTTP behind
the API's bearer token (api.mcp.http).
"""

from api.mcp.server import TOOLS, build_server

__all__ = ["TOOLS", "build_server"]
