"""The MCP front end: the server and its tools (server.py), resources and prompts (resources.py),
stdio that answers every line (stdio.py), streamable HTTP with bearer tokens (http.py), and
the entry each MCP client's configuration takes to start it (clients.py)."""
