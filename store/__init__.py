"""PostgreSQL: embedded server, pool, migrations, sidecar loading, keyword backends.

Its own package (DESIGN §2 lists five) because the indexer, the push pipeline
and search all use it and none of them should own it.
"""
