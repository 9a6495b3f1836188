"""aibuddy: long-term memory and reviewed knowledge for AI assistants, kept in a plain folder."""

__version__ = "0.1.0"

