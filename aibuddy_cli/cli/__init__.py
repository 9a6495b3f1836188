"""Command-line layer: parse, call a service, render. Kept free of imports so the fast path stays lean."""
