"""Where the vault's bytes live: the narrow Store the services write through and its filesystem
implementation (files.py), PostgreSQL (postgres.py), a team vault's two roots as one (composed.py),
locks and the server's write-behind (locks.py), the derived SQLite caches' base (cache_db.py), and
what changed in a folder (folder_watch.py; the watch process, watchd.py, and a command's half
of it, watch_client.py)."""
