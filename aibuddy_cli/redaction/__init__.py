"""Credential-shaped values: one detector (detect.py) over a maintained provider catalogue
(catalog.py) and context rules for what has no shape (rules.py); `aibuddy scan` and the pre-commit
hook over a vault's files (scan.py)."""
