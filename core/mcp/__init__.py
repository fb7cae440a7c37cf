"""The MCP server: launch swarms from other tools (start / status / result / cancel)."""
