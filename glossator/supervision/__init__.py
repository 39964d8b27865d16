"""What `glossator serve` starts, watches and stops beside its app.

- `lifespan.py`: the order of start-up and shut-down (the database and its watch, the
  repositories' hooks, the indexing, the MCP session manager): the app's `lifespan=`.
- `database.py`: the database watched, the embedded PostgreSQL started again when it dies.
- `indexing_modes.py`: which indexing the server runs (`serve_indexing`): the worker as a
  supervised child, the same service in a thread, or none.
- `worker_process.py`: the indexing worker as a child process, restarted when it dies;
  the child's side of the bargain (never outlive the server) is
  `glossator.worker.die_with_parent`.
- `search_first.py`: that child stopped while searches run (`SearchFirst`), so that a
  search meets no job on the cores.

The app itself (routes, handlers) is `glossator/server.py` and `glossator/routes.py`;
none of this runs before the app's lifespan starts.
"""
