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

    try:
        return app(args=args, prog_name="aibuddy", standalone_mode=False) or 0
    except Exception as error:
        # Typer's usage errors (unknown option, missing argument, bad value): shown as usual on
        # stderr, and with --json also as the documented error document on stdout.
        show, exit_code = getattr(error, "show", None), getattr(error, "exit_code", None)
        if show is None or not isinstance(exit_code, int):
            if type(error).__name__ == "Abort":
                print("Aborted!", file=sys.stderr)
                return 1
            raise
        if "--json" in args:
            from .cli.output import emit_json

            message = " ".join(str(error.format_message()).split())  # type: ignore[attr-defined]
            emit_json({"error": {"code": "usage", "message": message}})
        show()
        return exit_code


if __name__ == "__main__":
    sys.exit(main())
