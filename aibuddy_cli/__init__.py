"""aibuddy: long-term memory and reviewed knowledge for AI assistants, kept in a plain folder."""

__version__ = "0.1.0"

# Set by the `aibuddy` entry point: its model calls go through the model worker (worker.py), so a
# shell loop pays litellm's import once. Library callers call models in-process.
use_worker = False
