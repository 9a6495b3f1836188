"""A coding agent's own sessions feeding aibuddy: Claude Code's hook events (claude_code.py) and
aibuddy's hooks merged into its settings (settings.py)."""
