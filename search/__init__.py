"""Queries over the store (BM25, vector, fusion, rerank, climb) and the MCP server."""
