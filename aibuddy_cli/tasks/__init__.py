"""Task scope: a goal and the knowledge documents attached to it."""
