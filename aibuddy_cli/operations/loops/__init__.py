"""The model loops whose tools are operations of the registry: the natural-language table
operations (tables.py, their tools: table_tools.py) and `kb ask` (kb_ask.py)."""
