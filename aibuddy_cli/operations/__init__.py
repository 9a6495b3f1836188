"""The registry of operations (registry.py) and the modules that declare them, one a group."""
