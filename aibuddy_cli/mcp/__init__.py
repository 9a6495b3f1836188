"""The MCP front end: the server and its tools (server.py), resources and prompts (resources.py),
stdio that answers every line (stdio.py) and streamable HTTP with bearer tokens (http.py)."""
