"""The eva_airline domain: its 15 tools, their LLM schemas and the gold call lists (tools.md)."""
