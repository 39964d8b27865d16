"""The web reader (HTML pages for people) and the HTTP JSON API, over `search/`.

Modules: app (the routes and the one boundary: read policy, errors, security
headers), pages (the HTML pages), api (the JSON API: the MCP tools' structured
content), reading (what a reading page shows, anchors that survive an edit),
markdown (book text → inert HTML, the query's words marked), access (read policy,
login sessions, CSRF), params (query strings → typed arguments). Templates
(Jinja2, autoescape on) and the static files (CSS, the jobs page's script) sit
beside them. `glossator/routes.py` mounts `search.web.reader.WebReader(...).routes()`.
"""
