//! One MCP server session.
