"""The MCP face of the search engine: six tools for AI agents, and what they answer.

Modules: server (the tools, `build_server`), views (a search's or a node's answer:
a text for the model and a lean structured twin), reading_views (the same for the
reading tools, `context` and `outline`), http (the streamable HTTP transport). The
web reader, its JSON API and the CLI print the same views, so every face answers
alike; the engine (`search/` outside `mcp/` and `web/`) imports none of this.
"""
