"""The daemon, its typed client, the model's tools and the MCP server (issue 4)."""
