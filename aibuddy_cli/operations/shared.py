"""Arguments several groups' operations take, declared once."""

from __future__ import annotations

from typing import Annotated

from ..inputs import Transcript, read_transcript_file
from .registry import Opt

TranscriptFile = Annotated[
    Transcript,
    Opt(
        "--transcript",
        help="A JSONL transcript (Claude Code, Codex or OpenAI chat), at most 8 MiB ('-' reads stdin).",
        cli_type=str,
        parse=read_transcript_file,
    ),
]
