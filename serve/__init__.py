"""mnemos serve: the HTTP API, the memory page and the MCP tools, over the Python client."""
