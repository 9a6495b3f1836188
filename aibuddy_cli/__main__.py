"""Entry point: `aibuddy` and `python -m aibuddy_cli`."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    from . import fastpath

    code = fastpath.run(args, sys.stdout, sys.stderr)
    if code is not None:
        return code
    from .cli.app import app

    return app(args=args, prog_name="aibuddy", standalone_mode=True) or 0


if __name__ == "__main__":
    sys.exit(main())
