"""Knowledge tables: typed rows kept as CSV beside a schema, queried through a derived SQLite table."""
