"""Task files merged by the git driver: the message log by content (the shared side's numbers
stay, the other side's new messages are numbered on), task.json field by field with the log it
counts, the watermark and the compaction cache whole from the shared side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..git.merging import ABSENT, CONFLICT, Merged, read_text, settle, three_way


def merged_task_file(name: str, base: Path, current: Path, other: Path, replay: bool) -> Merged | None:
    if name == "messages.jsonl":
        return _merged_log(base, current, other, replay)
    if name == "task.json":
        return _merged_task(base, current, other, replay)
    if name in ("consolidation.json", "summary.json"):
        # The consolidation watermark and the compaction cache: the shared side's, whole. Its message
        # numbers did not move; the other side's may have, so its watermark could claim messages no
        # pass saw (the renumbered side's progress is redone; the watermark itself is checked
        # against the log, see tasks.consolidation.watermark). The cache is remade when the
        # messages it covers differ.
        text = read_text(current if replay else other)
        return None if text is None else Merged(text)
    return None


def _log(path: Path) -> list[dict[str, Any]] | None:
    """A message log's lines as JSON objects with a whole message number "n"; None otherwise."""
    import json

    text = read_text(path)
    if text is None:
        return None
    lines = []
    for line in text.split("\n"):  # not splitlines(): a message may hold U+2028 and its kin
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            return None
        if not isinstance(message, dict) or not isinstance(message.get("n"), int):
            return None
        lines.append(message)
    return lines


def _merged_log(base: Path, current: Path, other: Path, replay: bool) -> Merged | None:
    """A task's message log by content (a message is its line without its number): the shared
    side's messages as they are, then the other side's new ones (in neither the base nor the
    shared side), numbered on from the shared side's last. A rebase replaying a message already
    replayed does not add it twice."""
    import json
    from collections import Counter

    logs = [_log(path) for path in (base, current, other)]
    if logs[0] is None or logs[1] is None or logs[2] is None:
        return None
    old, ours, theirs = logs[0], logs[1], logs[2]
    kept, moved = (ours, theirs) if replay else (theirs, ours)

    def content(message: dict[str, Any]) -> str:
        return json.dumps({k: v for k, v in message.items() if k != "n"}, ensure_ascii=False, sort_keys=True)

    there = Counter(map(content, kept)) | Counter(map(content, old))
    number = max((message["n"] for message in kept), default=0)
    lines = [json.dumps(message, ensure_ascii=False) for message in kept]
    for message in moved:
        seen = content(message)
        if there[seen] > 0:
            there[seen] -= 1
            continue
        number += 1
        lines.append(json.dumps({**message, "n": number}, ensure_ascii=False))
    return Merged("".join(f"{line}\n" for line in lines))


def _merged_task(base: Path, current: Path, other: Path, replay: bool) -> Merged | None:
    """task.json, with the message log it counts (`_merged_log`): `messages` counts both sides'
    new messages, `in_use` is that of the latest one (the renumbered side's, when it added any),
    `recalled` is the union (the smaller message number, the renumbered side's numbers moved on
    as its messages were), a status both sides changed is the one further along (closed, done,
    blocked, open: the task is closed if either side closed it), attachments one side added or
    removed are added or removed, and every other field is three-way. Two different plans stay a
    conflict (git is told so) that keeps the file readable: the plan holds both, between git's
    markers, until a plan is set. Any other real disagreement (two goals) is left to git."""
    import json

    from .service import STATUSES, _count

    texts = [read_text(path) for path in (base, current, other)]
    try:
        old, ours, theirs = (json.loads(text) if text and text.strip() else {} for text in texts)
    except ValueError:
        return None
    if not (isinstance(old, dict) and isinstance(ours, dict) and isinstance(theirs, dict)) or not ours:
        return None
    kept, moved = (ours, theirs) if replay else (theirs, ours)
    before, ahead, behind = (_count(side.get("messages")) for side in (old, kept, moved))
    before = before or 0
    merged = dict(kept)
    clean = True
    for key in dict.fromkeys([*kept, *moved]):
        value = three_way(old.get(key, ABSENT), kept.get(key, ABSENT), moved.get(key, ABSENT))
        if key == "messages":
            value = None if ahead is None or behind is None else max(ahead, behind, ahead + behind - before)
        elif key == "in_use":
            if behind is not None and behind > before:
                value = moved.get(key)
            elif value is CONFLICT:
                value = kept.get(key)
        elif key == "recalled" and isinstance(kept.get(key), dict) and isinstance(moved.get(key), dict):
            shift = max((ahead or before) - before, 0)
            value = dict(kept[key])
            for record, at in moved[key].items():
                at = at + shift if isinstance(at, int) and at > before else at
                mine = value.get(record)
                value[record] = (
                    at
                    if mine is None or (isinstance(at, int) and isinstance(mine, int) and at < mine)
                    else mine
                )
        elif key == "status" and value is CONFLICT:
            known = [status for status in (kept.get(key), moved.get(key)) if status in STATUSES]
            value = max(known, key=STATUSES.index) if known else "closed"  # the one further along
        elif key == "plan" and value is CONFLICT and all(_plan(side.get(key)) for side in (ours, theirs)):
            value, clean = _both_plans(ours.get(key), theirs.get(key)), False
        elif key == "attached" and all(_references(side.get(key)) for side in (kept, moved)):
            was = old[key] if _references(old.get(key)) else []
            value = [ref for ref in kept[key] if ref in moved[key] or ref not in was]
            value += [ref for ref in moved[key] if ref not in kept[key] and ref not in was]
        if not settle(merged, key, value):
            return None
    return Merged(json.dumps(merged, ensure_ascii=False, indent=2) + "\n", clean)


def _references(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(ref, str) for ref in value)


def _plan(value: Any) -> bool:
    """A plan as task.json keeps it: text, or null for none."""
    return value is None or isinstance(value, str)


def _both_plans(ours: str | None, theirs: str | None) -> str:
    """Both plans between git's markers, ours (%A) above, theirs (%B) below, as git writes them."""
    above, below = (f"{plan}\n" if plan else "" for plan in (ours, theirs))
    return f"<<<<<<< ours\n{above}=======\n{below}>>>>>>> theirs"
